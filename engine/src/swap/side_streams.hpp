// The swap's own streams and the timing of the copies on them: copies out run on one side stream
// and copies back on another, each created on first use, so the program's streams never wait for
// a copy and each direction queues only behind its own; while an iteration is learned, a copy on
// either is timed for the link meter (link_meter.hpp), which prices the planner's copies. A copy
// on the program's stream (save-on-cpu) is not timed: it queues behind the program's work. The
// host time each copy's move takes is the policy's cost per copy (swap/host_costs.hpp). Not
// thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>

#include "link_meter.hpp"
#include "memtool/engine/device.hpp"
#include "schedule_learner.hpp"

namespace memtool::engine::detail {

class SideStreams {
 public:
  explicit SideStreams(Device& device) : device_(device) {}
  SideStreams(const SideStreams&) = delete;
  SideStreams& operator=(const SideStreams&) = delete;

  // The copy-out stream in `out`, or the copy-back stream (false: it could not be created).
  bool out(StreamId& out) { return make(out_, out); }
  bool in(StreamId& out) { return make(in_, out); }

  // `move` queues a copy of `bytes` on `stream` (false: none was queued), timed for the learner's
  // link meter while it logs an iteration and `stream` is a side stream; `copies` false: the move
  // needs no copy.
  template <class Move>
  bool timed_copy(ScheduleLearner& learner, LinkMeter::Direction direction, StreamId stream, std::uint64_t bytes,
                  bool copies, Move&& move) const {
    const bool metered = copies && learner.logging() && stream != 0 && (stream == out_ || stream == in_);
    EventId start = metered ? learner.meter().start(direction, stream) : 0;
    bool moved = false;
    {
      const HostCostMeter::Scope cost = learner.meter().host_costs().copy(copies);
      moved = move();
    }
    if (!moved) {
      learner.meter().abandon(start);
      return false;
    }
    learner.meter().finish(start, direction, stream, bytes);
    return true;
  }

 private:
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
};

}  // namespace memtool::engine::detail
