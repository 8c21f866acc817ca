// Events kept to be recorded again: creating one per pooled free or per swap would cost a driver
// call on the hot path. An event may be recorded again once the waits on it are enqueued (they
// capture its state). Not thread-safe: its owner's lock guards it.
#pragma once

#include <vector>

#include "memtool/engine/device.hpp"

namespace memtool::engine::detail {

struct SpareEvents {
  std::vector<EventId> spare;

  // A spare event, else a new one; `ok` false when the device could not create one.
  EventId take(Device& device, bool& ok) {
    if (!spare.empty()) {
      const EventId e = spare.back();
      spare.pop_back();
      ok = true;
      return e;
    }
    EventId e = 0;
    ok = device.create_event(&e) == kSuccess;
    return e;
  }
  void give(EventId e) { spare.push_back(e); }
  void destroy_all(Device& device) {
    for (const EventId e : spare) device.destroy_event(e);
    spare.clear();
  }
};

// The same for timing events (cuEventCreate without DISABLE_TIMING): the op timer's and the
// swap schedule's lateness checks share one. `supported` turns false for good the first time the
// device cannot make one.
struct SpareTimingEvents {
  std::vector<EventId> spare;
  bool supported = true;

  // A timing event recorded on `stream` now; 0 when there is none to be had.
  EventId record(Device& device, StreamId stream) {
    if (!supported) return 0;
    EventId e = 0;
    if (!spare.empty()) {
      e = spare.back();
      spare.pop_back();
    } else if (device.create_timing_event(&e) != kSuccess) {
      supported = false;
      return 0;
    }
    if (device.record_event(e, stream) != kSuccess) {
      spare.push_back(e);
      return 0;
    }
    return e;
  }
  // Back to the spares (0: nothing); `e` is 0 afterwards.
  void give(EventId& e) {
    if (e != 0) spare.push_back(e);
    e = 0;
  }
  void destroy_all(Device& device) {
    for (const EventId e : spare) device.destroy_event(e);
    spare.clear();
  }
};

}  // namespace memtool::engine::detail
