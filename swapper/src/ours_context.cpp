// The shared machinery of our strategy (ours_context.hpp).
#include "ours_context.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace memtool::swapper::detail {
namespace {
constexpr int kLateFixes = 2;
constexpr int kWaitRounds = 2;
constexpr double kLeadMargin = 1.25;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}  // namespace

OursContext::OursContext(const PlanInput& in, bool hold_budget) : input(in), n(in.iteration.ops.size()) {
  options_ = in.options.simulate;
  options_.record_curve = true;
  if (hold_budget) options_.hold_budget_bytes = in.budget_bytes;
  const double base = static_cast<double>(base_time_ns(in.iteration));
  allowance_ns = in.options.mode == ScheduleMode::no_overhead ? 0.0 : in.options.max_slowdown * base;
  tolerance_ns = 1e-9 * base;
  simulation_limit_ = in.options.max_simulations;
  if (n > 0 && in.options.max_simulated_ops / n < simulation_limit_) {
    simulation_limit_ = static_cast<std::uint32_t>(in.options.max_simulated_ops / n);
  }
  for (const Gap& gap : in.gaps) {
    const std::uint64_t size = in.iteration.buffers[gap.buffer].size;
    candidates.push_back({gap, size, in.link.d2h_ns(size), in.link.h2d_ns(size)});
  }
}

void OursContext::simulate(State& state, std::uint64_t target) {
  ++simulations_;
  state.schedule.swaps.clear();
  for (const Planned& p : state.planned) state.schedule.swaps.push_back(p.swap);
  state.simulation = simulator_.run_trusted(input.iteration, state.schedule, input.link, options_);
  if (input.options.progress) input.options.progress(simulations_, simulation_limit_);
  state.start.resize(n);
  double t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    t += state.simulation.op_stall_ns[i];
    state.start[i] = t;
    t += duration(i);
  }
  rescore(state, target);
}

// E counts op time only: a stall spent at a high occupancy must not make a stall-paying swap look
// worse (the peak check guards the stalls).
void OursContext::rescore(State& state, std::uint64_t target) const {
  const Simulation& sim = state.simulation;
  state.target = target;
  state.excess = 0;
  state.over.clear();
  std::size_t op = 0;
  for (std::size_t k = 0; k < sim.curve.size(); ++k) {
    const double begin = sim.curve[k].time_ns;
    const double end = k + 1 < sim.curve.size() ? sim.curve[k + 1].time_ns : sim.time_ns;
    const std::uint64_t bytes = sim.curve[k].bytes;
    if (bytes <= target || end <= begin) continue;
    const std::uint64_t excess = bytes - target;
    while (op < n && state.start[op] + duration(op) <= begin) ++op;
    // Holding the budget, ops wait at high occupancy only while the budget is missed: that
    // time counts too, or the greedy would see nothing left to remove there.
    double busy = end - begin;
    if (!holds_budget()) {
      busy = 0;
      for (std::size_t i = op; i < n && state.start[i] < end; ++i) {
        busy += std::max(0.0, std::min(end, state.start[i] + duration(i)) - std::max(begin, state.start[i]));
      }
    }
    state.excess += static_cast<double>(excess) * busy;
    if (!state.over.empty() && state.over.back().end == begin) {
      state.over.back().end = end;
      state.over.back().excess = std::max(state.over.back().excess, excess);
    } else {
      state.over.push_back({begin, end, excess});
    }
  }
}

std::uint64_t OursContext::op_at(const State& s, double time, std::uint64_t first, std::uint64_t last) const {
  if (start(s, first) > time) return first;
  while (first < last) {
    const std::uint64_t mid = first + (last - first + 1) / 2;
    if (start(s, mid) <= time)
      first = mid;
    else
      last = mid - 1;
  }
  return first;
}

double OursContext::removable(const State& s, std::uint64_t size, double from, double to) const {
  double total = 0;
  const double period = s.simulation.time_ns;
  for (int shift = 0; shift < 3 && from < to; ++shift) {
    for (const Stretch& stretch : s.over) {
      const double overlap = std::min(to, stretch.end) - std::max(from, stretch.begin);
      if (overlap > 0) total += overlap * static_cast<double>(std::min(size, stretch.excess));
    }
    from -= period;
    to -= period;
  }
  return total;
}

std::pair<double, double> OursContext::over_inside(const State& s, double from, double to) const {
  double first = std::nan("");
  double last = std::nan("");
  const double period = s.simulation.time_ns;
  for (int shift = 0; shift < 3; ++shift) {
    const double offset = shift * period;
    for (const Stretch& stretch : s.over) {
      const double b = std::max(from, stretch.begin + offset);
      const double e = std::min(to, stretch.end + offset);
      if (e <= b) continue;
      if (std::isnan(first) || b < first) first = b;
      if (std::isnan(last) || e > last) last = e;
    }
  }
  return {first, last};
}

