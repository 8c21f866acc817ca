// Iterated greedy for problems of any size: re-runs the greedy placer on perturbed orders of the
// best order found so far, keeping a new order when its pool is no larger.
#pragma once

#include <cstdint>
#include <vector>

#include "greedy.hpp"
#include "prepared.hpp"
#include "search_budget.hpp"

namespace memtool::planner::detail {

// Resumable: `improve` goes on from where the previous call stopped (same incumbent order, same
// pseudo-random sequence), so a schedule can hand it budget in slices. Deterministic: the
// perturbations are seeded from the problem.
class IteratedGreedy {
 public:
  // `start`: the greedy result of `order` with `fit`. Its rounds run on `placer` (the caller's,
  // for the same problem).
  IteratedGreedy(const Prepared& prepared, GreedyPlacer& placer, std::vector<std::uint32_t> order, Fit fit,
                 GreedyResult start);
  // Stops at LB, when the budget is spent (a round it cannot pay for to the end is cut short
  // and counts for nothing), or after a round that lowered the pool (so the caller can use it
  // at once). True when the pool got lower.
  bool improve(SearchBudget& budget);
  [[nodiscard]] std::uint64_t pool() const { return pool_; }
  [[nodiscard]] const std::vector<std::uint64_t>& offsets() const { return offsets_; }

 private:
  const Prepared& prepared_;
  GreedyPlacer& placer_;
  Fit fit_;
  std::vector<std::uint32_t> order_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t pool_ = 0;
  std::uint64_t round_ = 0;
  std::uint64_t rng_state_ = 0;
};

}  // namespace memtool::planner::detail
