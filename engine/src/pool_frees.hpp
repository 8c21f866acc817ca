// The frees into the driver's stream-ordered pools that the GPU may not have reached yet. A pool
// takes a cuMemFreeAsync's memory back only when the free's stream gets there; until then no
// trim (cuMemPoolTrimTo) can give it back, so it stays on the device and counts against a
// budget. One event a stream, recorded again after each of that stream's frees (stream order
// reaches its earlier frees first), so that a budget with nothing else to free can wait on the
// host for them, then trim. A stream the program destroyed keeps its event until it completed.
// The frees noted are every stream-ordered free of pooled memory that reaches the driver through
// the resource that owns this (device_resource.cpp): the program's, and memtool's own (a budget's
// refused request, budget_limit.cpp). The host time those waits take is a stall (stall_ns).
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "host_waits.hpp"
#include "memtool/engine/device.hpp"
#include "spare_events.hpp"

namespace memtool::engine::detail {

class PoolFrees {
 public:
  explicit PoolFrees(Device& device) : device_(device) {}
  PoolFrees(const PoolFrees&) = delete;
  PoolFrees& operator=(const PoolFrees&) = delete;
  ~PoolFrees() {
    std::lock_guard lock(mutex_);
    for (const auto& [stream, event] : marks_) events_.give(event);
    events_.destroy_all(device_);
  }

  // A free into a pool was just queued on `stream`. Without an event (none to be had, or the
  // stream cannot be recorded on now) the free is not waited for: the budget may pass, nothing
  // else changes.
  void freed_on(StreamId stream) {
    std::lock_guard lock(mutex_);
    if (marks_.size() >= kMostStreams) forget_reached();
    const auto it = marks_.find(stream);
    if (it != marks_.end()) {
      (void)device_.record_event(it->second, stream);  // a failed record keeps the older mark
      return;
    }
    bool ok = false;
    const EventId e = events_.take(device_, ok);
    if (!ok) return;
    if (device_.record_event(e, stream) != kSuccess) {
      events_.give(e);
      return;
    }
    marks_.emplace(stream, e);
  }

  // Waits on the host until the GPU has reached every free noted so far, where the host may wait
  // (HostWaits: not while a stream waits for a value). False when one was not reached.
  bool reach() {
    std::vector<EventId> marks;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [stream, event] : marks_) marks.push_back(event);
    }
    HostWaits waits(device_);
    bool all = true;
    for (const EventId e : marks) all = waits.wait(e) && all;
    stall_ns_.fetch_add(waits.stall_ns(), std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    forget_reached();
    return all;
  }

  // Host time reach() has waited for the GPU so far: the budget's stall (the summary's stall_ns).
  [[nodiscard]] std::uint64_t stall_ns() const { return stall_ns_.load(std::memory_order_relaxed); }

 private:
  // Streams tracked before those whose frees were reached are forgotten (a program that makes a
  // stream per step would grow the map).
  static constexpr std::size_t kMostStreams = 64;

  void forget_reached() {
    std::erase_if(marks_, [&](const auto& mark) {
      if (!device_.event_completed(mark.second)) return false;
      events_.give(mark.second);
      return true;
    });
  }

  Device& device_;
  std::mutex mutex_;
  std::unordered_map<StreamId, EventId> marks_;  // stream → event recorded after its latest free
  SpareEvents events_;
  std::atomic<std::uint64_t> stall_ns_{0};
};

}  // namespace memtool::engine::detail
