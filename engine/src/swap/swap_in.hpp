// Bringing one buffer back to the device: on demand (in the consumer's own stream order, before
// its work), ahead (on the swap-in side stream, the rule's), or at a schedule's trigger (on the
// swap-in stream once the program's stream has reached the trigger's item, or on the program's
// stream for save-on-cpu). Each copy back is marked with an event every user's stream waits on
// until it has arrived (b.arrival), and one ahead also with a timing event, to judge its lateness
// on the GPU's clock (lateness.hpp). Which buffer comes back, and whether there is room for it,
// is the policy's (the rule, the schedule, the budget); this part refuses only what may not move
// now: a pinned buffer, and one whose host copy work already queued may still read through its
// address (explicit mode: remapping under that work would fault or show it unwritten memory).
// Not thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>

#include "memtool/swapper/eviction_rule.hpp"
#include "swap/frees.hpp"
#include "swap/move_context.hpp"

namespace memtool::engine::detail {

class SwapIn {
 public:
  // `frees` settles what still holds device memory when a copy back on demand finds none.
  SwapIn(MoveContext& moves, DeferredFrees& frees) : moves_(moves), frees_(frees) {}
  SwapIn(const SwapIn&) = delete;
  SwapIn& operator=(const SwapIn&) = delete;

  // On demand, before work on `stream` that needs it, room made for it already: waits for work
  // that may read its host copy, and for what still holds device memory if there is none. False:
  // it stays out, read where it is (counted: swap_ins_failed).
  bool now(DevicePtr ptr, SwapBuffer& b, StreamId stream) {
    bool back = on_demand(ptr, b, stream);
    if (!back) {
      frees_.settle(true);
      back = on_demand(ptr, b, stream);
    }
    b.kept_out = false;
    if (!back) {
      ++moves_.counters.swap_ins_failed;  // read where it is
      return false;
    }
    mark_arrival(b, stream, false);
    arrived(b);
    ++moves_.counters.swap_ins_on_demand;
    return true;
  }

  // Ahead of its use, on the swap-in stream, room made for it already.
  swapper::Arrival ahead(DevicePtr ptr, SwapBuffer& b) {
    StreamId side = 0;
    if (!moves_.side_streams.in(side)) return swapper::Arrival::stop;
    if (!timed(ptr, b, side)) return swapper::Arrival::skipped;
    mark_arrival(b, side, true);
    b.kept_out = false;
    moves_.timing_events.give(b.timed_arrival);
    b.timed_arrival = moves_.timing_events.record(moves_.device, side);  // lateness on the GPU's clock
    arrived(b);
    ++moves_.counters.swap_ins_ahead;
    return swapper::Arrival::back;
  }

  // A schedule's copy-in of its swap `swap`, issued at the work item about to be queued on
  // `stream`, room made for it already: on the swap-in stream once `stream` has reached this item
  // (the plan's time, not when the host gets here, which may be far ahead of the GPU), or on
  // `stream` itself with `on_program_stream` (save-on-cpu). False: not brought back now.
  bool scheduled(DevicePtr ptr, SwapBuffer& b, StreamId stream, bool on_program_stream, std::uint32_t swap) {
    StreamId on = stream;
    if (!on_program_stream) {
      if (!moves_.side_streams.in(on)) return false;
      bool ok = false;
      const EventId e = moves_.events.take(moves_.device, ok);
      if (!ok) return false;
      const bool ordered =
          moves_.device.record_event(e, stream) == kSuccess && moves_.device.stream_wait_event(on, e) == kSuccess;
      moves_.events.give(e);
      if (!ordered) return false;
    }
    if (!timed(ptr, b, on)) return false;
    mark_arrival(b, on, true);
    b.scheduled_in = swap + 1;
    moves_.timing_events.give(b.timed_arrival);
    b.timed_arrival = moves_.timing_events.record(moves_.device, on);
    arrived(b);
    ++moves_.counters.swap_ins_scheduled;
    return true;
  }

