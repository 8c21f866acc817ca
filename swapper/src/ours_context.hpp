// What the parts of our strategy share (ours.cpp, ours_greedy.cpp, ours_fill.cpp): the
// candidates, a schedule under construction with its simulation, the timing helpers on that
// simulation's timeline, and the re-timing of swap-ins.
//
// Re-timing: swap-outs go right after the last access (their bytes free soonest). Swap-ins are
// re-timed together, backwards from their consumers as one FIFO engine would run them: each ends
// by its consumer's start or by the start of the swap-in after it, whichever is first, and is
// issued at the latest op that allows it (just in time, so its bytes stay off the device as long
// as possible), never before its `earliest_in`, around the iteration's cycle. What the simulation
// still finds late (copy-out traffic slowing the link, a copy-out not done) gets a lead of its
// lateness and is re-timed, twice at most.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strategies.hpp"

namespace memtool::swapper::detail {

struct Stretch {  // a stretch of the measured iteration above the target
  double begin = 0;
  double end = 0;
  std::uint64_t excess = 0;  // most bytes above the target inside it
};

struct Candidate {
  Gap gap;
  std::uint64_t size = 0;
  double out_ns = 0;  // uncontended copy times
  double in_ns = 0;
};

// A chosen swap and what re-timing must respect.
struct Planned {
  Swap swap;
  std::uint32_t candidate = 0;
  std::uint64_t earliest_in = 0;  // in_at_op >= this (memory is needed until then)
  double lead_ns = 0;             // extra time before its deadline, learnt from lateness
};

struct State {
  std::string construction = "none";  // what built it (PlanResult::construction)
  std::vector<Planned> planned;
  Schedule schedule;
  Simulation simulation;
  std::vector<double> start;  // op starts of the measured iteration, from its start
  std::uint64_t target = 0;
  double excess = 0;  // byte-time above the target, over op time
  std::vector<Stretch> over;
};

class OursContext {
 public:
  // `hold_budget`: judge schedules as the executor runs them, holding the budget
  // (SimulateOptions::hold_budget_bytes); else with their planned waits.
  OursContext(const PlanInput& input, bool hold_budget);

  const PlanInput& input;
  const std::size_t n;
  double allowance_ns = 0;  // the most stall a result may have
  double tolerance_ns = 0;  // float slack on time comparisons
  std::vector<Candidate> candidates;

  // Simulations hold the budget as the executor does (SimulateOptions::hold_budget_bytes).
  [[nodiscard]] bool holds_budget() const { return options_.hold_budget_bytes != 0; }
  // PlanOptions::max_simulations, or fewer for a long iteration (PlanOptions::max_simulated_ops).
  [[nodiscard]] std::uint32_t simulation_limit() const { return simulation_limit_; }
  [[nodiscard]] bool out_of_simulations() const { return simulations_ >= simulation_limit_; }
  [[nodiscard]] std::uint32_t simulations() const { return simulations_; }
  [[nodiscard]] bool within_allowance(const State& s) const {
    return s.simulation.stall_ns <= allowance_ns + tolerance_ns;
  }

  // Simulates the planned swaps as they are, then scores against `target`.
  void simulate(State& state, std::uint64_t target);
  // E(target) and the stretches above it.
  void rescore(State& state, std::uint64_t target) const;
  // Swap-in triggers for `planned` on the timeline of `at`.
  void retime(std::vector<Planned>& planned, const State& at);
  // Re-times on `at`'s timeline, simulates, and gives late swap-ins a lead (twice at most).
  void evaluate(State& trial, const State& at, std::uint64_t target);

  // Stick-to-limit: every swap whose copy-out is still running when its gap first goes over the
  // target makes that op wait for it (the paper's synchronisation, moved earlier), then again on
  // the new timeline (twice at most).
  void add_waits(State& trial);

  // Candidate's swap out right after its last access; holding the budget, moved past the ops
  // reaching every buffer that would skip or call off its copy (out_past_reaching_all).
  [[nodiscard]] Planned plain(std::uint32_t candidate) const;
  [[nodiscard]] std::uint64_t out_past_reaching_all(const Candidate& c) const;
  // Unrolled op `u` may reach every buffer (Op::reaches_all).
  [[nodiscard]] bool reaches_all(std::uint64_t u) const { return input.iteration.ops[u % n].reaches_all; }
  [[nodiscard]] double duration(std::size_t op) const {
    return static_cast<double>(input.iteration.ops[op].duration_ns);
  }
  [[nodiscard]] double start(const State& s, std::uint64_t u) const {
    return s.start[u % n] + static_cast<double>(u / n) * s.simulation.time_ns;
  }
  [[nodiscard]] double end(const State& s, std::uint64_t u) const { return start(s, u) + duration(u % n); }
  // The last position in [first, last] whose op starts at or before `time` (first when none).
  [[nodiscard]] std::uint64_t op_at(const State& s, double time, std::uint64_t first, std::uint64_t last) const;
  // Byte-time above the target a swap of `size` bytes could remove while out over [from, to].
  [[nodiscard]] double removable(const State& s, std::uint64_t size, double from, double to) const;
  // The first and last time above the target inside (from, to); NaN when none.
  [[nodiscard]] std::pair<double, double> over_inside(const State& s, double from, double to) const;

 private:
  SimulateOptions options_;
  Simulator simulator_;
  std::uint32_t simulations_ = 0;
  std::uint32_t simulation_limit_ = 0;
  std::vector<std::size_t> order_;
  std::vector<double> out_done_;
};

// The incremental greedy (ours_greedy.cpp): adds swaps to `state` until its peak is within the
// budget (0: as low as it goes), nothing helps, or the context has run `simulation_limit`
// simulations in all.
void greedy_improve(OursContext& context, State& state, std::uint32_t simulation_limit);

// One swap the fill chose: candidate `candidate` out of the ideal load over unrolled ops [begin, end).
struct FillPick {
  std::uint32_t candidate = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
// The fill's choices per target: they depend on the iteration and the target only, so the two
// passes of plan_ours (holding the budget, then with planned waits) choose once.
using FillMemo = std::vector<std::pair<std::uint64_t, std::vector<FillPick>>>;

// The constructive plan (ours_fill.cpp): swaps chosen on the ideal load until it is within
// `target`, then timed on `base`'s timeline (the iteration without swaps) so that the target
// holds where the link allows and stall is paid where it does not.
[[nodiscard]] State fill_to_target(OursContext& context, const State& base, std::uint64_t target, FillMemo& memo);

}  // namespace memtool::swapper::detail
