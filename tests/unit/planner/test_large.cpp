// The planner's properties on large random problems (40 k–100 k buffers, hundreds live at once,
// several intervals per buffer, mixed alignments): every plan valid (no two buffers live at once
// overlap in memory), at least LB, exactly the pool its offsets need, best's too with budgets
// far below one greedy run (its first heuristic cut short, the rest placed by the sweep). A few
// seconds in all: speed and quality at these sizes are measured in bench_planner.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "memtool/planner/algorithm.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

namespace {

void check_valid(const Problem& p, const mp::Placement& placement, const std::string& what) {
  const auto verdict = mp::validate(p, placement);
  INFO(fmt::format("{} on {} buffers: {}", what, p.buffers.size(), verdict.message));
  REQUIRE(verdict.valid);
  CHECK(placement.pool_size >= mp::lower_bound(p));
  CHECK(placement.pool_size == verdict.required_pool);
}

}  // namespace

TEST_CASE("large problems: greedy and best plans valid, best within a tiny budget too", "[planner][large]") {
  const std::vector<std::pair<const char*, RandomShape>> shapes{
      // ~300 live at once, one interval each.
      {"100k, long and short lifetimes", {100000, 200000, 1200, 0, true, false, false}},
      // Up to three intervals sharing an offset, alignments up to 512 B.
      {"40k, multi-interval", {40000, 120000, 300, 0, true, true, false}},
      // Equal sizes: ties everywhere.
      {"60k, equal sizes", {60000, 120000, 200, 1, false, false, false}},
  };
  for (const auto& [name, shape] : shapes) {
    DYNAMIC_SECTION(name) {
      const auto p = random_problem(31337 + shape.buffers, shape);
      const auto first_fit = mp::find_algorithm("smartpool-ff")->plan(p, {});
      check_valid(p, first_fit, "smartpool-ff");
      mp::PlanOptions o;
      o.time_limit_seconds = 0.005;  // far below one greedy run: mostly the sweep
      check_valid(p, mp::find_algorithm("best")->plan(p, o), "best, 5 ms");
      o.time_limit_seconds = 0.05;  // part of a run, the rest by the sweep
      check_valid(p, mp::find_algorithm("best")->plan(p, o), "best, 50 ms");
    }
  }
}
