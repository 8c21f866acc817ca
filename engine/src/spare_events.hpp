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

}  // namespace memtool::engine::detail
