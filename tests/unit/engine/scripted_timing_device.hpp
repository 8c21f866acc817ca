// A device for timing tests: each event recorded takes the next time of a script (ns), as a GPU
// would stamp it, and events complete once the test says the GPU has caught up.
#pragma once

#include <deque>
#include <map>
#include <utility>

#include "memtool/engine/device.hpp"

namespace memtool::engine::test {

class ScriptedTimingDevice final : public Device {
 public:
  explicit ScriptedTimingDevice(std::deque<double> times = {}, bool caught_up = false)
      : script(std::move(times)), caught_up_(caught_up) {}
  Status allocate(std::uint64_t, MemoryKind, StreamId, DevicePtr*) override { return kNotSupported; }
  Status free(DevicePtr, MemoryKind, StreamId) override { return kNotSupported; }
  Status create_event(EventId* out) override {
    *out = ++next_;
    return kSuccess;
  }
  Status create_timing_event(EventId* out) override { return create_event(out); }
  Status record_event(EventId event, StreamId) override {
    if (script.empty()) return kNotSupported;
    stamp_[event] = script.front();
    script.pop_front();
    return kSuccess;
  }
  Status stream_wait_event(StreamId, EventId) override { return kSuccess; }
  bool event_completed(EventId) override { return caught_up_; }
  void destroy_event(EventId event) override { stamp_.erase(event); }
  Status elapsed_ns(EventId start, EventId end, double* out) override {
    *out = stamp_.at(end) - stamp_.at(start);
    return kSuccess;
  }

  std::deque<double> script;  // the times the next events recorded take
  bool caught_up_ = false;

 private:
  std::map<EventId, double> stamp_;
  EventId next_ = 0;
};

}  // namespace memtool::engine::test
