// The work items still being issued, one per thread: a work item's buffers are issued by the real
// call only after the swap policy's before_work returns, so until the same thread calls in again
// (its calls are sequential) the item is not queued, and what it touches must stay on the device
// (another thread's eviction would otherwise record its "last use" event before that work is
// queued). What it may reach besides its arguments (WorkItem's pointer tables) is kept still too;
// only the calling thread's own item may still see such a buffer leave, at once, before it is
// queued (issuing: `reached`). Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memtool/engine/device.hpp"

namespace memtool::engine::detail {

// A thread's last work item, until the thread calls in again (then it is queued).
struct InFlight {
  std::vector<DevicePtr> bases;    // what it touches
  std::vector<DevicePtr> reached;  // what it may reach
  bool all = false;                // it may reach anything
  StreamId stream = 0;             // where it is queued
};

class InFlightItems {
 public:
  // The calling thread issues a new work item on `stream` (its previous one is queued by now):
  // the caller fills in what it touches and may reach.
  InFlight& begin(StreamId stream) {
    InFlight& item = items_[std::this_thread::get_id()];
    item.bases.clear();
    item.all = false;
    item.stream = stream;
    return item;
  }
  // The calling thread's last work item is queued.
  void queued() { items_.erase(std::this_thread::get_id()); }
  // The calling thread's item still being issued, or null.
  [[nodiscard]] const InFlight* mine() const {
    const auto it = items_.find(std::this_thread::get_id());
    return it != items_.end() ? &it->second : nullptr;
  }

  // Whether an item still being issued touches the buffer or may reach it. `reached`: only the
  // calling thread's item may reach it, and that item is queued after this call returns, so the
  // buffer may still leave if it is gone before then (the rule's `at_once`); another thread's item
  // may be queued any time: `touched`.
  enum class Issuing : std::uint8_t { no, reached, touched };
  [[nodiscard]] Issuing issuing(DevicePtr ptr) const {
    const std::thread::id self = std::this_thread::get_id();
    Issuing use = Issuing::no;
    for (const auto& [thread, item] : items_) {
      if (std::find(item.bases.begin(), item.bases.end(), ptr) != item.bases.end()) return Issuing::touched;
      if (item.all || std::find(item.reached.begin(), item.reached.end(), ptr) != item.reached.end()) {
        if (thread != self) return Issuing::touched;
        use = Issuing::reached;
      }
    }
    return use;
  }

 private:
  std::unordered_map<std::thread::id, InFlight> items_;  // per thread: its last work item
};

}  // namespace memtool::engine::detail
