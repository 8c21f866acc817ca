// The activity buffers the tracer lends CUPTI: all the same size, at most `cap` out at once.
// CUPTI asks for one whenever it needs room (possibly on the program's thread, inside a driver
// call), so take() is a short critical section and never waits; at the cap it answers nullptr
// and CUPTI drops records (and counts them) rather than let memory grow without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace memtool::cupti::detail {

class ActivityBuffers {
 public:
  ActivityBuffers(std::size_t bytes, std::size_t cap);  // bytes rounded up to 8 (CUPTI's alignment)
  ~ActivityBuffers();
  ActivityBuffers(const ActivityBuffers&) = delete;
  ActivityBuffers& operator=(const ActivityBuffers&) = delete;

  // A buffer of bytes() bytes, 8-byte aligned; nullptr when `cap` are out (or no memory).
  [[nodiscard]] std::uint8_t* take() noexcept;
  void give_back(std::uint8_t* buffer) noexcept;

  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t refused() const noexcept;
  [[nodiscard]] std::size_t out() const noexcept;

 private:
  const std::size_t bytes_;
  const std::size_t cap_;
  mutable std::mutex mutex_;
  std::vector<std::uint8_t*> free_;  // reserved to cap_: give_back never allocates
  std::size_t out_ = 0;
  std::size_t allocated_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace memtool::cupti::detail
