// SwapVerifier: MEMTOOL_SWAP_VERIFY=1, a program check for swapping. Every buffer is checksummed
// when it leaves the device and when it comes back; a buffer whose bytes changed where no work
// memtool saw could have changed them is said, in the log and the summary, with the last launch
// that could have (the culprit is a kernel that reaches it through memory memtool cannot read:
// docs/swapping.md). Three moments:
//  - leaving: once the copy out has landed, before the address is remapped to the host copy,
//    the device bytes must equal the copy (else something wrote them after the copy read them:
//    the remap would lose that write, so the buffer stays on the device);
//  - out: just before it comes back, the host copy must still be what left (else something
//    wrote it through its address while out: right then, but memtool did not see the access);
//  - coming back: once the copy back has landed, the device bytes must equal the host copy.
// Slow by design: each checksum reads the buffer back to the host and waits for it.
// Called with the swap policy's lock held.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/engine/device.hpp"

namespace memtool::engine::detail {

class SwapVerifier {
 public:
  explicit SwapVerifier(Device& device) : device_(device) {}
  SwapVerifier(const SwapVerifier&) = delete;
  SwapVerifier& operator=(const SwapVerifier&) = delete;
  ~SwapVerifier();

  // A launch of `kernel` on `stream` is work item `work`.
  void launched(std::uint64_t work, std::string_view kernel, StreamId stream);

  // The checksum of `bytes` bytes at device address `at`, read now; false if it cannot be read.
  bool checksum(DevicePtr at, std::uint64_t bytes, std::uint64_t* out);

  // `where` the buffer at `ptr` changed behind memtool's back; `since`: the work item of its last
  // good checksum; `now`: the item being issued (not a suspect).
  void mismatch(DevicePtr ptr, std::uint64_t size, std::uint64_t id, std::string_view where, std::uint64_t since,
                std::uint64_t now);

  [[nodiscard]] std::uint64_t checks() const { return checks_; }
  [[nodiscard]] std::uint64_t mismatches() const { return mismatches_; }
  [[nodiscard]] const std::string& first_mismatch() const { return first_; }

  // Mismatches said one by one; after that only counted.
  static constexpr std::uint64_t kMaxReported = 16;
  // Launches remembered to name a culprit.
  static constexpr std::size_t kRecentLaunches = 256;

 private:
  struct Launch {
    std::uint64_t work = 0;
    std::string kernel;
    StreamId stream = 0;
  };

  Device& device_;
  StreamId stream_ = 0;  // its own, for the reads
  std::vector<unsigned char> scratch_;
  std::vector<Launch> recent_;  // a ring
  std::size_t next_ = 0;
  std::uint64_t checks_ = 0;
  std::uint64_t mismatches_ = 0;
  std::string first_;
};

}  // namespace memtool::engine::detail
