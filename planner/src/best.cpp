// `best`: buffers live throughout set aside (best.hpp), then the heuristics — the first always,
// each of the others only while the budget left covers what the first one cost — the best one
// kept; then, unless it is at LB already, an improving search within the budget:
//  - for problems up to a few thousand buffers, decision searches (branch_and_bound.hpp): the
//    caller's capacity first, when there is one and the heuristics miss it; then turns of two
//    resumable searches (and, from 600 buffers, of iterated greedy, local_search.hpp), each
//    turn to the one with the least spend over its weight so far (stride scheduling), the
//    weights set by whether the descending search is making progress — it is while it has
//    spent no more since its last smaller pool than it had up to it:
//      · lowest (weight 1 in progress, 3 stalled): the lowest capacity not proved infeasible
//        — LB, and after a proof halfway up to the incumbent (a bisection from below). Real
//        steps and most of MiniMalloc's set are solved at LB, where the bounds are tightest,
//        and there the descending search stalls early (B: from 0.02 of the budget on), so
//        LB gets three quarters;
//      · descending (weight 2 in progress, 1 stalled): an eighth of the way from the
//        incumbent down to that lower end; after 1 + k/2 node-limit cycles without an answer
//        (k: the moves so far), halfway up to the incumbent (a search's cost is heavy-tailed
//        and far from monotone in the capacity: on J, 1,029,120 is found in 0.4 s and
//        1,031,000 not in 20, and 1,064,448 stalled for 0.6 s where the capacities below
//        1,069,823 took 0.03 s — a fresh search at another capacity often answers where the
//        old one stalls, and the growing patience lets long runs search deeper). Where LB is
//        out of reach (D, J) it finds smaller pools steadily and gets half the turns or more;
//      · iterated greedy (weight 1);
//  - larger problems: iterated greedy from the best heuristic's order, with all of the budget.
// On MiniMalloc's challenging set these meet 1 MiB on all 11 with 1 s (D 1,028,096 and J
// 1,032,192; fixed weights 2:1 and a patience of 3 + k left them at 1,042,432 and 1,041,408;
// stalled weights of 2:1 missed B; patience 1 + k/3 or 2 + k/2 left D at 1,042,432: the
// figures are sensitive to these choices: the experiments are in bench/RESULTS.md's history).
// The smallest pool wins; it stops as soon as a pool equals LB or the incumbent is proved
// optimal. Deterministic: see search_budget.hpp.
#include "best.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include "branch_and_bound.hpp"
#include "greedy.hpp"
#include "heuristics.hpp"
#include "local_search.hpp"

namespace memtool::planner::detail {

namespace {

constexpr std::size_t kManyItems = 600;
// The decision arms' weights (lowest, descending, iterated greedy; see the top of this file)
// while the descending search finds smaller pools, and while it stalls. A turn's cost goes
// into its arm's pass as cost * kPassScale / weight (a multiple of every weight).
constexpr std::uint64_t kWeightProgress[] = {1, 2, 1};
constexpr std::uint64_t kWeightStalled[] = {3, 1, 1};
constexpr std::uint64_t kPassScale = 6;

struct Incumbent {
  std::uint64_t pool = UINT64_MAX;  // UINT64_MAX: none yet
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> order;  // of the best heuristic, for iterated greedy
  Fit fit = Fit::best;
};

// The greedy starts, the most robust first: first fit by size is within a few percent of the
// best start on every large input we have (iopddl S_1, Y_1, pangu, random problems of 10 k to
// 1 M buffers), where breadth, second, is best on real steps but up to 36% worse on others. The
// first always runs, within the budget: when the budget cannot pay for it to its end, the rest
// of its order goes above what it placed by sweep_fill (a plan within the limit, however large
// the problem). Each later one runs only when the budget left covers a whole run like the
// first, so at large n the cost of the first decides how many run; `all` runs every one to its
// end regardless (small problems).
void run_heuristics(const Prepared& p, GreedyPlacer& placer, SearchBudget& budget, bool all, Incumbent& best) {
  constexpr std::pair<Order, Fit> kStarts[] = {{Order::size_by_start, Fit::first}, {Order::breadth, Fit::best},
                                               {Order::size_by_start, Fit::best},  {Order::conflicts, Fit::best},
                                               {Order::size, Fit::first},          {Order::size, Fit::best},
                                               {Order::area, Fit::best},           {Order::lifetime, Fit::best}};
  std::uint64_t first_cost = 0;
  for (const auto& [order_kind, fit] : kStarts) {
    const std::uint64_t ordering = heuristic_order_work(p, order_kind);
    if (best.pool != UINT64_MAX) {
      if (best.pool <= p.lower_bound) break;
      if (!all && (budget.left() < first_cost || budget.exhausted())) break;
    }
    budget.spend(ordering);
    auto order = heuristic_order(p, order_kind);
    GreedyStops stops;
    if (!all) {
      stops.work = budget.left();
      stops.finish = best.pool == UINT64_MAX;  // the first: a plan, whatever the budget
      if (!stops.finish) stops.above = best.pool - 1;
    }
    auto run = placer.place(order, fit, stops);
    budget.spend(run.work);
    if (first_cost == 0) first_cost = run.work + ordering;
    const bool cut = run.cut;
    if (run.pool < best.pool) {
      best.pool = run.pool;
      best.offsets = std::move(run.offsets);
      best.order = std::move(order);
      best.fit = fit;
    }
    if (cut) break;  // the budget is spent
  }
}

// The halfway point of [from, to], rounded down, at least `from`.
std::uint64_t halfway(std::uint64_t from, std::uint64_t to) { return to <= from ? from : from + (to - from) / 2; }

// The decision searches' schedule (see the top of this file): turns go to the arm that has
// spent the least budget for its weight, so arms whose turns cost differently still share the
// budget as planned, and no turn is cut short except by the end of the budget.
class ExactSchedule {
 public:
  ExactSchedule(const Prepared& p, GreedyPlacer& placer, std::shared_ptr<const DecisionProblem> problem,
                Incumbent& incumbent)
      : p_(p), placer_(placer), problem_(std::move(problem)), incumbent_(incumbent), low_(p.lower_bound) {}