Planned OursContext::plain(std::uint32_t candidate) const {
  Planned p;
  p.swap = swap_of(candidates[candidate].gap);
  p.candidate = candidate;
  if (holds_budget()) p.swap.out_after_op = out_past_reaching_all(candidates[candidate]);
  return p;
}

// The executor skips a copy-out due at an op reaching every buffer and calls off one still under
// way at such an op: the trigger moves after each such op met while the copy would run (on the
// base timeline, uncontended), as long as the swap-in may still follow it by an op.
std::uint64_t OursContext::out_past_reaching_all(const Candidate& c) const {
  const Gap& gap = c.gap;
  std::uint64_t out = gap.from_op;
  for (;;) {
    const double done = input.timeline.end(out) + c.out_ns;
    std::uint64_t r = out + 1;
    while (r < gap.to_op && !reaches_all(r) && input.timeline.start(r) < done) ++r;
    if (r + 1 >= gap.to_op || !reaches_all(r)) return out;
    out = r;
  }
}

void OursContext::retime(std::vector<Planned>& planned, const State& at) {
  const std::size_t count = planned.size();
  if (count == 0) return;
  // Copy-outs in issue order on one engine: when each is done, uncontended.
  order_.resize(count);
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::sort(order_.begin(), order_.end(),
            [&](std::size_t a, std::size_t b) { return planned[a].swap.out_after_op < planned[b].swap.out_after_op; });
  out_done_.resize(count);
  double engine_free = -kInfinity;
  for (const std::size_t k : order_) {
    engine_free =
        std::max(engine_free, end(at, planned[k].swap.out_after_op)) + candidates[planned[k].candidate].out_ns;
    out_done_[k] = engine_free;
  }
  // Swap-ins backwards from the latest consumer; the second round closes the cycle (the last
  // swap-in of an iteration must end before the next iteration's first one starts).
  std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    return start(at, planned[a].swap.gap.to_op) > start(at, planned[b].swap.gap.to_op);
  });
  double next_start = kInfinity;
  for (int round = 0; round < 2; ++round) {
    double earliest = kInfinity;
    for (const std::size_t k : order_) {
      Planned& p = planned[k];
      const double deadline = std::min(start(at, p.swap.gap.to_op), next_start) - p.lead_ns;
      const std::uint64_t first = std::max(p.swap.out_after_op + 1, p.earliest_in);
      const std::uint64_t trigger = std::clamp(
          op_at(at, deadline - candidates[p.candidate].in_ns, first, p.swap.gap.to_op), first, p.swap.gap.to_op);
      p.swap.in_at_op = trigger;
      next_start = std::max(start(at, trigger), out_done_[k]);
      earliest = std::min(earliest, next_start);
    }
    next_start = earliest + at.simulation.time_ns;
  }
}

void OursContext::evaluate(State& trial, const State& at, std::uint64_t target) {
  retime(trial.planned, at);
  simulate(trial, target);
  for (int fix = 0; fix < kLateFixes && !out_of_simulations(); ++fix) {
    bool late = false;
    for (std::size_t k = 0; k < trial.planned.size(); ++k) {
      Planned& p = trial.planned[k];
      const bool movable = p.swap.in_at_op > std::max(p.swap.out_after_op + 1, p.earliest_in);
      const double lateness = trial.simulation.swaps[k].lateness_ns;
      if (lateness > tolerance_ns && movable) {
        p.lead_ns += lateness * kLeadMargin;
        late = true;
      }
    }
    if (!late) return;
    retime(trial.planned, at);
    simulate(trial, target);
  }
}

void OursContext::add_waits(State& trial) {
  if (holds_budget()) return;  // the simulation waits where the memory is needed instead
  for (int round = 0; round < kWaitRounds && !out_of_simulations(); ++round) {
    bool changed = false;
    for (std::size_t k = 0; k < trial.planned.size(); ++k) {
      Swap& swap = trial.planned[k].swap;
      // The simulation's timings are of the instance consumed in the measured iteration.
      const std::uint64_t instance = swap.gap.to_op / n;  // whole iterations before the one measured
      const double shift = static_cast<double>(instance) * trial.simulation.time_ns;
      const double first_over = over_inside(trial, end(trial, swap.gap.from_op), start(trial, swap.gap.to_op)).first;
      if (std::isnan(first_over) || trial.simulation.swaps[k].out_end_ns <= first_over - shift) continue;
      const std::uint64_t wait = op_at(trial, first_over, swap.gap.from_op + 1, swap.gap.to_op);
      if (swap.out_wait_op == kNoWait || wait < swap.out_wait_op) {
        swap.out_wait_op = wait;
        changed = true;
      }
    }
    if (!changed) return;
    simulate(trial, trial.target);
  }
}

}  // namespace memtool::swapper::detail
