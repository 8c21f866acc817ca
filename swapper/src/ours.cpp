// Our strategy (plan.hpp): the best of several constructions, each judged by the simulator.
//
//   1. the incremental greedy from no swaps (ours_greedy.cpp): what hides behind compute, and, in
//      stick-to-limit mode, stall-paying swaps where they remove the most byte-time per stall;
//   2. for targets from the budget (lowered by what the simulation overshoots) or, without one,
//      swept down from the peak in 2.5% steps until three in a row exceed the allowance:
//        - stick-to-limit only: the constructive fill (ours_fill.cpp),
//        - the paper's four schedules in both modes for that target, and the save-on-cpu
//          schedule, as starting points (so that ours is never worse than they are at the same
//          target and allowance; PlanResult::construction says which start won);
//      the best of them then improved by the greedy.
// The winner then takes the rule's swaps it holds the budget with, and drops each swap it is better
// without (those added later can make an earlier one needless).
// The result is the best schedule within the allowance: within the budget with the least stall,
// or, when none is, the lowest peak (then the least stall). The paper's stick-to-limit starts
// for the budget (what those strategies alone would run), whatever their peaks, are the
// runners-up (PlanResult::alternatives), least stall first; holding the budget (plan_ours, at the
// end), so is the same construction judged with planned waits.
#include <algorithm>
#include <cmath>
#include <string>

#include "ours_context.hpp"