  void run(SearchBudget& budget, std::uint64_t capacity) {
    if (capacity != 0 && capacity < incumbent_.pool && capacity >= low_) {
      DecisionSearch at_capacity(p_, problem_, capacity);
      take(at_capacity, at_capacity.resume(budget));
    }
    if (problem_->size() >= kManyItems) {
      greedy_.emplace(p_, placer_, incumbent_.order, incumbent_.fit,
                      GreedyResult{incumbent_.offsets, incumbent_.pool, 0, false, 0});
    }
    // Each arm's spend over its weight (stride scheduling): the next turn goes to the lowest, so
    // weights that change with progress change the shares from then on, with no debt to repay.
    std::uint64_t pass[] = {0, 0, 0};
    while (!done() && !budget.exhausted()) {
      retarget();
      const bool active[] = {true, descending_->capacity() != lowest_->capacity(), greedy_.has_value()};
      // The descending searches make progress while they have spent no more since their last
      // find than up to it (a patience that doubles with each find's cost: scale-free).
      const bool progressing = desc_spent_ - desc_found_at_ <= desc_found_at_;
      const std::uint64_t* const weight = progressing ? kWeightProgress : kWeightStalled;
      int arm = 0;
      for (int k = 1; k < 3; ++k) {
        if (active[k] && pass[k] < pass[arm]) arm = k;
      }
      const std::uint64_t before = budget.used();
      const std::uint64_t pool_before = incumbent_.pool;
      if (arm == 0) {
        take(*lowest_, lowest_->step(budget));
      } else if (arm == 1) {
        take(*descending_, descending_->step(budget));
        // No answer within its patience: halfway up to the incumbent, an easier capacity.
        const std::uint64_t easier = halfway(descending_->capacity(), incumbent_.pool - 1);
        if (!descending_->settled() && descending_->cycles() >= 1 + moves_ / 2 && easier != descending_->capacity()) {
          descending_.emplace(p_, problem_, easier);
          ++moves_;
        }
      } else {
        SearchBudget part = budget.part(std::max<std::uint64_t>(std::uint64_t{1} << 16, budget.limit() / 64));
        if (greedy_->improve(part) && greedy_->pool() < incumbent_.pool) {
          incumbent_.pool = greedy_->pool();
          incumbent_.offsets = greedy_->offsets();
        }
        budget.absorb(part);
      }
      const std::uint64_t cost = budget.used() - before + 1;
      if (arm == 1) {
        desc_spent_ += cost;
        if (incumbent_.pool < pool_before) desc_found_at_ = desc_spent_;
      }
      pass[arm] += cost * kPassScale / weight[arm];
      // An arm coming back (a new descending target) gets no burst for its idle time.
      for (int k = 1; k < 3; ++k) {
        if (!active[k]) pass[k] = std::max(pass[k], pass[arm]);
      }
    }
  }

 private:
  [[nodiscard]] bool done() const { return incumbent_.pool <= low_; }

  // New searches where the old ones are settled or aim at or above the incumbent: the lowest
  // capacity not proved infeasible (LB; after a proof, halfway up to the incumbent), and just
  // under the incumbent (below()).
  void retarget() {
    if (!lowest_ || lowest_->settled() || lowest_->capacity() >= incumbent_.pool) {
      lowest_.emplace(p_, problem_, proved_ ? halfway(low_, incumbent_.pool - 1) : low_);
    }
    if (!descending_ || descending_->settled() || descending_->capacity() >= incumbent_.pool) {
      descending_.emplace(p_, problem_, below(incumbent_.pool));
    }
  }

  // An eighth of the way from the incumbent down to the lowest capacity not proved
  // infeasible: close enough to the incumbent to be found quickly most of the time.
  [[nodiscard]] std::uint64_t below(std::uint64_t pool) const { return pool - 1 - (pool - 1 - low_) / 8; }

