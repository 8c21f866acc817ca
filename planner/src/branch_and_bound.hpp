// Branch and bound over the order of placements, as MiniMalloc (Moffitt, ASPLOS 2023) does it:
// a decision search — fit every buffer under a capacity — for problems of up to a few thousand
// buffers of any shape (several intervals per buffer, mixed alignments). See branch_and_bound.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decision_problem.hpp"
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

// The preorders a decision search takes turns with: MiniMalloc's three (WAT, TAW, TWA: W the
// time width, A the area, T the most unplaced bytes in any of the buffer's sections) and CAT
// (C: the sections spanned). On MiniMalloc's challenging set at capacity 1 MiB, CAT solves F
// in a quarter of the time the three need; the other two C variants (TAC, TCA) solved none
// first and only made each cycle longer.
[[nodiscard]] const std::vector<std::string>& preorder_portfolio();

// One capacity, searched with the preorders in turn under a node limit that doubles after each
// cycle through them (MiniMalloc's round robin), so one unlucky early choice cannot eat the
// whole budget. Resumable turn by turn: a schedule can run a few turns of one capacity, then
// of another, and come back; a turn cut short by the budget runs again from its start.
class DecisionSearch {
 public:
  DecisionSearch(const Prepared& prepared, std::shared_ptr<const DecisionProblem> problem, std::uint64_t capacity,
                 std::vector<std::string> preorders = preorder_portfolio());
  // One turn: one preorder under the current node limit. A settled search returns its answer
  // again at no cost.
  SearchResult step(SearchBudget& budget);
  // Turns until a placement is found, the capacity is proved infeasible or `budget` is spent.
  SearchResult resume(SearchBudget& budget);
  [[nodiscard]] bool settled() const { return settled_; }
  [[nodiscard]] std::uint64_t capacity() const { return capacity_; }
  // Cycles through every preorder finished without an answer.
  [[nodiscard]] std::uint64_t cycles() const { return cycles_; }

 private:
  const Prepared& prepared_;
  std::shared_ptr<const DecisionProblem> problem_;
  std::uint64_t capacity_;
  std::vector<std::string> preorders_;
  std::uint64_t node_limit_ = 0;
  std::size_t turn_ = 0;
  std::uint64_t cycles_ = 0;
  bool settled_ = false;
  SearchResult answer_;
};

// One-shot: looks for a placement with pool ≤ `capacity` until found, proved impossible or the
// budget is spent.
[[nodiscard]] SearchResult branch_and_bound(const Prepared& prepared, std::uint64_t capacity, SearchBudget& budget);

}  // namespace memtool::planner::detail
