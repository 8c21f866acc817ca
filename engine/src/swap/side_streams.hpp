// The swap's own streams and the timing of the copies: copies out run on one side stream and copies
// back on another, and the program's synchronous frees are ordered on a third, each created on
// first use, so the program's streams never wait for a copy, each direction's stream queues only
// behind its own, and a free's memory is not held behind copies out of other buffers; while an
// iteration is learned, every swap copy is timed for the link meter (link_meter.hpp), which prices
// the planner's copies: on the side streams and on the program's (a copy back on demand,
// save-on-cpu), since a direction's copies on all streams take turns on its copy engine and the
// meter tells a copy's wait for the engine from its own time only when it sees them all. The host
// time each copy's move takes is the policy's cost per copy (swap/host_costs.hpp); the timing
// starts right before the mover queues the copy (CopyWatch, swap_mover.hpp), so that the link's
// latency does not count that host work again. Not thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>

#include "link_meter.hpp"
#include "memtool/engine/device.hpp"
#include "schedule_learner.hpp"
#include "swap_mover.hpp"

namespace memtool::engine::detail {

class SideStreams {
 public:
  explicit SideStreams(Device& device) : device_(device) {}
  SideStreams(const SideStreams&) = delete;
  SideStreams& operator=(const SideStreams&) = delete;

  // The copy-out stream in `out`, the copy-back stream, or the frees' (false: it could not be created).
  bool out(StreamId& out) { return make(out_, out); }
  bool in(StreamId& out) { return make(in_, out); }
  bool frees(StreamId& out) { return make(frees_, out); }

  // `move(watch)` queues a copy of `bytes` (false: none was queued), timed for the learner's link
  // meter while it logs an iteration, its host time the policy's cost per copy; `copies` false:
  // the move needs no copy. The mover tells `watch` right around the copy's queueing
  // (SwapMover::move_out, move_in): its timing holds none of the mover's host work.
  template <class Move>
  static bool timed_copy(ScheduleLearner& learner, LinkMeter::Direction direction, std::uint64_t bytes, bool copies,
                         Move&& move) {
    return metered(learner, direction, bytes, copies, [&](CopyWatch& watch) {
      const HostCostMeter::Scope cost = learner.meter().host_costs().copy(copies);
      return move(watch);
    });
  }

  // The same, timed only: a copy back on demand, whose host time is its work item's.
  template <class Move>
  static bool metered(ScheduleLearner& learner, LinkMeter::Direction direction, std::uint64_t bytes, bool copies,
                      Move&& move) {
    if (!copies || !learner.logging()) return move(CopyWatch::none());
    Timing timing(learner.meter(), direction, bytes);
    return move(timing);
  }

 private:
  // One copy's timing: a start event on its stream right before it is queued, the end right after
  // (LinkMeter::start, finish); a start whose copy was then not queued goes back to the spares.
  class Timing final : public CopyWatch {
   public:
    Timing(LinkMeter& meter, LinkMeter::Direction direction, std::uint64_t bytes)
        : meter_(meter), direction_(direction), bytes_(bytes) {}
    ~Timing() { meter_.abandon(start_); }
    Timing(const Timing&) = delete;
    Timing& operator=(const Timing&) = delete;

    void queuing(StreamId stream) override {
      meter_.abandon(start_);
      start_ = meter_.start(direction_, stream);
    }
    void queued(StreamId stream) override {
      meter_.finish(start_, direction_, stream, bytes_);
      start_ = 0;
    }

   private:
    LinkMeter& meter_;
    LinkMeter::Direction direction_;
    std::uint64_t bytes_;
    EventId start_ = 0;
  };

  bool make(StreamId& slot, StreamId& out) {
    if (slot == 0 && device_.create_stream(&slot) != kSuccess) {
      slot = 0;
      return false;
    }
    out = slot;
    return true;
  }

  Device& device_;
  StreamId out_ = 0;
  StreamId in_ = 0;
  StreamId frees_ = 0;
};

}  // namespace memtool::engine::detail