  // A settled search's answer: a smaller plan, or a capacity proved infeasible.
  void take(const DecisionSearch& search, const SearchResult& result) {
    if (result.improved && result.pool < incumbent_.pool) {
      incumbent_.pool = result.pool;
      incumbent_.offsets = result.offsets;
    } else if (result.exhausted_space && search.capacity() + 1 > low_) {
      low_ = search.capacity() + 1;
      proved_ = true;
    }
  }

  const Prepared& p_;
  GreedyPlacer& placer_;
  std::shared_ptr<const DecisionProblem> problem_;
  Incumbent& incumbent_;
  std::uint64_t low_;                // every capacity below it is infeasible
  bool proved_ = false;              // low_ rose above LB by a proof
  std::uint64_t moves_ = 0;          // moves up of the descending search: its patience grows with them
  std::uint64_t desc_spent_ = 0;     // budget the descending searches have used
  std::uint64_t desc_found_at_ = 0;  // desc_spent_ when one last found a smaller pool
  std::optional<DecisionSearch> lowest_, descending_;
  std::optional<IteratedGreedy> greedy_;
};

}  // namespace

Placement best_plan(const Prepared& p, SearchBudget& budget, std::uint64_t capacity) {
  Incumbent best;
  GreedyPlacer placer(p);
  run_heuristics(p, placer, budget, /*all=*/false, best);
  if (best.pool > p.lower_bound && !budget.exhausted()) {
    std::shared_ptr<DecisionProblem> problem;
    if (branch_and_bound_applies(p)) {
      problem = std::make_shared<DecisionProblem>();
      if (!build_decision_problem(p, *problem)) problem.reset();
      budget.spend(problem ? decision_problem_work(*problem) : p.items.size());
    }
    if (problem) {
      ExactSchedule(p, placer, std::move(problem), best).run(budget, capacity);
    } else {
      IteratedGreedy greedy(p, placer, std::move(best.order), best.fit,
                            GreedyResult{best.offsets, best.pool, 0, false, 0});
      while (greedy.improve(budget)) {}
      if (greedy.pool() < best.pool) {
        best.pool = greedy.pool();
        best.offsets = greedy.offsets();
      }
    }
  }
  Placement placement;
  placement.offsets = std::move(best.offsets);
  placement.offsets.resize(p.items.size(), 0);
  placement.pool_size = best.pool;
  return placement;
}

Placement best_plan(const trace::Problem& problem, const PlanOptions& options) {
  SearchBudget budget(options.time_limit_seconds);
  const Prepared full = prepare(problem);
  budget.spend(prepare_work(full));
  std::uint64_t alignment = 0;
  bool uniform = true;
  for (const Item& it : full.items) {
    if (it.footprint == 0) continue;
    if (alignment == 0) alignment = it.alignment;
    uniform = uniform && it.alignment == alignment;
  }
  // Sections with something live, as a prefix count, to test "covers all of them" per buffer.
  std::vector<std::uint32_t> live_before(full.section_count + 1, 0);
  for (std::uint32_t t = 0; t < full.section_count; ++t)
    live_before[t + 1] = live_before[t] + (full.load[t] != 0 ? 1U : 0U);
  const std::uint32_t live_sections = live_before[full.section_count];
  std::vector<std::uint8_t> universal(full.items.size(), 0);
  std::size_t universal_count = 0;
  for (std::uint32_t i = 0; i < full.items.size() && uniform; ++i) {
    const Item& it = full.items[i];
    if (it.footprint == 0) continue;
    std::uint32_t covered = 0;
    const Span* spans = full.spans_of(i);
    for (std::uint32_t k = 0; k < it.span_count; ++k)
      covered += live_before[spans[k].end] - live_before[spans[k].first];
    if (covered == live_sections) {
      universal[i] = 1;
      ++universal_count;
    }
  }
  if (universal_count == 0 || !branch_and_bound_applies(full)) return best_plan(full, budget, options.capacity_bytes);
  // Heuristics can do better on the whole problem than on the rest by luck of ties: the whole
  // problem's, kept when better (cheap, as the problem is small enough for the exact searches).
  Incumbent whole;
  GreedyPlacer whole_placer(full);
  run_heuristics(full, whole_placer, budget, /*all=*/true, whole);
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
  const std::uint64_t capacity = options.capacity_bytes > base ? options.capacity_bytes - base : 0;
  const Prepared rest_prepared = prepare(rest);
  budget.spend(prepare_work(rest_prepared));
  const Placement upper = best_plan(rest_prepared, budget, capacity);
  for (std::size_t k = 0; k < rest_index.size(); ++k) {
    const Item& it = full.items[rest_index[k]];
    placement.offsets[rest_index[k]] = it.footprint == 0 ? 0 : base + upper.offsets[k];
  }
  placement.pool_size = base + upper.pool_size;
  if (whole.pool < placement.pool_size) {
    placement.offsets = std::move(whole.offsets);
    placement.pool_size = whole.pool;
  }
  return placement;
}

}  // namespace memtool::planner::detail
