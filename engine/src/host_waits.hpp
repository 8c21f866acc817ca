// HostWaits: the one door through which the swapper (swap_adaptor.cpp, its movers and the
// small-block cache under it, small_cache.cpp) waits on the host for the GPU, its own waits
// (cuEventSynchronize) and the driver calls that wait for it (cuMemFree synchronises the device). A stream may wait for a value (cuStreamWaitValue*) that
// work the program has not issued yet will write; the program's thread would issue it once the
// call memtool is serving returns, so a host wait for work queued after that stream's wait may
// never end. While such a wait may be pending (Device::host_wait_may_block) every wait here is
// refused, and each caller takes its stream-ordered alternative or its documented fallback
// (docs/swapping.md, "Host waits while a stream waits for a value").
// Not thread-safe: used under the swap policy's lock (the small cache makes one per call).
#pragma once

#include <chrono>
#include <cstdint>

#include "memtool/engine/device.hpp"

namespace memtool::engine::detail {

class HostWaits {
 public:
  explicit HostWaits(Device& device) : device_(device) {}

  // Whether the host may wait for the GPU now (no stream waits for a value that may not be
  // written yet).
  bool allowed() { return !device_.host_wait_may_block(); }

  // True once `event` has completed: polled, then waited for (a stall, counted) where allowed.
  // False: it has not completed and the host may not wait (a refusal, counted), or the wait failed.
  bool wait(EventId event) {
    if (device_.event_completed(event)) return true;
    if (!allowed()) {
      ++refused_;
      return false;
    }
    const auto start = std::chrono::steady_clock::now();
    const Status status = device_.synchronize_event(event);
    stall_ns_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    return status == kSuccess;
  }

  // Polled; with `wait`, waited for as wait() does.
  bool reached(EventId event, bool wait) { return wait ? this->wait(event) : device_.event_completed(event); }

  [[nodiscard]] std::uint64_t stall_ns() const { return stall_ns_; }  // host time spent waiting
  [[nodiscard]] std::uint64_t refused() const { return refused_; }    // waits not made for a pending value wait

 private:
  Device& device_;
  std::uint64_t stall_ns_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace memtool::engine::detail
