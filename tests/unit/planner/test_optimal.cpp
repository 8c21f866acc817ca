// Known optima: tiny problems solved exhaustively (every placement order), hand-made problems
// where greedy orders fail, and the relation between the algorithms (best is never worse than
// any heuristic; smartpool doubles the cross-iteration region).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "memtool/planner/algorithm.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

TEST_CASE("best finds the exact optimum of tiny problems", "[planner][optimal]") {
  const auto* best = mp::find_algorithm("best");
  REQUIRE(best != nullptr);
  int above_lower_bound = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const auto p = random_problem(seed, {6, 12, 6, seed % 3 == 0 ? 4 : 0, seed % 2 == 0, seed % 5 == 0, false});
    const std::uint64_t optimum = exhaustive_optimum(p);
    mp::PlanOptions o;
    o.time_limit_seconds = 0.05;
    const auto placement = best->plan(p, o);
    INFO(fmt::format("seed {}", seed));
    REQUIRE(mp::validate(p, placement).valid);
    CHECK(placement.pool_size == optimum);
    if (optimum > mp::lower_bound(p)) ++above_lower_bound;
    for (const auto* algo : mp::algorithms()) CHECK(algo->plan(p, o).pool_size >= optimum);
  }
  CHECK(above_lower_bound > 0);  // the sample includes problems where LB cannot be reached
}

TEST_CASE("a problem where greedy by size fails and best reaches LB", "[planner][optimal]") {
  // Two long buffers A, B (size 2) and short ones: size order puts A and B low and leaves the
  // shorts a hole they cannot use. LB 4, reachable by stacking well.
  //   time:  0 1 2 3
  //   A(2):  x x . .     B(2): . . x x
  //   C(3):  . x x .     D(1): x . . x     E(1): x . . .   F(1) . . . x
  auto p = problem_of({buffer(1, 2, {{0, 2}}), buffer(2, 2, {{2, 4}}), buffer(3, 3, {{1, 3}}),
                       buffer(4, 1, {{0, 1}, {3, 4}}), buffer(5, 1, {{0, 1}}), buffer(6, 1, {{3, 4}})});
  const std::uint64_t optimum = exhaustive_optimum(p);
  const auto placement = mp::find_algorithm("best")->plan(p, {});
  CHECK(mp::validate(p, placement).valid);
  CHECK(placement.pool_size == optimum);
}

TEST_CASE("best is never worse than any other algorithm", "[planner][optimal]") {
  // No cross-iteration buffers, so smartpool is a plain greedy order too.
  for (std::uint64_t seed = 500; seed < 530; ++seed) {
    const auto p = random_problem(seed, {200, 300, 60, 0, seed % 2 == 0, seed % 3 == 0, false});
    mp::PlanOptions o;
    o.time_limit_seconds = 0.02;
    const auto best = mp::find_algorithm("best")->plan(p, o).pool_size;
    for (const auto* algo : mp::algorithms()) {
      CHECK(best <= algo->plan(p, o).pool_size);
    }
  }
}

TEST_CASE("smartpool: size order with earlier start on ties, doubled cross-iteration region", "[planner][optimal]") {
  const auto* smartpool = mp::find_algorithm("smartpool");
  // Equal sizes: the earlier one goes first, at 0.
  auto ties = problem_of({buffer(1, 8, {{5, 9}}), buffer(2, 8, {{0, 6}})});
  auto placed = smartpool->plan(ties, {});
  CHECK(placed.offsets == std::vector<std::uint64_t>{8, 0});
  // Holes among the buffers conflicting with X (idx 5): [20,32) left by G1 and [42,48) left by
  // G2, neither live when X is. Best fit takes the 6-byte hole, first fit the 12-byte one.
  auto holes = problem_of({buffer(1, 20, {{0, 10}}), buffer(2, 12, {{0, 2}}), buffer(3, 10, {{0, 10}}),
                           buffer(4, 6, {{0, 2}}), buffer(5, 5, {{0, 10}}), buffer(6, 4, {{5, 9}})});
  auto best_fit = smartpool->plan(holes, {});
  CHECK(best_fit.offsets == std::vector<std::uint64_t>{0, 20, 32, 42, 48, 42});
  CHECK(best_fit.pool_size == 53);
  auto first_fit = mp::find_algorithm("smartpool-ff")->plan(holes, {});
  CHECK(first_fit.offsets == std::vector<std::uint64_t>{0, 20, 32, 42, 48, 20});
  mp::PlanOptions ff;
  ff.first_fit = true;
  CHECK(smartpool->plan(holes, ff).offsets == first_fit.offsets);
  // Cross-iteration buffers: placed first, region doubled, the rest above it.
  auto cross = problem_of(
      {buffer(1, 100, {{0, 3}, {8, 10}}, 1, true), buffer(2, 50, {{2, 9}}), buffer(3, 40, {{4, 6}}, 1, true)});
  auto cp = smartpool->plan(cross, {});
  CHECK(cp.offsets[0] == 0);
  CHECK(cp.offsets[2] == 0);  // 3 does not conflict with 1: shares its slot
  CHECK(cp.offsets[1] == 200);
  CHECK(cp.pool_size == 250);
  CHECK(mp::validate(cross, cp).valid);
}

TEST_CASE("best: buffers live throughout are stacked below the rest", "[planner][optimal]") {
  // Two weights live over the whole window, activations in between: the weights take the
  // bottom 300 bytes and the rest is solved above them, at LB.
  auto p = problem_of({buffer(1, 100, {{0, 10}}), buffer(2, 50, {{2, 4}}), buffer(3, 200, {{0, 10}}),
                       buffer(4, 50, {{3, 8}}), buffer(5, 60, {{4, 9}}), buffer(6, 40, {{8, 10}})});
  const auto placement = mp::find_algorithm("best")->plan(p, {});
  REQUIRE(mp::validate(p, placement).valid);
  CHECK(placement.pool_size == mp::lower_bound(p));
  CHECK(placement.offsets[0] < 300);
  CHECK(placement.offsets[2] < 300);
  for (std::size_t i : {1, 3, 4, 5}) CHECK(placement.offsets[i] >= 300);
}
