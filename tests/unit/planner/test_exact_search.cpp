// The exact decision search of `best` (planner/src/branch_and_bound.hpp) on its own: on tiny
// problems whose optimum is known by trying every order, it must find a placement at the
// optimum and, given the budget to finish, prove every capacity below it infeasible — so no
// pruning rule (dominance, section bounds, hatless, decomposition) cuts off the last solution.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "branch_and_bound.hpp"
#include "memtool/planner/placement.hpp"
#include "prepared.hpp"
#include "problem_builders.hpp"
#include "search_budget.hpp"

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

TEST_CASE("exact search: every plan it finds is valid and within the capacity", "[planner][exact]") {
  // Medium problems that fall apart into independent pieces as buffers are placed (short
  // lifetimes over a long horizon), at capacities from LB up: pieces solved, then a later one
  // failing, must leave the search state as it was.
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto p = random_problem(seed, {60, 300, 25, seed % 4 == 0 ? 4 : 0, seed % 3 == 0, seed % 5 == 0, false});
    const md::Prepared prepared = md::prepare(p);
    for (int step = 0; step <= 6; ++step) {
      const std::uint64_t capacity =
          prepared.lower_bound + prepared.lower_bound * static_cast<std::uint64_t>(step) / 20;
      md::SearchBudget budget(2'000'000, 1e9);
      const md::SearchResult r = md::branch_and_bound(prepared, capacity, budget);
      INFO(fmt::format("seed {}, capacity {}", seed, capacity));
      CHECK_FALSE((r.improved && r.exhausted_space));
      if (!r.improved) continue;
      ++found;
      CHECK(r.pool <= capacity);
      CHECK(mp::validate(p, mp::Placement{r.offsets, r.pool}).valid);
    }
  }
  CHECK(found > 100);
}

TEST_CASE("exact search: resumed turn by turn in small slices, the same answer as in one go", "[planner][exact]") {
  const auto p = random_problem(11, {80, 200, 40, 0, false, false, false});
  const md::Prepared prepared = md::prepare(p);
  auto problem = std::make_shared<md::DecisionProblem>();
  REQUIRE(md::build_decision_problem(prepared, *problem));
  const std::uint64_t capacity = prepared.lower_bound + prepared.lower_bound / 20;
  md::DecisionSearch whole(prepared, problem, capacity);
  auto budget = unlimited();
  const md::SearchResult once = whole.resume(budget);
  REQUIRE((once.improved || once.exhausted_space));
  md::DecisionSearch sliced(prepared, problem, capacity);
  md::SearchResult last;
  int slices = 0;
  while (!sliced.settled() && slices < 1000) {
    // Slices of a few nodes at first, growing as a schedule's do: turns are cut and run again.
    md::SearchBudget slice(std::uint64_t{20'000} << std::min(slices / 4, 30), 1e9);
    last = sliced.step(slice);
    ++slices;
  }
  REQUIRE(sliced.settled());
  CHECK(slices > 1);
  CHECK(last.improved == once.improved);
  CHECK(last.offsets == once.offsets);
}

TEST_CASE("decision problem: MiniMalloc's sections, one per end time", "[planner][exact]") {
  // a [0,10) b [5,20) c [12,14) d [12,30): ends at 10, 14, 20, 30 -> four sections; the
  // start of b at 5 and of c, d at 12 open none.
  const auto p = problem_of(
      {buffer(1, 4, {{0, 10}}), buffer(2, 2, {{5, 20}}), buffer(3, 1, {{12, 14}}), buffer(4, 8, {{12, 30}})});
  md::DecisionProblem d;
  REQUIRE(md::build_decision_problem(md::prepare(p), d));
  REQUIRE(d.section_count == 4);
  CHECK(d.load == std::vector<std::uint64_t>{6, 11, 10, 8});
  CHECK(d.hull(0).first == 0);
  CHECK(d.hull(0).end == 1);
  CHECK(d.hull(1).end == 3);
  CHECK(d.hull(2).first == 1);
  CHECK(d.hull(2).end == 2);
  CHECK(d.width == std::vector<std::uint64_t>{10, 15, 2, 18});  // W: time, not sections
  CHECK(d.sections == std::vector<std::uint32_t>{1, 3, 1, 3});  // C
  CHECK(d.neighbours[0] == std::vector<std::uint32_t>{1});
}

TEST_CASE("search budget: the clock guard counts this thread's CPU time, not the wall's", "[planner][exact]") {
  // Units that never run out, a guard at 0.05 CPU s. Asleep (as on a loaded machine, where the
  // thread waits for a core) the wall passes the guard but the CPU time does not: no stop.
  md::SearchBudget budget(UINT64_MAX / 2, 0.05);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  for (int k = 0; k < 256; ++k) REQUIRE_FALSE(budget.exhausted());
  CHECK_FALSE(budget.clock_stopped());
  // Working, the thread's CPU time reaches the guard: a stop, not before the CPU time is spent.
  const double start = md::SearchBudget::thread_seconds();
  volatile std::uint64_t sink = 0;
  while (!budget.exhausted()) {
    for (int k = 0; k < 1000; ++k) sink = sink + static_cast<std::uint64_t>(k);
    REQUIRE(md::SearchBudget::thread_seconds() - start < 5.0);  // it must stop
  }
  CHECK(budget.clock_stopped());
  CHECK(md::SearchBudget::thread_seconds() - start >= 0.04);
  // A part shares the guard, and hands a stop back.
  md::SearchBudget outer(UINT64_MAX / 2, 0.0);
  md::SearchBudget part = outer.part(UINT64_MAX / 4);
  for (int k = 0; k < 64 && !part.exhausted(); ++k) {}
  CHECK(part.clock_stopped());
  outer.absorb(part);
  CHECK(outer.clock_stopped());
  CHECK(outer.exhausted());
}
