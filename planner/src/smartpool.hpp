// SmartPool (Zhang et al. 2019, Apache SINGA's SmartMemPool): the published baseline.
#pragma once

#include "memtool/planner/placement.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

[[nodiscard]] Placement smartpool_plan(const Prepared& prepared, bool first_fit);

}  // namespace memtool::planner::detail
