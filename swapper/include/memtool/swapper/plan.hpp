// Planning a swap schedule for a budget: the strategies by name.
//
//   paper-doa, paper-aoa, paper-wdoa, paper-vote   AutoSwap (Zhang et al. 2019) as published:
//       candidates are the gaps spanning the peak of buffers of at least 1 MiB, ranked by one
//       score (or the majority vote of the three ranks), taken greedily until the load with every
//       chosen buffer out over its whole gap is below the budget, then scheduled in the paper's
//       no-overhead or stick-to-limit mode (PlanOptions::mode). docs/swapper.md lists the
//       implementation's bugs; PlanOptions::paper_bugs reproduces them.
//   save-on-cpu   PyTorch's torch.autograd.graph.save_on_cpu: every activation saved in the
//       forward pass (a non-persistent buffer idle across the peak) is copied out on the compute
//       stream right after its last forward access and copied back on the compute stream right
//       before its first backward one. The budget plays no part.
//   ours   greedy with the simulator in the loop: candidates ranked by the over-budget
//       byte-time their zero-stall window could remove per nanosecond of link time; each is
//       simulated and kept only if the memory above the target shrinks without the peak rising
//       or the stall exceeding the allowance. Swap-outs are issued right after the last access,
//       swap-ins as late as the link allows them to arrive in time (or, paying stall within the
//       allowance, after the over-budget stretch). No-overhead mode allows no stall;
//       stick-to-limit allows PlanOptions::max_slowdown.
//
// A budget of 0 asks for the lowest peak the strategy can reach.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/schedule.hpp"
#include "memtool/swapper/simulate.hpp"

namespace memtool::swapper {

enum class ScheduleMode : std::uint8_t {
  no_overhead,     // only transfers hidden behind compute: the saving is what they give
  stick_to_limit,  // meet the budget, paying stall where transfers cannot hide
};

struct PlanOptions {
  ScheduleMode mode = ScheduleMode::no_overhead;
  // ours in stick-to-limit mode: the most stall it may pay, as a fraction of the iteration time.
  double max_slowdown = std::numeric_limits<double>::infinity();
  // paper-*: reproduce the implementation's bugs (WDOA always 0, DOA minus the swap-out time
  // twice, candidate search stopping at the first gap that crosses the iteration boundary).
  bool paper_bugs = false;
  std::uint64_t paper_min_bytes = std::uint64_t{1} << 20;  // the paper's smallest candidate
  // ours: a deterministic work limit (simulations run), never a wall-clock one.
  std::uint32_t max_simulations = 4000;
  // ours: the same limit in ops simulated (a simulation of n ops costs n): a long iteration gets
  // max_simulated_ops / n simulations when that is fewer, so that planning time grows about
  // linearly with the iteration's length. The default leaves iterations of up to 4,096 ops their
  // max_simulations (a large transformer's step of 100,000 ops gets 163).
  std::uint64_t max_simulated_ops = std::uint64_t{4000} * 4096;
  // ours: the work limit of its last step, the drop of needless swaps, in ops simulated (one
  // simulation per swap tried, each of the whole iteration, made that step grow with the swaps
  // times the ops: quadratic in a step's length). Where a first pass over every planned swap fits
  // in max_drop_simulated_ops / n simulations, the step tries them all, biggest first, again while
  // a pass drops one, within max_simulated_ops; otherwise it tries that many, the likeliest to be
  // needless first (a late swap-in issued with its consumer), then biggest first. The default
  // leaves every shared small problem (tests/unit/swapper/test_schedule_golden.cpp) its full
  // passes: the largest, lstm's at 3,565 ops with 501 swaps, needs 1,786,065; a step of 100,000
  // ops gets 20 tries.
  std::uint64_t max_drop_simulated_ops = std::uint64_t{512} * 4096;
  // ours: called after each of its simulations with how many it has run and its limit (of the
  // pass under way: holding the budget, ours plans twice), on the planning thread; for progress
  // lines offline. Empty: not called.
  std::function<void(std::uint32_t simulations, std::uint32_t limit)> progress;
  SimulateOptions simulate;
};

struct PlanResult {
  Schedule schedule;
  Simulation simulation;          // of the schedule
  bool budget_met = false;        // simulation.peak_bytes <= budget (always true for budget 0)
  std::uint32_t simulations = 0;  // how many the strategy ran
  // ours: which construction won ("greedy", "fill", "paper-doa", ..., "save-on-cpu", each
  // "+greedy" when the greedy improved it; "none": no swap helps). Others: the strategy's name.
  std::string construction;
  // ours: runners-up worth timing where simulation and execution may disagree (in the process,
  // at tight budgets, a schedule the simulator thinks misses the budget can run faster with the
  // executor's safety net than one it thinks meets it): of the paper's schedules it started
  // from, the distinct stick-to-limit ones for the budget that are not `schedule`, and, where
  // ours holds the budget as the executor does (stick-to-limit with no stall allowance), its own
  // construction judged with planned waits instead ("... (planned waits)"); least simulated
  // stall first (then lowest peak), as the executor would run them. The paper's are the
  // schedules its strategies run in the process, so timing them all lets ours keep the fastest.
  struct Alternative {
    Schedule schedule;
    Simulation simulation;     // of the schedule (its curve cleared)
    std::string construction;  // "paper-doa", ...: the first strategy that gave it
  };
  std::vector<Alternative> alternatives;
};

struct StrategyInfo {
  std::string_view name;
  std::string_view description;
};

// paper-doa, paper-aoa, paper-wdoa, paper-vote, save-on-cpu, ours.
[[nodiscard]] std::span<const StrategyInfo> strategies();
[[nodiscard]] const StrategyInfo* find_strategy(std::string_view name);

// Throws std::invalid_argument for an unknown strategy or a malformed iteration or link.
[[nodiscard]] PlanResult plan(const Iteration& iteration, const Link& link, std::uint64_t budget_bytes,
                              std::string_view strategy, const PlanOptions& options = {});

}  // namespace memtool::swapper
