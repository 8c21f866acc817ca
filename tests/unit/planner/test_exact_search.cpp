// The exact decision search of `best` (planner/src/branch_and_bound.hpp) on its own: on tiny
// problems whose optimum is known by trying every order, it must find a placement at the
// optimum and, given the budget to finish, prove every capacity below it infeasible — so no
// pruning rule (dominance, section bounds, hatless, decomposition) cuts off the last solution.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "branch_and_bound.hpp"
#include "memtool/planner/placement.hpp"
#include "prepared.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;
namespace md = memtool::planner::detail;

namespace {

// A budget that never runs out on a tiny problem (and no wall-clock stop).
md::SearchBudget unlimited() { return md::SearchBudget(UINT64_MAX / 2, 1e9); }

}  // namespace

TEST_CASE("exact search: finds the optimum, proves one byte less infeasible", "[planner][exact]") {
  int proved_above_lower_bound = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const auto p = random_problem(seed, {7, 12, 6, seed % 3 == 0 ? 4 : 0, seed % 2 == 0, seed % 5 == 0, false});
    const std::uint64_t optimum = exhaustive_optimum(p);
    const md::Prepared prepared = md::prepare(p);
    INFO(fmt::format("seed {}, optimum {}, LB {}", seed, optimum, prepared.lower_bound));
    auto budget = unlimited();
    const md::SearchResult at_optimum = md::branch_and_bound(prepared, optimum, budget);
    REQUIRE(at_optimum.improved);
    CHECK(at_optimum.pool <= optimum);
    mp::Placement placement{at_optimum.offsets, at_optimum.pool};
    CHECK(mp::validate(p, placement).valid);
    if (optimum > prepared.lower_bound) {
      auto again = unlimited();
      const md::SearchResult below = md::branch_and_bound(prepared, optimum - 1, again);
      CHECK_FALSE(below.improved);
      CHECK(below.exhausted_space);
      ++proved_above_lower_bound;
    }
  }
  CHECK(proved_above_lower_bound > 0);  // the sample has problems where LB cannot be reached
}

TEST_CASE("exact search: a capacity under LB is infeasible at once", "[planner][exact]") {
  const auto p = random_problem(7, {30, 100, 30, 0, false, false, false});
  const md::Prepared prepared = md::prepare(p);
  md::SearchBudget budget(1000, 1e9);
  const md::SearchResult result = md::branch_and_bound(prepared, prepared.lower_bound - 1, budget);
  CHECK_FALSE(result.improved);
  CHECK(result.exhausted_space);
}
