// `best`: buffers live throughout set aside (best.hpp), then the heuristics (four always — so
// a problem of tens of thousands of buffers with thousands live at once can take longer than
// the limit — the others while the budget lasts), the best one kept; then, unless it is at LB already, an improving search within the budget:
//  - iterated greedy from the best heuristic's order (all of the budget for large problems, half
//    from 600 buffers, 15% below);
//  - for problems up to a few thousand buffers, with the rest: the skyline search
//    (skyline_search.hpp) when every buffer has one interval and all share one alignment, else
//    the general branch and bound (branch_and_bound.hpp), aiming under the best pool so far.
// The smallest pool wins; it stops as soon as a pool equals LB. Deterministic: see
// search_budget.hpp.
#include "best.hpp"

#include <algorithm>

#include "branch_and_bound.hpp"
#include "greedy.hpp"
#include "heuristics.hpp"
#include "local_search.hpp"
#include "skyline_search.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

namespace {

constexpr std::size_t kManyItems = 600;

// The greedy starts, most often best first (on the fixtures), since a large problem may
// afford only a few. The first four always run (each wins on some real or random problem),
// even past the budget; `all` runs every one regardless.
void run_heuristics(const Prepared& p, SearchBudget& budget, bool all, GreedyResult& best,
                    std::vector<std::uint32_t>& best_order, Fit& best_fit) {
  constexpr std::pair<Order, Fit> kStarts[] = {
      {Order::breadth, Fit::best},       {Order::size_by_start, Fit::best}, {Order::conflicts, Fit::best},
      {Order::size_by_start, Fit::first}, {Order::size, Fit::first},        {Order::size, Fit::best},
      {Order::area, Fit::best},          {Order::lifetime, Fit::best}};
  GreedyPlacer placer(p);
  bool have = false;
  int started = 0;
  for (const auto& [order_kind, fit] : kStarts) {
    if (have && (best.pool <= p.lower_bound || (!all && started >= 4 && budget.exhausted()))) break;
    ++started;
    auto order = heuristic_order(p, order_kind);
    auto run = placer.place(order, fit, have ? best.pool : UINT64_MAX);
    budget.spend(run.work + p.items.size());
    if (!have || run.pool < best.pool) {
      best = std::move(run);
      best_order = std::move(order);
      best_fit = fit;
      have = true;
    }
  }
}

// One decision search: fit everything under `capacity`. The general branch and bound first at
// LB (it meets LB on most of the MiniMalloc set), then the skyline search (when it applies) at
// LB, then the two alternating, the skyline search on even rounds.
SearchResult decide(const Prepared& p, std::uint64_t capacity, SearchBudget& budget, int round, bool skyline) {
  if (skyline && (round == 1 || (round >= 2 && round % 2 == 0))) return skyline_search(p, capacity, budget);
  return branch_and_bound(p, capacity, budget);
}

// Decision searches at shrinking capacities: LB first (a third of what is left; then an eighth
// for the skyline search, when it applies), then halfway between the lowest capacity not
// proved infeasible and the incumbent, or after a capacity that ran out of budget, halfway
// between it and the incumbent (a third of what is left each), until the budget is spent, LB
// is reached or the incumbent is proved optimal.
void exact_phase(const Prepared& p, SearchBudget& budget, bool skyline, std::uint64_t& pool,
                 std::vector<std::uint64_t>& offsets) {
  std::uint64_t low = p.lower_bound;  // every capacity below `low` is infeasible
  std::uint64_t alignment = 1;
  for (const Item& it : p.items) {
    if (it.footprint != 0) alignment = std::max(alignment, it.alignment);
  }
  std::uint64_t target = low;
  for (int round = 0; pool > low && !budget.exhausted(); ++round) {
    SearchBudget phase = budget.share(round == 1 ? 1.0 / 8 : 1.0 / 3);
    if (phase.left() == 0) break;
    auto found = decide(p, target, phase, round, skyline);
    budget.spend(phase.used() + 1);
    bool moved_down = true;
    if (found.improved && found.pool < pool) {
      pool = found.pool;
      offsets = std::move(found.offsets);
    } else if (found.exhausted_space) {
      low = target + 1;
    } else {
      moved_down = false;  // budget ran out at this capacity: try an easier one
    }
    if (pool <= low) break;
    // LB again with the skyline search (without it, the same branch and bound would only
    // repeat itself on a smaller budget).
    if (skyline && round == 0 && target == p.lower_bound && low == p.lower_bound) continue;
    // Next capacity, on the alignment grid: halfway from the lowest possible to the incumbent
    // after progress, else halfway from the failed capacity to the incumbent.
    const std::uint64_t from = moved_down ? low : target;
    target = std::max(low, (from + (pool - 1 - from) / 2) / alignment * alignment);
  }
}

}  // namespace

