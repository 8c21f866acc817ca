// The conformance suite every registered algorithm must pass: valid placements on thousands of
// pseudo-random problems of every awkward shape, pool ≥ LB, pool equal to what its offsets
// need (or more, for smartpool's doubled region), same result twice, degenerate inputs, and a
// 100 k-buffer problem.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "memtool/planner/algorithm.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

namespace {

mp::PlanOptions quick() {
  mp::PlanOptions o;
  o.time_limit_seconds = 0.002;
  return o;
}

void check_plan(const mp::Algorithm& algo, const Problem& p, const mp::PlanOptions& options) {
  const auto placement = algo.plan(p, options);
  const auto verdict = mp::validate(p, placement);
  INFO(fmt::format("{} on {} buffers: {}", algo.name(), p.buffers.size(), verdict.message));
  REQUIRE(verdict.valid);
  REQUIRE(placement.pool_size >= mp::lower_bound(p));
  if (algo.name().substr(0, 9) != "smartpool") REQUIRE(placement.pool_size == verdict.required_pool);
}

}  // namespace

TEST_CASE("registry lists every algorithm once, best is the default", "[planner][conformance]") {
  REQUIRE(mp::algorithms().size() >= 9);
  CHECK(mp::find_algorithm(mp::default_algorithm()) != nullptr);
  CHECK(mp::find_algorithm("smartpool") != nullptr);
  CHECK(mp::find_algorithm("no-such-algorithm") == nullptr);
  for (const auto* a : mp::algorithms()) {
    CHECK(mp::find_algorithm(a->name()) == a);
    CHECK_FALSE(a->description().empty());
  }
}

TEST_CASE("every algorithm: valid placements on random problems", "[planner][conformance]") {
  const std::vector<RandomShape> shapes{
      {40, 100, 30, 0, false, false, false}, {60, 60, 60, 0, true, false, false},
      {40, 100, 20, 1, false, false, false}, {40, 80, 25, 2, true, true, false},
      {30, 200, 50, 3, false, true, false},  {50, 100, 30, 4, true, false, true},
      {25, 1000, 1000, 0, true, true, true}, {8, 20, 5, 0, false, true, false},
  };
  for (const auto* algo : mp::algorithms()) {
    DYNAMIC_SECTION(algo->name()) {
      std::uint64_t seed = 1;
      for (int round = 0; round < 150; ++round) {  // 1200 problems per algorithm
        for (const auto& shape : shapes) check_plan(*algo, random_problem(seed++, shape), quick());
      }
    }
  }
}

TEST_CASE("every algorithm: deterministic", "[planner][conformance]") {
  for (const auto* algo : mp::algorithms()) {
    DYNAMIC_SECTION(algo->name()) {
      for (std::uint64_t seed = 100; seed < 110; ++seed) {
        const auto p = random_problem(seed, {300, 400, 60, 0, true, true, true});
        mp::PlanOptions o;
        o.time_limit_seconds = 0.01;
        check_plan(*algo, p, o);
        const auto first = algo->plan(p, o);
        const auto second = algo->plan(p, o);
        CHECK(first.offsets == second.offsets);
        CHECK(first.pool_size == second.pool_size);
      }
    }
  }
}

TEST_CASE("every algorithm: degenerate problems", "[planner][conformance]") {
  for (const auto* algo : mp::algorithms()) {
    DYNAMIC_SECTION(algo->name()) {
      CHECK(algo->plan(problem_of({}), quick()).pool_size == 0);
      check_plan(*algo, problem_of({buffer(1, 0, {{0, 5}}), buffer(2, 7, {}), buffer(3, 9, {{3, 3}})}), quick());
      const auto one = algo->plan(problem_of({buffer(1, 100, {{0, 5}}, 64)}), quick());
      CHECK(one.pool_size == 128);
      CHECK(one.offsets == std::vector<std::uint64_t>{0});
      // All live at once: anything valid is optimal.
      std::vector<memtool::trace::BufferRequest> all;
      for (std::uint64_t i = 0; i < 50; ++i) all.push_back(buffer(i, 10 + i, {{0, 1}}));
      const auto stacked = problem_of(std::move(all));
      CHECK(algo->plan(stacked, quick()).pool_size == mp::lower_bound(stacked));
      // Huge sizes near the 2^62 limit do not overflow.
      check_plan(*algo,
                 problem_of({buffer(1, 1ULL << 60, {{0, 2}}), buffer(2, (1ULL << 60) + 1, {{1, 3}}, 4096),
                             buffer(3, 1, {{2, 4}})}),
                 quick());
    }
  }
}

TEST_CASE("every algorithm: 100k buffers", "[planner][conformance][scale]") {
  const auto p = random_problem(4242, {100000, 400000, 120, 0, true, false, false});
  for (const auto* algo : mp::algorithms()) {
    DYNAMIC_SECTION(algo->name()) {
      mp::PlanOptions o;
      o.time_limit_seconds = 0.05;
      check_plan(*algo, p, o);
    }
  }
}

TEST_CASE("every algorithm: 20k buffers, hundreds live at once", "[planner][conformance][scale]") {
  // Lifetimes up to a thirteenth of the horizon: about 750 buffers live at any time, the shape
  // that made the old greedy quadratic. Larger ones (to 1 M) are in bench_planner.
  const auto p = random_problem(777, {20000, 40000, 3000, 0, true, false, false});
  for (const auto* algo : mp::algorithms()) {
    DYNAMIC_SECTION(algo->name()) {
      mp::PlanOptions o;
      o.time_limit_seconds = 0.05;
      check_plan(*algo, p, o);
    }
  }
}

TEST_CASE("best: a limit too small for one greedy run still gives a plan, within it", "[planner][conformance]") {
  // The first heuristic (first fit by size, SmartPool's order) runs within the budget: what it
  // cannot pay for goes above what it placed, by an O(n log n) sweep. With no budget at all
  // the sweep places everything; with a little, the largest buffers get their gaps first.
  const auto p = random_problem(4243, {30000, 60000, 3000, 0, true, false, false});
  const std::uint64_t lb = mp::lower_bound(p);
  mp::PlanOptions o;
  std::uint64_t previous = UINT64_MAX;
  for (const double limit : {1e-6, 0.002, 0.01}) {
    o.time_limit_seconds = limit;
    const auto best = mp::find_algorithm("best")->plan(p, o);
    INFO(limit);
    const auto verdict = mp::validate(p, best);
    REQUIRE(verdict.valid);
    CHECK(best.pool_size == verdict.required_pool);
    CHECK(best.pool_size >= lb);
    CHECK(best.pool_size <= previous);  // more budget, more of the order placed in gaps
    previous = best.pool_size;
    CHECK(best.offsets == mp::find_algorithm("best")->plan(p, o).offsets);  // deterministic
  }
  // A budget that pays for the first run to its end: at least as good as that heuristic
  // (first fit by size, smartpool-ff's order: there are no cross-iteration buffers).
  const auto smaller = random_problem(4244, {8000, 16000, 800, 0, true, false, false});
  o.time_limit_seconds = 0.1;
  CHECK(mp::find_algorithm("best")->plan(smaller, o).pool_size <=
        mp::find_algorithm("smartpool-ff")->plan(smaller, {}).pool_size);
}
