// The pool re-planned for a swap schedule (swap_pool.hpp): residencies from the simulator's
// measured iteration, as a periodic planner problem cut at the iteration's start, packed twice.
#include "memtool/swapper/swap_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "memtool/planner/algorithm.hpp"
#include "memtool/planner/placement.hpp"

namespace memtool::swapper {
namespace {

// Times closer than this are one event: the simulator's times and the op times rebuilt here
// from its stalls are sums in a different order, equal only up to rounding.
double tolerance(double period_ns) { return 1e-9 * std::max(period_ns, 1.0); }

// x modulo the period, in [0, period).
double wrap(double x, double period) {
  double r = std::fmod(x, period);
  if (r < 0) r += period;
  return r >= period ? 0.0 : r;
}

struct Window {  // a stretch the buffer is away: from its copy-out's end to its copy-in's start
  double begin = 0;
  double length = 0;
};

// The complement of `windows` (sorted, disjoint, relative to `origin`) within [origin, origin +
// length): each residency is appended with its begin folded into [0, period).
void append_between(std::uint32_t buffer, double origin, double length, const std::vector<Window>& windows,
                    double period, double eps, std::vector<Residency>& out) {
  double from = origin;
  const auto add = [&](double begin, double end) {
    if (end < begin) end = begin;  // a window the simulator ran past the lifetime: nothing resident
    // Fold into [0, period); a time within the tolerance of the period's end is the next start.
    double shift = 0;
    while (begin - shift >= period - eps) shift += period;
    begin = std::max(begin - shift, 0.0);
    end -= shift;
    if (end > period && end - period <= eps) end = period;
    out.push_back(Residency{buffer, begin, std::max(end, begin), 0, 0});
  };
  for (const Window& w : windows) {
    add(from, w.begin);
    from = w.begin + w.length;
  }
  add(from, origin + length);
}

}  // namespace

std::vector<Residency> residencies(const Iteration& iteration, const Schedule& schedule, const Simulation& simulation) {
  const std::size_t n = iteration.ops.size();
  if (n == 0) throw std::invalid_argument("swap pool: the iteration has no ops");
  if (simulation.op_stall_ns.size() != n || simulation.swaps.size() != schedule.swaps.size()) {
    throw std::invalid_argument(
        fmt::format("swap pool: the simulation ({} ops, {} swaps) is not of this iteration and "
                    "schedule ({} ops, {} swaps)",
                    simulation.op_stall_ns.size(), simulation.swaps.size(), n, schedule.swaps.size()));
  }
  const double period = simulation.time_ns;
  if (!(period > 0)) throw std::invalid_argument("swap pool: the iteration takes no time");
  const double eps = tolerance(period);

  // Op times of the measured iteration, from its start: each op starts after the previous one's
  // end plus its stall.
  std::vector<double> start(n), end(n);
  double previous = 0;
  for (std::size_t i = 0; i < n; ++i) {
    start[i] = previous + simulation.op_stall_ns[i];
    end[i] = start[i] + static_cast<double>(iteration.ops[i].duration_ns);
    previous = end[i];
  }

  std::vector<std::vector<Window>> away(iteration.buffers.size());
  for (std::size_t s = 0; s < schedule.swaps.size(); ++s) {
    const SwapTiming& t = simulation.swaps[s];
    const double length = t.in_start_ns - t.out_end_ns;
    if (length > eps) away[schedule.swaps[s].gap.buffer].push_back({t.out_end_ns, length});
  }
  // Holding a budget, the executor's rule sends out more than the schedule: one steady
  // iteration's worth, taken as periodic like the rest (one freed while out is away until its
  // free, where its lifetime ends anyway).
  for (const RuleEviction& e : simulation.rule_evictions) {
    const double length = e.in_start_ns - e.out_end_ns;
    if (length > eps) away[e.buffer].push_back({e.out_end_ns, length});
  }

  std::vector<Residency> out;
  for (std::uint32_t b = 0; b < iteration.buffers.size(); ++b) {
    const Buffer& buffer = iteration.buffers[b];
    std::vector<Window>& windows = away[b];
    if (buffer.persistent) {
      if (windows.empty()) {
        out.push_back(Residency{b, 0.0, period, 0, 0});
        continue;
      }
      // Around the circle, from the end of the first window (in period order) back to its start.
      for (Window& w : windows) w.begin = wrap(w.begin, period);
      std::sort(windows.begin(), windows.end(), [](const Window& x, const Window& y) { return x.begin < y.begin; });
      const double origin = windows.front().begin + windows.front().length;
      std::vector<Window> rest;
      for (std::size_t k = 1; k < windows.size(); ++k) rest.push_back(windows[k]);
      append_between(b, origin, windows.front().begin + period - origin, rest, period, eps, out);
      continue;
    }
    // From the start of the op it is allocated before to the end of the op it is freed after (in
    // the next iteration when it crosses the boundary); windows unrolled into that stretch.
    const double origin = start[buffer.alloc_before_op];
    const double stop = end[buffer.free_after_op] + (buffer.crosses_iteration() ? period : 0.0);
    for (Window& w : windows) w.begin = origin + wrap(w.begin - origin, period);
    std::sort(windows.begin(), windows.end(), [](const Window& x, const Window& y) { return x.begin < y.begin; });
    append_between(b, origin, stop - origin, windows, period, eps, out);
  }
  return out;
}

trace::Problem pool_problem(const Iteration& iteration, const std::vector<Residency>& residencies, double period_ns,
                            std::uint64_t alignment, bool same_address) {
  const double eps = tolerance(period_ns);
  // Distinct event times, each a cluster of times within the tolerance of its first.
  std::vector<double> times{0.0, period_ns};
  for (const Residency& r : residencies) {
    times.push_back(r.begin_ns);
    times.push_back(r.wraps(period_ns) ? r.end_ns - period_ns : r.end_ns);
  }
  std::sort(times.begin(), times.end());
  std::vector<double> clusters;
  for (const double t : times) {
    if (clusters.empty() || t - clusters.back() > eps) clusters.push_back(t);
  }
  const auto rank = [&](double t) {
    return static_cast<std::uint64_t>(std::upper_bound(clusters.begin(), clusters.end(), t) - clusters.begin() - 1);
  };
  const std::uint64_t horizon = rank(period_ns);

  // A residency's intervals in ranks; one shorter than the tolerance is held to the next event
  // (more than the simulator counts, never less).
  const auto intervals_of = [&](const Residency& r) {
    std::vector<trace::LiveInterval> pieces;
    const std::uint64_t begin = std::min(rank(r.begin_ns), horizon);
    if (r.wraps(period_ns)) {
      if (begin < horizon) pieces.push_back({begin, horizon});
      const std::uint64_t stop = rank(r.end_ns - period_ns);
      if (stop > 0) pieces.insert(pieces.begin(), trace::LiveInterval{0, stop});
    } else {
      const std::uint64_t stop = rank(r.end_ns);
      if (stop > begin) pieces.push_back({begin, stop});
    }
    if (pieces.empty())
      pieces.push_back(begin < horizon ? trace::LiveInterval{begin, begin + 1} : trace::LiveInterval{0, 1});
    return pieces;
  };

  trace::Problem problem;
  problem.name = same_address ? "swap pool (same address)" : "swap pool";
  problem.time_horizon = std::max<std::uint64_t>(horizon, 1);
  const auto request = [&](std::uint64_t id, std::uint32_t buffer) {
    trace::BufferRequest r;
    r.id = id;
    r.size = iteration.buffers[buffer].size;
    r.alignment = alignment;
    return r;
  };
  if (!same_address) {
    for (std::size_t k = 0; k < residencies.size(); ++k) {
      trace::BufferRequest r = request(k, residencies[k].buffer);
      r.intervals = intervals_of(residencies[k]);
      r.crosses_iteration = residencies[k].wraps(period_ns);
      problem.buffers.push_back(std::move(r));
    }
    return problem;
  }
  std::vector<std::size_t> slot(iteration.buffers.size(), residencies.size());
  for (const Residency& res : residencies) {
    if (slot[res.buffer] == residencies.size()) {
      slot[res.buffer] = problem.buffers.size();
      problem.buffers.push_back(request(res.buffer, res.buffer));
    }
    trace::BufferRequest& r = problem.buffers[slot[res.buffer]];
    for (const trace::LiveInterval& piece : intervals_of(res)) r.intervals.push_back(piece);
    r.crosses_iteration = r.crosses_iteration || res.wraps(period_ns);
  }
  for (trace::BufferRequest& r : problem.buffers) {
    std::sort(r.intervals.begin(), r.intervals.end(),
              [](const trace::LiveInterval& x, const trace::LiveInterval& y) { return x.begin < y.begin; });
  }
  return problem;
}

SwapPool plan_swap_pool(const Iteration& iteration, const Schedule& schedule, const Simulation& simulation,
                        const SwapPoolOptions& options) {
  const planner::Algorithm* algorithm = planner::find_algorithm(options.algorithm);
  if (algorithm == nullptr)
    throw std::invalid_argument(fmt::format("swap pool: unknown planner algorithm '{}'", options.algorithm));
  SwapPool pool;
  pool.period_ns = simulation.time_ns;
  pool.residencies = residencies(iteration, schedule, simulation);
  planner::PlanOptions plan_options;
  plan_options.time_limit_seconds = options.time_limit_seconds;
  const auto pack = [&](bool same_address) {
    trace::Problem problem = pool_problem(iteration, pool.residencies, pool.period_ns, options.alignment, same_address);
    planner::Placement placement = algorithm->plan(problem, plan_options);
    // The planner never returns an invalid placement; a check costs O(I log I) and guards the
    // promise the pool's users (an executor reusing these offsets) depend on.
    const planner::ValidationResult check = planner::validate(problem, placement);
    if (!check.valid) throw std::logic_error("swap pool: the planner's placement is invalid: " + check.message);
    if (!same_address) pool.lower_bound_bytes = planner::lower_bound(problem);
    return std::pair(std::move(problem), std::move(placement));
  };
  {
    const auto [problem, placement] = pack(false);
    for (std::size_t k = 0; k < pool.residencies.size(); ++k) pool.residencies[k].offset = placement.offsets[k];
    pool.pool_bytes = placement.pool_size;
  }
  if (options.same_address) {
    const auto [problem, placement] = pack(true);
    std::vector<std::uint64_t> offset_of(iteration.buffers.size(), 0);
    for (std::size_t k = 0; k < problem.buffers.size(); ++k) offset_of[problem.buffers[k].id] = placement.offsets[k];
    for (Residency& r : pool.residencies) r.offset_same_address = offset_of[r.buffer];
    pool.pool_bytes_same_address = placement.pool_size;
  }
  return pool;
}

}  // namespace memtool::swapper