Placement best_plan(const Prepared& p, const PlanOptions& options) {
  SearchBudget budget(options.time_limit_seconds);
  GreedyResult best;
  std::vector<std::uint32_t> best_order;
  Fit best_fit = Fit::best;
  run_heuristics(p, budget, /*all=*/false, best, best_order, best_fit);
  std::vector<std::uint64_t> offsets = std::move(best.offsets);
  std::uint64_t pool = best.pool;
  if (pool > p.lower_bound && !budget.exhausted()) {
    const bool exact = branch_and_bound_applies(p);
    const bool skyline = exact && skyline_search_applies(p);
    // Iterated greedy pays off on problems of a thousand buffers and more; the exact searches
    // on the small, tightly packed ones.
    std::size_t items = 0;
    for (const Item& it : p.items) items += it.footprint != 0 ? 1 : 0;
    SearchBudget phase = budget.share(!exact ? 1.0 : items >= kManyItems ? 0.5 : 0.15);
    auto improved = iterated_greedy(p, std::move(best_order), best_fit, {offsets, pool, 0}, phase);
    budget.spend(phase.used());
    if (improved.pool < pool) {
      pool = improved.pool;
      offsets = std::move(improved.offsets);
    }
    if (exact && pool > p.lower_bound) exact_phase(p, budget, skyline, pool, offsets);
  }
  Placement placement;
  placement.offsets = std::move(offsets);
  placement.offsets.resize(p.items.size(), 0);
  placement.pool_size = pool;
  return placement;
}

Placement best_plan(const trace::Problem& problem, const PlanOptions& options) {
  const Prepared full = prepare(problem);
  std::uint64_t alignment = 0;
  bool uniform = true;
  for (const Item& it : full.items) {
    if (it.footprint == 0) continue;
    if (alignment == 0) alignment = it.alignment;
    uniform = uniform && it.alignment == alignment;
  }
  // Sections with something live, as a prefix count, to test "covers all of them" per buffer.
  std::vector<std::uint32_t> live_before(full.section_count + 1, 0);
  for (std::uint32_t t = 0; t < full.section_count; ++t) live_before[t + 1] = live_before[t] + (full.load[t] != 0 ? 1U : 0U);
  const std::uint32_t live_sections = live_before[full.section_count];
  std::vector<std::uint8_t> universal(full.items.size(), 0);
  std::size_t universal_count = 0;
  for (std::uint32_t i = 0; i < full.items.size() && uniform; ++i) {
    const Item& it = full.items[i];
    if (it.footprint == 0) continue;
    std::uint32_t covered = 0;
    const Span* spans = full.spans_of(i);
    for (std::uint32_t k = 0; k < it.span_count; ++k) covered += live_before[spans[k].end] - live_before[spans[k].first];
    if (covered == live_sections) {
      universal[i] = 1;
      ++universal_count;
    }
  }
  if (universal_count == 0 || !branch_and_bound_applies(full)) return best_plan(full, options);
  trace::Problem rest;
  rest.name = problem.name;
  rest.time_horizon = problem.time_horizon;
  std::vector<std::uint32_t> rest_index;
  for (std::uint32_t i = 0; i < problem.buffers.size(); ++i) {
    if (universal[i]) continue;
    rest.buffers.push_back(problem.buffers[i]);
    rest_index.push_back(i);
  }
  Placement placement;
  placement.offsets.assign(problem.buffers.size(), 0);
  std::uint64_t base = 0;
  for (std::uint32_t i = 0; i < full.items.size(); ++i) {
    if (!universal[i]) continue;
    placement.offsets[i] = base;
    base += full.items[i].footprint;
  }
  const Placement upper = best_plan(prepare(rest), options);
  for (std::size_t k = 0; k < rest_index.size(); ++k) {
    const Item& it = full.items[rest_index[k]];
    placement.offsets[rest_index[k]] = it.footprint == 0 ? 0 : base + upper.offsets[k];
  }
  placement.pool_size = base + upper.pool_size;
  // Heuristics can do better on the whole problem than on the rest by luck of ties: keep the
  // better of the two (cheap, as the problem is small enough for the exact searches).
  SearchBudget unlimited(UINT64_MAX, 1e9);
  GreedyResult whole;
  std::vector<std::uint32_t> order;
  Fit fit = Fit::best;
  run_heuristics(full, unlimited, /*all=*/true, whole, order, fit);
  if (whole.pool < placement.pool_size) {
    placement.offsets = std::move(whole.offsets);
    placement.pool_size = whole.pool;
  }
  return placement;
}

}  // namespace memtool::planner::detail