  // A buffer that is out comes back on `stream` (false: it stays out for now). Work that may read
  // its host copy must have run first: waited for with `wait_users`, else it stays out this time.
  // `watch` is told around its copy (SwapMover::move_in).
  bool move_back(DevicePtr ptr, SwapBuffer& b, StreamId stream, bool wait_users, CopyWatch& watch = CopyWatch::none()) {
    if (b.pinned || !mapped_users_done(b, wait_users)) return false;
    const bool copies = copies_back(b);
    if (moves_.verify != nullptr && copies) moves_.verify->coming_back(ptr, b, moves_.checked_after());
    if (!moves_.mover.move_in(ptr, b, stream, watch)) return false;
    if (moves_.verify != nullptr && copies) moves_.verify->arrived(ptr, b, stream, moves_.checked_after());
    b.digest_valid = false;
    return true;
  }

 private:
  // Work queued on b's streams while it was out may read its host copy through its address:
  // remapping under it would fault, or show it device memory not yet written. True once that work
  // has run (with `wait`, after waiting for it; a stall): per stream, up to the mark after its
  // last such item (user_marks.hpp), else all work queued there so far.
  bool mapped_users_done(SwapBuffer& b, bool wait) {
    if (!moves_.remaps || b.resident || b.leaving) return true;
    bool waited = false;
    for (const StreamId s : b.streams) {
      const UserMarks::Reach reach = moves_.user_marks.reached(b, s, wait, moves_.host_waits, waited);
      if (reach == UserMarks::Reach::not_yet) return false;
      if (reach == UserMarks::Reach::done) continue;
      bool ok = false;
      const EventId e = moves_.events.take(moves_.device, ok);
      if (!ok || moves_.device.record_event(e, s) != kSuccess) {
        if (ok) moves_.events.give(e);
        return false;
      }
      const bool done = moves_.host_waits.reached(e, wait);
      moves_.events.give(e);
      if (!done) return false;
      waited = waited || wait;
    }
    if (waited) moves_.host_waited = true;
    UserMarks::forget(b);
    return true;
  }

  // On demand: the host waits for b's users if need be; the link meter times the copy alone
  // (side_streams.hpp).
  bool on_demand(DevicePtr ptr, SwapBuffer& b, StreamId stream) {
    return SideStreams::metered(moves_.learner, LinkMeter::Direction::to_device, b.size, copies_back(b),
                                [&](CopyWatch& watch) { return move_back(ptr, b, stream, true, watch); });
  }

  // Whether bringing it back copies its bytes: not while its copy out is under way (its device
  // memory is kept), nor when no work has written it where the mover leaves such buffers without
  // a copy (SwapMover::copies_blank).
  [[nodiscard]] bool copies_back(const SwapBuffer& b) const {
    return !b.leaving && (!b.blank || moves_.mover.copies_blank());
  }

  bool timed(DevicePtr ptr, SwapBuffer& b, StreamId stream) {
    return SideStreams::timed_copy(moves_.learner, LinkMeter::Direction::to_device, b.size, copies_back(b),
                                   [&](CopyWatch& watch) { return move_back(ptr, b, stream, false, watch); });
  }

  // The copy back was queued on `stream`: users on other streams wait for it (before_item).
  void mark_arrival(SwapBuffer& b, StreamId stream, bool ahead) {
    if (b.arrival_pending) moves_.events.give(b.arrival);
    bool ok = false;
    const EventId e = moves_.events.take(moves_.device, ok);
    b.arrival_pending = ok && moves_.device.record_event(e, stream) == kSuccess;
    if (b.arrival_pending) {
      b.arrival = e;
      b.arrival_ahead = ahead;
    } else if (ok) {
      moves_.events.give(e);
    }
  }

  void arrived(SwapBuffer& b) {
    moves_.counters.off_host(b.size);
    moves_.counters.bytes_swapped_in += b.size;
  }

  MoveContext& moves_;
  DeferredFrees& frees_;
};

}  // namespace memtool::engine::detail
