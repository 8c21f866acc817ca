// `best`: the default algorithm (see best.cpp).
#pragma once

#include "memtool/planner/algorithm.hpp"
#include "prepared.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

// The heuristics, then the improving search within `budget`; `capacity`: the caller's limit
// (0: none), searched first.
[[nodiscard]] Placement best_plan(const Prepared& prepared, SearchBudget& budget, std::uint64_t capacity);

// The entry point: buffers live whenever anything is live (weights spanning the window)
// conflict with everything, so no other buffer can ever use their addresses: when all buffers
// share one alignment they are stacked at the bottom and best_plan solves the rest, a smaller
// problem with the same gap to LB.
[[nodiscard]] Placement best_plan(const trace::Problem& problem, const PlanOptions& options);

}  // namespace memtool::planner::detail
