// The resources and adaptors strategies are stacked from (resource.hpp for the interface).
//
//   DeviceResource  the real allocator: Device::allocate / free, nothing added (record mode's
//                   whole stack); optionally counts the bytes it holds (for a budget).
//   PlannedPool     the planned pool (the paper's SmartPool, done right): at a boundary it
//                   takes the observer's window of the last complete iteration, plans it off
//                   the calling thread, and from a later boundary on serves the k-th allocation
//                   of each iteration from the pool, with the occupancy check of every hand-out
//                   (invariant 1) and stream-ordered reuse (invariant 2); anything else goes to
//                   its upstream (it is an Adaptor). See planned_pool.cpp for the state machine.
//   FailOpen        the first exception out of its primary stack disables it (logged once):
//                   new allocations go to the fallback (a DeviceResource), frees still reach
//                   the primary so pooled buffers return to their pool (DESIGN.md invariant 4).
//   Statistics      counts calls, failures and the peak of what its upstream reserves.
//   SwapAdaptor     MEMTOOL_STRATEGY=swap: large allocations are backed so they can move (VMM
//                   with explicit copies to pinned host memory, or managed memory), idle ones
//                   go to the host and come back before use, so the device bytes stay within
//                   the budget (swap_adaptor.cpp, swap_mover.hpp).
//   BudgetLimit     keeps what its upstream reserves within a budget: an allocation that would
//                   pass it first makes the upstream reclaim what it can, then is refused with
//                   kOutOfMemory, as the driver refuses memory it does not have.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "memtool/engine/resource.hpp"
#include "memtool/planner/placement.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::engine {

std::unique_ptr<Resource> make_device_resource(Device& device, bool count_bytes = false);

// Replaces the planner (tests inject wrong plans; invariant 1 must still hold).
using PlanFunction = std::function<planner::Placement(const trace::Problem&)>;

struct PoolOptions {
  std::string algorithm = "best";        // planner registry name
  double plan_time_limit_seconds = 4.0;  // the planner stops earlier when it reaches the lower bound
  bool synchronous_planning = false;     // plan on the calling thread (deterministic tests)
  // The most the program waits, in all, at step boundaries for a plan being made on the planner
  // thread (MEMTOOL_POOL_PLAN_WAIT): a plan not ready at its boundary serves a whole step later.
  // As long as the default planning budget: never longer than planning on the calling thread.
  // 0: never wait; a plan serves from the first boundary after it is ready.
  double plan_wait_seconds = 4.0;
  bool validate_plan = true;                    // reject a plan planner::validate finds invalid
  PlanFunction plan_override;                   // used instead of `algorithm` when set
  double drift_miss_fraction = 0.05;            // misses in one iteration above this fraction: drop
  std::uint64_t drift_min_misses = 2;           // ... and at least this many (one stray call is noise)
  std::uint64_t drift_consecutive_misses = 16;  // or this many misses in a row: drop
  std::uint64_t lookahead = 4;                  // entries skipped to re-synchronise after a dropped allocation
  std::uint32_t max_pool_alloc_failures = 3;    // then the pool disables itself (fail open)
};

// The planner's function-local statics (its registry, heuristic tables) are built by their first
// use. Built first on the planner thread, they would be registered for destruction after the
// caller's exit handler and so destroyed before it — while a plan may still be running. Call
// this before registering one (libmemtool.so does, at start-up): one tiny plan builds them.
void prepare_planner(const PoolOptions& options);

// `feedback` (may be null) hears when a plan's period was wrong or the program changed.
std::unique_ptr<Resource> make_planned_pool(Device& device, std::unique_ptr<Resource> upstream, PoolOptions options,
                                            PeriodFeedback* feedback);

// MEMTOOL_STRATEGY=swap.
enum class SwapMechanism : std::uint8_t {
  explicit_copies,  // VMM: device memory released, host copy mapped at the same address
  uvm,              // managed memory, moved by prefetches
};
struct SwapOptions {
  // uvm by default: any access, seen or not, reads the right bytes. explicit falls back to uvm
  // where VMM cannot map host memory.
  SwapMechanism mode = SwapMechanism::uvm;
  std::uint64_t budget_bytes = 0;      // device bytes the stack may hold (0: no budget, nothing moves)
  std::uint64_t min_bytes = 1 << 20;   // smaller allocations stay device memory
  std::uint64_t host_limit_bytes = 0;  // most bytes on the host at once (0: no limit)
  std::uint64_t lookahead = 16;        // work items ahead a swap-in is started
  // Who decides what moves when: "belady" (the policy's own rule, below) or a swapper strategy
  // (memtool/swapper/plan.hpp: ours, paper-doa, ..., save-on-cpu) planned on one observed
  // iteration and applied from then on, with the rule as the safety net.
  std::string policy = "ours";
  // Host link per direction, for the plan (0: timed from the copies made while learning).
  std::uint64_t link_bytes_per_second = 0;
  // MEMTOOL_SWAP_DUMP: where each planning problem (the learned iteration, link and budget:
  // memtool/swapper/problem.hpp) is written for `memtool simulate`; empty: nowhere.
  std::string problem_path;
  // Ours' schedule, if its first iterations are slower than the rule's, gives way to the rule
  // (host time per iteration; off for tests whose iterations are too short to time). The
  // paper's strategies and save-on-cpu are baselines: their schedules apply as published.
  bool schedule_trial = true;
  // The selector's (swap/selector.hpp) one margin and one window: how much slower than its
  // target a schedule or the rule alone may run before it counts as slower (MEMTOOL_SWAP_MARGIN),
  // and how many iterations each figure is taken from, the first not counted (MEMTOOL_SWAP_WINDOW).
  double selector_margin = 0.03;
  std::uint32_t selector_window = 3;
  // MEMTOOL_SWAP_HOST_TIMES: plan with the program's host times per work item (the simulator's
  // host on its own timeline); off: as a program whose host is never ahead of the GPU.
  bool host_times = false;
  // With no budget given, the budget is the device's free memory less this (MEMTOOL_SWAP_RESERVE):
  // room for what the driver takes on its own (launches' local memory, modules, graphs).
  std::uint64_t reserve_bytes = std::uint64_t{256} << 20;
  // MEMTOOL_SWAP_VERIFY: checksum every buffer as it leaves the device and as it comes back
  // (swap_verify.hpp); a mismatch is said with the last launch that could have caused it.
  bool verify = false;
};

// Swap candidates moved on the schedule the last iteration's uses give (swap_adaptor.cpp).
std::unique_ptr<Resource> make_swap(Device& device, std::unique_ptr<Resource> upstream, const SwapOptions& options);

std::unique_ptr<Resource> make_fail_open(std::unique_ptr<Resource> primary, std::unique_ptr<Resource> fallback);
std::unique_ptr<Resource> make_statistics(std::unique_ptr<Resource> upstream);
std::unique_ptr<Resource> make_budget_limit(std::unique_ptr<Resource> upstream, std::uint64_t budget_bytes);

}  // namespace memtool::engine
