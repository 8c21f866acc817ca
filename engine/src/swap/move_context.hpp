// What moving a swapped buffer needs besides the buffer itself: the device and the mover, the
// spare events copies are ordered and timed with, the door for host waits, the marks after work
// that may read a host copy, the side streams and
// the learner whose link meter times copies on them, the joins that order a copy out after the
// program's streams, the counts, and the verify hooks. The swap policy (swap_adaptor.cpp) owns
// each of them and hands this one bundle to the parts that move buffers (swap_out.hpp,
// swap_in.hpp, frees.hpp, schedule_applier.hpp), so none of them reaches the policy itself.
// Not thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>

#include "host_waits.hpp"
#include "memtool/engine/device.hpp"
#include "schedule_learner.hpp"
#include "spare_events.hpp"
#include "swap/counters.hpp"
#include "swap/side_streams.hpp"
#include "swap/stream_joins.hpp"
#include "swap/user_marks.hpp"
#include "swap/verify_hooks.hpp"
#include "swap_mover.hpp"

namespace memtool::engine::detail {

struct MoveContext {
  Device& device;
  SwapMover& mover;
  SpareEvents& events;               // ordering events, taken and given back
  SpareTimingEvents& timing_events;  // events timed on the GPU's clock (lateness)
  HostWaits& host_waits;             // every host wait for the GPU
  SideStreams& side_streams;         // the copies' own streams
  ScheduleLearner& learner;          // its link meter times copies while it logs
  StreamJoins& joins;                // a copy out after every stream the program used
  UserMarks& user_marks;             // where the work that may read a host copy ends
  SwapCounters& counters;
  VerifyHooks* verify;        // MEMTOOL_SWAP_VERIFY, or null
  bool remaps;                // explicit mode: a move remaps the buffer's address
  const std::uint64_t& work;  // the policy's work item counter
  const bool& in_item;        // inside before_item: `work` is not queued yet
  bool& host_waited;          // the host waited for the GPU since the last work item

  // The last work item queued before now (the one being issued is not queued yet): what a
  // checksum taken now follows (swap/verify_hooks.hpp).
  [[nodiscard]] std::uint64_t checked_after() const { return in_item ? work - 1 : work; }
};

}  // namespace memtool::engine::detail
