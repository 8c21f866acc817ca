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
  const std::pair<const char*, bool> fixtures[] = {
      {"traces/alexnet.iter3.csv", true},       {"traces/lstm.iter3.csv", true},
      {"traces/mobilenet_v2.iter3.csv", false}, {"planner/somas-resnet50.csv", true},
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
  const auto p = memtool::trace::read_problem_csv(std::string(MEMTOOL_FIXTURES_DIR) + "/planner/minimalloc-challenging-A.csv");
  mp::PlanOptions o;
  o.time_limit_seconds = 0.2;
  const auto best = mp::find_algorithm("best")->plan(p, o);
  REQUIRE(mp::validate(p, best).valid);
  CHECK(best.pool_size < mp::find_algorithm("greedy-size")->plan(p, o).pool_size);
}

TEST_CASE("fixtures: best meets LB on MiniMalloc challenging A, F and H with the default budget", "[planner][fixtures]") {
  // Regression for the exact search (painted section bounds, branch and bound first at LB):
  // before it, `best` stopped 8%, 3% and 3% above LB on these with 1 s. About 0.2–0.5 s each.
  for (const char* name : {"A", "F", "H"}) {
    DYNAMIC_SECTION(name) {
      const auto p = memtool::trace::read_problem_csv(fmt::format("{}/planner/minimalloc-challenging-{}.csv", MEMTOOL_FIXTURES_DIR, name));
      const auto best = mp::find_algorithm("best")->plan(p, mp::PlanOptions{});
      REQUIRE(mp::validate(p, best).valid);
      CHECK(best.pool_size == mp::lower_bound(p));
    }
  }
}
