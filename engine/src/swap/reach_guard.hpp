// What a work item may reach besides its arguments (WorkItem: pointer tables) matters in explicit
// mode, where a move remaps the buffer's address: a buffer it may reach is kept still under it (a
// copy out under way is called off, a copy back waited for, a host copy it may read stays mapped
// until it has run); a buffer whose address escaped never moves again (pinned); and a copy out is
// ordered after all work queued so far on every stream, not only its users' (stream_joins.hpp).
// UVM needs none of it: the driver migrates what any access touches. Which buffers leave is the
// policy's; this part only keeps the reached ones where they are. Not thread-safe: the swap
// policy's lock.
#pragma once

#include <map>

#include "memtool/engine/resource.hpp"
#include "swap/in_flight.hpp"
#include "swap/move_context.hpp"

namespace memtool::engine::detail {

class ReachGuard {
 public:
  ReachGuard(MoveContext& moves, std::map<DevicePtr, SwapBuffer>& buffers) : moves_(moves), buffers_(buffers) {}
  ReachGuard(const ReachGuard&) = delete;
  ReachGuard& operator=(const ReachGuard&) = delete;

  // The buffers `item` may reach without touching them are kept still under it: none is chosen
  // to leave while it is issued (in_flight), and none is in motion when it runs (keep_still).
  // Buffers whose address escaped never move again (pin).
  // True when the item's stream was made to wait for a copy.
  bool keep_still_under(const WorkItem& item, InFlight& in_flight) {
    in_flight.reached.clear();
    bool waits = false;
    for (const DevicePtr base : item.escaped) waits = pin(base, item.stream) || waits;
    if (item.reaches_all) {
      in_flight.all = true;
      for (auto& [ptr, b] : buffers_) waits = keep_still(ptr, b, item.stream) || waits;
      moves_.counters.items_reaching_all += 1;
      return waits;
    }
    for (const DevicePtr base : item.reached) {
      const auto it = buffers_.find(base);
      if (it == buffers_.end()) continue;
      in_flight.reached.push_back(base);
      waits = keep_still(base, it->second, item.stream) || waits;
    }
    return waits;
  }

  // Work that may reach `b` is about to be queued on `stream`. A copy out under way may miss what
  // it writes: called off (the device memory is still mapped and true), the work queued after
  // the copy, whose bytes are dropped. A copy back under way: the work waits for it. Out: it
  // reads and writes the host copy at the address, which stays mapped until the work has run
  // (mapped_users_done, until the item's mark: user_marks.hpp). Either way its stream joins b's
  // users.
  // True when `stream` was made to wait for a copy.
  bool keep_still(DevicePtr ptr, SwapBuffer& b, StreamId stream) {
    bool waits = false;
    if (b.leaving && moves_.device.stream_wait_event(stream, b.left) == kSuccess) {
      waits = true;
      if (moves_.mover.move_in(ptr, b, stream, CopyWatch::none())) {
        moves_.counters.off_host(b.size);
        b.held_out = false;
        b.digest_valid = false;
        ++moves_.counters.leaves_called_off;
      }
    }
    if (b.arrival_pending && moves_.device.stream_wait_event(stream, b.arrival) == kSuccess) {
      ++moves_.counters.stream_waits;
      waits = true;
    }
    moves_.user_marks.user(b, stream);
    return waits;
  }

  // Its address went where memtool cannot follow (device memory it does not track): any later
  // work may reach it, so it never moves again — left where it is, once no move is under way.
  // True when `stream` (or the host) waited for a copy.
  bool pin(DevicePtr ptr, StreamId stream) {
    const auto it = buffers_.find(ptr);
    if (it == buffers_.end() || it->second.pinned) return false;
    SwapBuffer& b = it->second;
    b.pinned = true;
    ++moves_.counters.pinned;
    bool waits = b.leaving && keep_still(ptr, b, stream);
    if (b.arrival_pending) {
      // Rare: a host wait beats an unordered reader. Where the host may not wait, the escaping
      // work waits in its stream order, and every later item memtool sees touch or reach it
      // (before_item, keep_still) while the copy is pending.
      if (moves_.host_waits.wait(b.arrival)) {
        moves_.events.give(b.arrival);
        b.arrival_pending = false;
        waits = true;
      } else if (moves_.device.stream_wait_event(stream, b.arrival) == kSuccess) {
        ++moves_.counters.stream_waits;
        waits = true;
      }
    }
    return waits;
  }

 private:
  MoveContext& moves_;
  std::map<DevicePtr, SwapBuffer>& buffers_;
};

}  // namespace memtool::engine::detail