namespace memtool::swapper::detail {
namespace {

constexpr int kBudgetTries = 3;
constexpr int kTargetSteps = 40;               // targets in 2.5% steps of the plain peak
constexpr int kMisses = 3;                     // targets beyond the allowance before the sweep stops
constexpr std::uint32_t kCompletionShare = 8;  // of the simulations, for each paper schedule completed
constexpr int kAdoptRounds = 3;                // the rule's swaps adopted, then what the rule still sends
constexpr double kAdoptSlack = 0.02;           // of the base time: what adopting them may cost

bool better(const OursContext& c, const State& a, const State& b) {
  const bool fa = c.within_allowance(a);
  const bool fb = c.within_allowance(b);
  if (fa != fb) return fa;
  const Simulation& x = a.simulation;
  const Simulation& y = b.simulation;
  const std::uint64_t budget = c.input.budget_bytes;
  if (budget != 0) {
    const bool ma = x.peak_bytes <= budget;
    const bool mb = y.peak_bytes <= budget;
    if (ma != mb) return ma;
    if (ma) return x.stall_ns != y.stall_ns ? x.stall_ns < y.stall_ns : x.peak_bytes < y.peak_bytes;
  }
  return x.peak_bytes != y.peak_bytes ? x.peak_bytes < y.peak_bytes : x.stall_ns < y.stall_ns;
}

// Another strategy's schedule as a starting point: simulated as it is; re-timing may move its
// swap-ins later than it issued them, never earlier.
State from_schedule(OursContext& context, const Schedule& schedule, const char* construction) {
  State state;
  state.construction = construction;
  for (const Swap& swap : schedule.swaps) {
    const auto& gaps = context.input.gaps;
    const auto it = std::lower_bound(gaps.begin(), gaps.end(), swap.gap, [](const Gap& a, const Gap& b) {
      return a.buffer != b.buffer ? a.buffer < b.buffer : a.from_op < b.from_op;
    });
    Planned p;
    p.swap = swap;
    p.candidate = static_cast<std::uint32_t>(it - gaps.begin());
    p.earliest_in = swap.in_at_op;
    state.planned.push_back(p);
  }
  context.simulate(state, 0);
  return state;
}

// The executor's rule's swaps in `state`'s simulation (holding the budget) made part of its
// schedule, in the gaps they fall in and at the times the rule chose, so that the schedule meets
// the budget by itself (and a pool re-planned for it holds every residency). Kept while the
// simulation says it is no slower than leaving them to the rule, by a hair.
void adopt_rule_swaps(OursContext& context, State& state) {
  const std::vector<Gap>& gaps = context.input.gaps;
  for (int round = 0; round < kAdoptRounds && !context.out_of_simulations(); ++round) {
    if (state.simulation.rule_evictions.empty()) return;
    State trial = state;
    bool changed = false;
    for (const RuleEviction& e : state.simulation.rule_evictions) {
      if (e.freed || e.kept) continue;  // past its last access (in no gap), or never away: the rule's
      auto g = std::lower_bound(gaps.begin(), gaps.end(), e.buffer,
                                [](const Gap& a, std::uint32_t b) { return a.buffer < b; });
      for (; g != gaps.end() && g->buffer == e.buffer; ++g) {
        // The eviction's op in this gap's unrolled positions: the gap may have begun an iteration before.
        const std::uint64_t shift = e.out_before_op > g->from_op ? 0 : context.n;
        const std::uint64_t x = e.out_before_op + shift;
        const std::uint64_t in = std::max(e.in_at_op + shift, x);
        if (x <= g->from_op || x >= g->to_op || in > g->to_op) continue;
        // Already on the schedule: it came back too early, and the rule sent it out again. It
        // stays out until the rule brought it back.
        const auto on = std::find_if(trial.planned.begin(), trial.planned.end(),
                                     [&](const Planned& p) { return p.swap.gap == *g; });
        if (on != trial.planned.end()) {
          if (in > on->swap.in_at_op) {
            on->swap.in_at_op = in;
            on->earliest_in = std::max(on->earliest_in, in);
            changed = true;
          }
          break;
        }
        Planned p;
        p.swap = swap_of(*g);
        p.swap.out_after_op = x - 1;
        p.swap.in_at_op = in;
        p.candidate = static_cast<std::uint32_t>(g - gaps.begin());
        p.earliest_in = in;
        trial.planned.push_back(p);
        changed = true;
        break;
      }
    }
    if (!changed) return;
    context.simulate(trial, state.target);
    const double hair = kAdoptSlack * trial.simulation.base_time_ns;
    const std::uint64_t budget = context.input.budget_bytes;
    if (trial.simulation.peak_bytes > std::max(budget, state.simulation.peak_bytes) ||
        trial.simulation.stall_ns > state.simulation.stall_ns + hair) {
      return;
    }
    trial.construction = state.construction.ends_with("+rule") ? state.construction : state.construction + "+rule";
    state = std::move(trial);
  }
}

// Holding the budget: a planned copy-out that an op reaching every buffer calls off (or whose
// trigger falls at one, which the executor skips) frees nothing and costs its link time. Its
// trigger moves to after that op (and any such op right after it) while the swap-in still follows
// it, or the swap is dropped; where moving them all is worse, they are all dropped instead. Kept
// while the simulation says the schedule is no worse, up to three rounds.
State off_reaching_all(const OursContext& context, const State& state, bool drop) {
  State trial = state;
  trial.planned.clear();
  for (std::size_t s = 0; s < state.planned.size(); ++s) {
    Planned p = state.planned[s];
    if (!state.simulation.swaps[s].stayed) {
      trial.planned.push_back(p);
      continue;
    }
    if (drop) continue;
    std::uint64_t r = p.swap.out_after_op + 1;
    while (r < p.swap.in_at_op && !context.reaches_all(r)) ++r;
    while (r + 1 < p.swap.in_at_op && context.reaches_all(r + 1)) ++r;
    if (r + 1 >= p.swap.in_at_op) continue;  // no room after it: dropped
    p.swap.out_after_op = r;
    if (p.swap.out_wait_op != kNoWait && p.swap.out_wait_op <= r) p.swap.out_wait_op = kNoWait;
    trial.planned.push_back(p);
  }
  return trial;
}

void move_off_reaching_all(OursContext& context, State& state) {
  for (int round = 0; round < kAdoptRounds && !context.out_of_simulations(); ++round) {
    const auto& swaps = state.simulation.swaps;
    if (std::none_of(swaps.begin(), swaps.end(), [](const SwapTiming& t) { return t.stayed; })) return;
    bool kept = false;
    for (const bool drop : {false, true}) {
      if (context.out_of_simulations()) break;
      State trial = off_reaching_all(context, state, drop);
      context.simulate(trial, state.target);
      if (better(context, state, trial)) continue;
      trial.construction = state.construction;
      state = std::move(trial);
      kept = true;
      break;
    }
    if (!kept) return;
  }
}

// `swap` dropped from `state` where the simulation finds the schedule better without it.
bool try_drop(OursContext& context, State& state, const Swap& swap) {
  State trial = state;
  const auto on =
      std::find_if(trial.planned.begin(), trial.planned.end(), [&](const Planned& p) { return p.swap == swap; });
  if (on == trial.planned.end()) return false;
  trial.planned.erase(on);
  context.simulate(trial, state.target);
  if (!better(context, trial, state)) return false;
  trial.construction = state.construction;
  state = std::move(trial);
  return true;
}

// The planned swaps, biggest first; with `likeliest`, those whose swap-in is issued with its
// consumer and still makes it wait (the rule's, adopted, where the rule may do better) before
// the rest.
std::vector<Swap> drop_order(const OursContext& context, const State& state, bool likeliest) {
  const auto& buffers = context.input.iteration.buffers;
  std::vector<std::pair<bool, Swap>> order;
  order.reserve(state.planned.size());
  for (std::size_t s = 0; s < state.planned.size(); ++s) {
    const Swap& swap = state.planned[s].swap;
    const bool waits = swap.in_at_op == swap.gap.to_op && state.simulation.swaps[s].lateness_ns > 0;
    order.emplace_back(likeliest && waits, swap);
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first;
    return buffers[a.second.gap.buffer].size > buffers[b.second.gap.buffer].size;
  });
  std::vector<Swap> swaps;
  swaps.reserve(order.size());
  for (const auto& [waits, swap] : order) swaps.push_back(swap);
  return swaps;
}

// Swaps made needless by those added after them (the greedy only adds, a start may bring more than
// the budget needs, and holding the budget the rule may serve a buffer better): each dropped in
// turn, biggest first, and kept out where the simulation says the schedule is better without it
// (better(): within the budget, then less stall); again while a pass drops one, within the
// simulations left (a drop can make another needless). Where a first pass does not fit in
// PlanOptions::max_drop_simulated_ops, that many are tried once, the likeliest first.
void drop_needless(OursContext& context, State& state) {
  const std::uint64_t n = std::max<std::uint64_t>(context.n, 1);
  const std::uint64_t tries = context.input.options.max_drop_simulated_ops / n;
  if (state.planned.size() > tries) {
    const std::uint32_t first = context.simulations();
    for (const Swap& swap : drop_order(context, state, true)) {
      if (context.simulations() - first >= tries || context.out_of_simulations()) return;
      try_drop(context, state, swap);
    }
    return;
  }
  bool dropped = true;
  while (dropped && !context.out_of_simulations()) {
    dropped = false;
    for (const Swap& swap : drop_order(context, state, false)) {
      if (context.out_of_simulations()) return;
      dropped = try_drop(context, state, swap) || dropped;
    }
  }
}

// Runners-up in the order the process times them: least simulated stall first, then lowest peak.
bool least_stall_first(const Simulation& x, const Simulation& y) {
  return x.stall_ns != y.stall_ns ? x.stall_ns < y.stall_ns : x.peak_bytes < y.peak_bytes;
}

PlanResult plan_once(const PlanInput& input, bool hold_budget, FillMemo& fills) {
  OursContext context(input, hold_budget);
  State base;
  context.simulate(base, 0);
  State best = base;
  const auto consider = [&](const State& s) {
    if (better(context, s, best)) best = s;
  };
  std::vector<State> paper_at_budget;  // PlanResult::alternatives
  const auto note_paper = [&](const State& s) {
    if (s.planned.empty()) return;
    for (const State& seen : paper_at_budget) {
      if (seen.schedule.swaps == s.schedule.swaps) return;
    }
    paper_at_budget.push_back(s);
  };

  // The first greedy may use a third of the simulations: the other starts need theirs.
  const std::uint32_t limit = context.simulation_limit();
  State greedy = base;
  greedy.construction = "greedy";
  greedy_improve(context, greedy, limit / 3);
  consider(greedy);

  if (context.n > 0) {
    State built = base;
    built.construction = "none";
    const auto consider_built = [&](State s) {
      if (better(context, s, built)) built = std::move(s);
    };
    const bool stall_allowed = context.allowance_ns > 0;
    // Every start for one target; true when one is within the allowance.
    const auto starts = [&](std::uint64_t target) {
      bool within = false;
      if (stall_allowed) {
        State filled = fill_to_target(context, base, target, fills);
        within = context.within_allowance(filled);
        consider_built(std::move(filled));
      }
      static constexpr std::pair<PaperScore, const char*> kPaper[] = {{PaperScore::doa, "paper-doa"},
                                                                      {PaperScore::aoa, "paper-aoa"},
                                                                      {PaperScore::wdoa, "paper-wdoa"},
                                                                      {PaperScore::vote, "paper-vote"}};
      for (const ScheduleMode mode : {ScheduleMode::no_overhead, ScheduleMode::stick_to_limit}) {
        PlanOptions paper_options = input.options;
        paper_options.mode = mode;
        const PlanInput at{input.iteration, input.link, target,        paper_options,
                           input.timeline,  input.load, input.peak_op, input.gaps};
        for (const auto& [by, name] : kPaper) {
          State seeded = from_schedule(context, paper_schedule(at, by), name);
          within = within || context.within_allowance(seeded);
          if (mode == ScheduleMode::stick_to_limit && target == input.budget_bytes) note_paper(seeded);
          consider_built(std::move(seeded));
        }
      }
      return within;
    };
    consider_built(from_schedule(context, plan_save_on_cpu(input).schedule, "save-on-cpu"));
    const std::uint64_t budget = input.budget_bytes;
    std::uint64_t target = budget;
    for (int attempt = 0; budget != 0 && attempt < kBudgetTries && !context.out_of_simulations(); ++attempt) {
      starts(target);
      const std::uint64_t peak = built.simulation.peak_bytes;
      if (peak <= budget || peak - budget >= target) break;
      target -= peak - budget;  // what the timing overshot
    }
    if (budget == 0 || built.simulation.peak_bytes > budget) {
      const double plain = static_cast<double>(base.simulation.peak_bytes);
      int misses = 0;
      for (int step = 1; step < kTargetSteps && misses < kMisses && !context.out_of_simulations(); ++step) {
        const auto t = static_cast<std::uint64_t>(plain * (1.0 - static_cast<double>(step) / kTargetSteps));
        if (budget != 0 && t < budget) break;
        misses = starts(t) ? 0 : misses + 1;
      }
    }
    // The paper's schedules for the budget that miss it, completed by the greedy: where the
    // executor holds the budget, what they leave over it is what it would have to send out.
    for (const State& paper : paper_at_budget) {
      if (context.out_of_simulations() || paper.simulation.peak_bytes <= budget) continue;
      State completed = paper;
      greedy_improve(context, completed, std::min(limit, context.simulations() + limit / kCompletionShare));
      if (completed.planned.size() == paper.planned.size()) continue;
      completed.construction += "+greedy";
      consider_built(std::move(completed));
    }
    consider(built);
    const std::size_t before = built.planned.size();
    const double stall_before = built.simulation.stall_ns;
    const std::uint64_t peak_before = built.simulation.peak_bytes;
    greedy_improve(context, built, limit);
    if (built.planned.size() != before || built.simulation.stall_ns != stall_before ||
        built.simulation.peak_bytes != peak_before) {
      built.construction += "+greedy";
    }
    consider(built);
  }

  adopt_rule_swaps(context, best);
  if (context.holds_budget()) move_off_reaching_all(context, best);
  drop_needless(context, best);
  PlanResult result;
  result.construction = best.planned.empty() ? "none" : best.construction;
  result.schedule = std::move(best.schedule);
  result.simulation = std::move(best.simulation);
  result.simulation.curve.clear();
  result.budget_met = input.budget_bytes == 0 || result.simulation.peak_bytes <= input.budget_bytes;
  result.simulations = context.simulations();
  std::stable_sort(paper_at_budget.begin(), paper_at_budget.end(),
                   [](const State& a, const State& b) { return least_stall_first(a.simulation, b.simulation); });
  for (State& s : paper_at_budget) {
    if (s.schedule.swaps == result.schedule.swaps) continue;
    s.simulation.curve.clear();
    result.alternatives.push_back({std::move(s.schedule), std::move(s.simulation), s.construction});
  }
  return result;
}

}  // namespace

