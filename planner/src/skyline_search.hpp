// Branch and bound on the skyline, in the spirit of MiniMalloc (Moffitt, ASPLOS 2023), for the
// common case: every buffer one interval, every buffer the same alignment (see skyline_search.cpp).
#pragma once

#include <cstdint>

#include "branch_and_bound.hpp"
#include "prepared.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

[[nodiscard]] bool skyline_search_applies(const Prepared& prepared);

// Looks for a placement with pool ≤ `target` (a decision search) until one is found, the
// target is proved impossible, or the budget is spent.
[[nodiscard]] SearchResult skyline_search(const Prepared& prepared, std::uint64_t target, SearchBudget& budget);

}  // namespace memtool::planner::detail
