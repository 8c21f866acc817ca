// The planner on the checked-in real problems (tests/fixtures): every algorithm valid, best at
// least as good as every heuristic, within 1% of LB on every real training iteration and at LB
// on those where it gets there (the budget is counted in work, so this holds on any machine).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "memtool/planner/algorithm.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

TEST_CASE("fixtures: all algorithms valid, best reaches LB on real iterations", "[planner][fixtures]") {
  const std::string dir = MEMTOOL_FIXTURES_DIR;
  const std::pair<const char*, bool> fixtures[] = {{"traces/alexnet.iter3.csv", true},
                                                   {"traces/lstm.iter3.csv", true},
                                                   {"traces/mobilenet_v2.iter3.csv", false},
                                                   {"planner/somas-resnet50.csv", true},
                                                   {"planner/iopddl-G_1.csv", true}};
  for (const auto& [name, reaches_lb] : fixtures) {
    DYNAMIC_SECTION(name) {
      const auto p = memtool::trace::read_problem_csv(dir + "/" + name);
      REQUIRE(p.buffers.size() > 100);
      const std::uint64_t lb = mp::lower_bound(p);
      mp::PlanOptions o;
      o.time_limit_seconds = 0.5;
      std::uint64_t best_heuristic = UINT64_MAX;  // best of the others (smartpool included)
      for (const auto* algo : mp::algorithms()) {
        const auto placement = algo->plan(p, o);
        INFO(algo->name());
        REQUIRE(mp::validate(p, placement).valid);
        REQUIRE(placement.pool_size >= lb);
        if (algo->name() != "best") best_heuristic = std::min(best_heuristic, placement.pool_size);
        if (algo->name() == "best") {
          CHECK(placement.pool_size <= best_heuristic);
          CHECK(static_cast<double>(placement.pool_size) <= 1.01 * static_cast<double>(lb));
          if (reaches_lb) CHECK(placement.pool_size == lb);
        }
      }
    }
  }
}

TEST_CASE("fixtures: a MiniMalloc challenging problem stays valid under search", "[planner][fixtures]") {
  const auto p =
      memtool::trace::read_problem_csv(std::string(MEMTOOL_FIXTURES_DIR) + "/planner/minimalloc-challenging-A.csv");
  mp::PlanOptions o;
  o.time_limit_seconds = 0.2;
  const auto best = mp::find_algorithm("best")->plan(p, o);
  REQUIRE(mp::validate(p, best).valid);
  CHECK(best.pool_size < mp::find_algorithm("greedy-size")->plan(p, o).pool_size);
}

TEST_CASE("fixtures: best meets MiniMalloc's capacity, 1 MiB, on its whole challenging set with the default budget",
          "[planner][fixtures]") {
  // MiniMalloc's own benchmark: capacity 1,048,576 on all 11 (its published times: 0.6-5.4 s
  // each). Without being told the capacity `best` gets there through LB (A, B, E-I, K: LB is
  // 1 MiB) or its descending searches (C, D, J). The budget is counted in work, so this holds on
  // any machine; about 0.1-1 s each.
  for (const char* name : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"}) {
    DYNAMIC_SECTION(name) {
      const auto p = memtool::trace::read_problem_csv(
          fmt::format("{}/planner/minimalloc-challenging-{}.csv", MEMTOOL_FIXTURES_DIR, name));
      const auto best = mp::find_algorithm("best")->plan(p, mp::PlanOptions{});
      REQUIRE(mp::validate(p, best).valid);
      CHECK(best.pool_size <= 1048576);
      if (mp::lower_bound(p) == 1048576) CHECK(best.pool_size == 1048576);
    }
  }
}

TEST_CASE("fixtures: best given the capacity decides there first", "[planner][fixtures]") {
  const auto p =
      memtool::trace::read_problem_csv(std::string(MEMTOOL_FIXTURES_DIR) + "/planner/minimalloc-challenging-D.csv");
  mp::PlanOptions o;
  o.time_limit_seconds = 0.3;  // too little to get there without the capacity
  const auto without = mp::find_algorithm("best")->plan(p, o);
  o.capacity_bytes = 1048576;
  const auto with = mp::find_algorithm("best")->plan(p, o);
  REQUIRE(mp::validate(p, with).valid);
  CHECK(with.pool_size <= 1048576);
  CHECK(without.pool_size > 1048576);
  // A capacity below LB cannot be met: the plan is the best found, larger.
  o.capacity_bytes = mp::lower_bound(p) - 1;
  const auto impossible = mp::find_algorithm("best")->plan(p, o);
  REQUIRE(mp::validate(p, impossible).valid);
  CHECK(impossible.pool_size >= mp::lower_bound(p));
}
