// The alloc/free order in which the baseline allocators (engine resources, tested in
// tests/unit/engine/test_baselines.cpp) replay a problem.
#include <catch2/catch.hpp>

#include "memtool/planner/allocation_sequence.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
namespace mp = memtool::planner;

TEST_CASE("allocation order: frees before allocations at one time, reallocation per interval", "[planner][baselines]") {
  auto p = problem_of({buffer(1, 10, {{0, 5}, {7, 9}}), buffer(2, 20, {{5, 7}})});
  const auto events = mp::allocation_sequence(p);
  REQUIRE(events.size() == 6);
  CHECK((events[0].allocate && events[0].buffer == 0));
  CHECK((!events[1].allocate && events[1].buffer == 0));  // t=5: free 0 before alloc 1
  CHECK((events[2].allocate && events[2].buffer == 1));
  CHECK((!events[3].allocate && events[3].buffer == 1));
  CHECK((events[4].allocate && events[4].buffer == 0 && events[4].size == 10));
}
