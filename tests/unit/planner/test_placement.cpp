// The lower bound and the validity checker, on hand-checked problems: the checker must reject
// every kind of invalid placement, since the conformance suite trusts it.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "memtool/planner/placement.hpp"
#include "problem_builders.hpp"

using namespace planner_test;
using memtool::planner::lower_bound;
using memtool::planner::Placement;
using memtool::planner::validate;

TEST_CASE("lower bound is the peak of live footprints, frees before allocations", "[planner][placement]") {
  auto p = problem_of({buffer(1, 100, {{0, 10}}), buffer(2, 50, {{5, 15}}), buffer(3, 70, {{10, 20}})});
  CHECK(lower_bound(p) == 150);  // [5,10): 1+2; at 10 buffer 1 is gone before 3 arrives (120)
  auto aligned = problem_of({buffer(1, 100, {{0, 10}}, 64), buffer(2, 1, {{0, 10}}, 256)});
  CHECK(lower_bound(aligned) == 128 + 256);
  CHECK(lower_bound(problem_of({})) == 0);
  // Several intervals of one buffer count once at a time; overlapping ones are merged.
  auto multi = problem_of({buffer(1, 10, {{0, 5}, {3, 8}, {20, 30}}), buffer(2, 5, {{25, 26}})});
  CHECK(lower_bound(multi) == 15);
  // Empty intervals and zero sizes occupy nothing.
  CHECK(lower_bound(problem_of({buffer(1, 10, {{4, 4}}), buffer(2, 0, {{0, 9}})})) == 0);
}

TEST_CASE("malformed problems are rejected", "[planner][placement]") {
  CHECK_THROWS_AS(lower_bound(problem_of({buffer(1, 10, {{0, 1}}, 3)})), std::invalid_argument);
  CHECK_THROWS_AS(lower_bound(problem_of({buffer(1, 10, {{0, 1}}, 0)})), std::invalid_argument);
  CHECK_THROWS_AS(lower_bound(problem_of({buffer(1, UINT64_MAX, {{0, 1}})})), std::invalid_argument);
  CHECK_THROWS_AS(lower_bound(problem_of({buffer(1, 1ULL << 62, {{0, 1}}), buffer(2, 1ULL << 62, {{0, 1}})})),
                  std::invalid_argument);
}

TEST_CASE("validity checker accepts valid and rejects invalid placements", "[planner][placement]") {
  auto p = problem_of({buffer(1, 100, {{0, 10}}), buffer(2, 50, {{5, 15}}), buffer(3, 70, {{10, 20}}, 8)});
  SECTION("valid: touching in time may share memory") {
    auto r = validate(p, Placement{{0, 100, 0}, 150});
    CHECK(r.valid);
    CHECK(r.message.empty());
    CHECK(r.required_pool == 150);
  }
  SECTION("overlap in memory while both live") {
    auto r = validate(p, Placement{{0, 99, 0}, 150});
    CHECK_FALSE(r.valid);
    CHECK(r.message.find("overlap") != std::string::npos);
  }
  SECTION("overlap found against the lower neighbour too") {
    auto r = validate(p, Placement{{0, 60, 200}, 300});
    CHECK_FALSE(r.valid);
  }
  SECTION("same offset") { CHECK_FALSE(validate(p, Placement{{0, 0, 200}, 300}).valid); }
  SECTION("misaligned offset") {
    auto r = validate(p, Placement{{0, 100, 3}, 150});
    CHECK_FALSE(r.valid);
    CHECK(r.message.find("alignment") != std::string::npos);
  }
  SECTION("pool too small") { CHECK_FALSE(validate(p, Placement{{0, 100, 0}, 149}).valid); }
  SECTION("wrong number of offsets") { CHECK_FALSE(validate(p, Placement{{0, 100}, 150}).valid); }
  SECTION("offset overflow") { CHECK_FALSE(validate(p, Placement{{UINT64_MAX - 10, 100, 0}, UINT64_MAX}).valid); }
}

TEST_CASE("validity checker: multi-interval buffers keep one offset for all intervals", "[planner][placement]") {
  // Buffer 1 is live twice; buffer 2 lives in the gap and may share its memory, buffer 3 may not.
  auto p = problem_of({buffer(1, 64, {{0, 10}, {20, 30}}), buffer(2, 64, {{10, 20}}), buffer(3, 64, {{25, 40}})});
  CHECK(validate(p, Placement{{0, 0, 64}, 128}).valid);
  CHECK_FALSE(validate(p, Placement{{0, 0, 0}, 128}).valid);
  // Footprints round up to alignment: a 1-byte buffer aligned to 64 owns 64 bytes.
  auto q = problem_of({buffer(1, 1, {{0, 10}}, 64), buffer(2, 1, {{0, 10}}, 1)});
  CHECK_FALSE(validate(q, Placement{{0, 1}, 65}).valid);
  CHECK(validate(q, Placement{{0, 64}, 65}).valid);
}

TEST_CASE("validity checker handles many live buffers (no pairwise scan needed)", "[planner][placement]") {
  std::vector<memtool::trace::BufferRequest> buffers;
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    buffers.push_back(buffer(i, 16, {{i % 100, 100 + i % 50}}));
    offsets.push_back(i * 16);
  }
  auto p = problem_of(std::move(buffers));
  CHECK(validate(p, Placement{offsets, 20000 * 16}).valid);
  offsets[12345] = offsets[777] + 8;
  CHECK_FALSE(validate(p, Placement{offsets, 20000 * 16}).valid);
}
