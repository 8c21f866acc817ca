// HostDelay: a call that kept the host in memtool long enough for the GPU to drain its queue (a
// wait, or fresh device memory mapped and faulted in) flags the next work item: its learned GPU
// time starts at its issue, so that idle is not taken for the program's own (op_timer.hpp).
// Used under the swap policy's lock (the flag is the lock's).
#pragma once

#include <chrono>

namespace memtool::engine::detail {

class HostDelay {
 public:
  // Longer than this in memtool, and the GPU may have run out of queued work meanwhile.
  static constexpr std::chrono::microseconds kLong{50};

  explicit HostDelay(bool& flag) : flag_(flag), start_(std::chrono::steady_clock::now()) {}
  ~HostDelay() { flag_ = flag_ || long_since(start_); }
  HostDelay(const HostDelay&) = delete;
  HostDelay& operator=(const HostDelay&) = delete;
  static bool long_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::steady_clock::now() - start > kLong;
  }

 private:
  bool& flag_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace memtool::engine::detail
