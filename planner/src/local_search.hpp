// Iterated greedy for problems of any size: re-runs the greedy placer on perturbed orders of the
// best order found so far, keeping a new order when its pool is no larger.
#pragma once

#include <cstdint>
#include <vector>

#include "greedy.hpp"
#include "prepared.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

struct LocalSearchResult {
  std::vector<std::uint64_t> offsets;
  std::uint64_t pool = 0;
  std::vector<std::uint32_t> order;
};

// Starts from `order` (whose greedy pool with `fit` is `pool`); stops at LB or when the budget
// is spent. Deterministic: the pseudo-random perturbations are seeded from the problem.
[[nodiscard]] LocalSearchResult iterated_greedy(const Prepared& prepared, std::vector<std::uint32_t> order, Fit fit,
                                                GreedyResult start, SearchBudget& budget);

}  // namespace memtool::planner::detail