// Stick-to-limit at any cost (the process's mode): the budget is a limit, and schedules are
// judged as memtool's executor runs them, holding the budget where the memory is needed, with
// its rule as the safety net. The simulator's model of that rule is close, not exact, so the
// construction judged the old way, with the schedule's planned waits and no rule, is one more
// runner-up for the process to time (where the two models disagree, the process tells). With a
// stall allowance, or no-overhead, the budget is a goal a schedule may miss: planned waits only.
PlanResult plan_ours(const PlanInput& input) {
  const bool hold = input.options.mode == ScheduleMode::stick_to_limit && std::isinf(input.options.max_slowdown) &&
                    input.budget_bytes != 0;
  FillMemo fills;
  PlanResult result = plan_once(input, hold, fills);
  if (!hold) return result;
  PlanResult waits = plan_once(input, false, fills);
  const auto same = [&](const Schedule& s) { return s.swaps == waits.schedule.swaps; };
  if (waits.schedule.swaps.empty() || same(result.schedule) ||
      std::any_of(result.alternatives.begin(), result.alternatives.end(),
                  [&](const PlanResult::Alternative& a) { return same(a.schedule); })) {
    return result;
  }
  SimulateOptions held = input.options.simulate;
  held.hold_budget_bytes = input.budget_bytes;
  Simulation simulation = simulate(input.iteration, waits.schedule, input.link, held);
  simulation.curve.clear();
  result.alternatives.push_back(
      {std::move(waits.schedule), std::move(simulation), waits.construction + " (planned waits)"});
  std::stable_sort(result.alternatives.begin(), result.alternatives.end(),
                   [](const PlanResult::Alternative& a, const PlanResult::Alternative& b) {
                     return least_stall_first(a.simulation, b.simulation);
                   });
  return result;
}

}  // namespace memtool::swapper::detail
