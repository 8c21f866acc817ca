// Branch and bound over the order of placements, in the spirit of MiniMalloc (Moffitt, ASPLOS
// 2023): a decision search — fit every buffer under a capacity — for small and medium problems
// of any shape (several intervals per buffer, mixed alignments). See branch_and_bound.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "prepared.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

struct SearchResult {
  bool improved = false;               // a placement within the capacity was found
  std::vector<std::uint64_t> offsets;  // per item, when found
  std::uint64_t pool = 0;              // its pool size, when found
  bool exhausted_space = false;        // the whole space was searched: nothing fits the capacity
};

// Whether the problem is small enough for the search (conflict lists must fit in memory).
[[nodiscard]] bool branch_and_bound_applies(const Prepared& prepared);

// Looks for a placement with pool ≤ `capacity` until found, proved impossible or the budget is
// spent.
[[nodiscard]] SearchResult branch_and_bound(const Prepared& prepared, std::uint64_t capacity, SearchBudget& budget);

}  // namespace memtool::planner::detail
