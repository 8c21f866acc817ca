// `best`: the default algorithm (see best.cpp).
#pragma once

#include "memtool/planner/algorithm.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

[[nodiscard]] Placement best_plan(const Prepared& prepared, const PlanOptions& options);

// The entry point: buffers live whenever anything is live (weights spanning the window)
// conflict with everything, so no other buffer can ever use their addresses: when all buffers
// share one alignment they are stacked at the bottom and best_plan solves the rest, a smaller
// problem with the same gap to LB.
[[nodiscard]] Placement best_plan(const trace::Problem& problem, const PlanOptions& options);

}  // namespace memtool::planner::detail
