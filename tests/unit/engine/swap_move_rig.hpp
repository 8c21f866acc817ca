// What the swap policy owns and hands to its parts that move buffers (engine/src/swap/:
// move_context.hpp, frees.hpp, swap_out.hpp, swap_in.hpp), built over a test's device: the
// swap tests' rigs derive from it and add what their parts need beside it.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "swap/frees.hpp"
#include "swap/move_context.hpp"
#include "swap/swap_in.hpp"
#include "swap/swap_out.hpp"

namespace memtool::engine::test {

template <class TestDevice>
struct SwapMoveRig {
  TestDevice device;
  detail::SpareEvents events;
  detail::SpareTimingEvents timing;
  detail::HostWaits waits{device};
  std::unique_ptr<detail::SwapMover> mover;
  detail::SideStreams sides{device};
  detail::ScheduleLearner learner;
  detail::StreamJoins joins{device, events};
  detail::UserMarks marks{device, events};
  detail::SwapCounters counters;
  std::uint64_t work = 0;
  bool in_item = false;
  bool host_waited = false;
  detail::MoveContext moves;
  detail::DeferredFrees frees{moves};
  detail::SwapOut out{moves};
  detail::SwapIn in{moves, frees};
  std::map<DevicePtr, detail::SwapBuffer> buffers;  // node-based, as the policy's: the mover keeps pointers
  StreamId program = 0;

  // `uvm`: managed memory moved by prefetches, else explicit VMM copies; `policy` names the
  // learner's logs; the rest builds the device.
  template <class... DeviceArgs>
  explicit SwapMoveRig(bool uvm, std::string policy, DeviceArgs&&... device_args)
      : device(std::forward<DeviceArgs>(device_args)...),
        mover(uvm ? detail::make_uvm_mover(device, events, waits) : detail::make_vmm_mover(device, events, waits, 0)),
        learner{device, timing, std::move(policy), 0, ""},
        moves{device, *mover,   events,  timing, waits, sides,   learner,    joins,
              marks,  counters, nullptr, !uvm,   work,  in_item, host_waited} {
    REQUIRE(mover != nullptr);
    REQUIRE(device.create_stream(&program) == kSuccess);
    joins.note(program);
  }
  SwapMoveRig(const SwapMoveRig&) = delete;
  SwapMoveRig& operator=(const SwapMoveRig&) = delete;
};

}  // namespace memtool::engine::test
