// `best`: the default algorithm (see best.cpp).
#pragma once

#include "memtool/planner/algorithm.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

[[nodiscard]] Placement best_plan(const Prepared& prepared, const PlanOptions& options);

}  // namespace memtool::planner::detail
