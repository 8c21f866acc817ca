// Gaps, the base timeline, live bytes and the input checks.
#include <catch2/catch.hpp>

#include "iteration_builder.hpp"
#include "memtool/swapper/candidates.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::ops_of;

TEST_CASE("gaps are the idle stretches between consecutive accesses", "[swapper][candidates]") {
  ms::Iteration it = ops_of(10, 100);
  const std::uint32_t a = add_buffer(it, 64, 0, 9, {0, 1, 5, 9});  // 0-1 adjacent: no gap
  const std::uint32_t p = add_persistent(it, 64, {2, 6});          // plus the wrap gap 6 -> 12
  const std::uint32_t x = add_buffer(it, 64, 7, 3, {1, 3, 8});     // crosses: lifetime 7..9, then 0..3
  const std::uint32_t u = add_buffer(it, 64, 0, 9, {0, 9});
  it.buffers[u].swappable = false;
  REQUIRE(ms::validate(it).empty());

  const std::vector<ms::Gap> gaps = ms::find_gaps(it);
  const std::vector<ms::Gap> expected{
      {a, 1, 1, 5},  {a, 2, 5, 9},  {p, 0, 2, 6},
      {p, 1, 6, 12}, {x, 2, 8, 11}, {x, 0, 11, 13},  // access 8, then op 1 and op 3 of the next iteration
  };
  CHECK(gaps == expected);
  CHECK(gaps[3].wraps(it.ops.size()));
  CHECK_FALSE(gaps[0].wraps(it.ops.size()));
}

TEST_CASE("the base timeline unrolls into the next iteration", "[swapper][candidates]") {
  ms::Iteration it = ops_of(3, 0);
  it.ops[0].duration_ns = 10;
  it.ops[1].duration_ns = 20;
  it.ops[2].duration_ns = 30;
  const ms::BaseTimeline t(it);
  CHECK(t.period_ns() == 60);
  CHECK(t.start(1) == 10);
  CHECK(t.end(1) == 30);
  CHECK(t.start(4) == 70);
  CHECK(t.end(5) == 120);
  CHECK(t.idle_ns({0, 0, 0, 4}) == 60);  // from the end of op 0 to the start of op 1 next time
  CHECK(t.op_at(35, 0, 5) == 2);
  CHECK(t.op_at(70, 0, 5) == 4);
  CHECK(t.op_at(5, 1, 5) == 1);  // clamped to the first
}

TEST_CASE("live bytes per op, persistent and crossing buffers included", "[swapper][candidates]") {
  ms::Iteration it = ops_of(4, 1);
  add_persistent(it, 1000, {1});
  add_buffer(it, 10, 1, 2, {1, 2});
  add_buffer(it, 100, 3, 0, {3, 0});  // live during op 3 and, its previous copy, op 0
  CHECK(ms::live_bytes_per_op(it) == std::vector<std::uint64_t>{1100, 1010, 1010, 1100});
  CHECK(ms::plain_peak_bytes(it) == 1100);
  CHECK(ms::base_time_ns(it) == 4);
}

TEST_CASE("malformed iterations and links are reported", "[swapper][candidates]") {
  ms::Iteration it = ops_of(4, 1);
  add_buffer(it, 10, 1, 2, {1, 2});
  CHECK(ms::validate(it).empty());
  ms::Iteration unsorted = it;
  unsorted.buffers[0].accesses = {{2, ms::AccessMode::read}, {1, ms::AccessMode::read}};
  CHECK_FALSE(ms::validate(unsorted).empty());
  ms::Iteration dead = it;
  dead.buffers[0].accesses = {{3, ms::AccessMode::read}};  // not live at op 3
  CHECK_FALSE(ms::validate(dead).empty());
  ms::Iteration outside = it;
  outside.buffers[0].free_after_op = 4;
  CHECK_FALSE(ms::validate(outside).empty());
  ms::Iteration empty_buffer = it;
  empty_buffer.buffers[0].size = 0;
  CHECK_FALSE(ms::validate(empty_buffer).empty());

  ms::Link link;
  CHECK(ms::validate(link).empty());
  link.duplex_factor = 0.5;
  CHECK_FALSE(ms::validate(link).empty());
  link.duplex_factor = 1;
  link.h2d_bytes_per_ns = 0;
  CHECK_FALSE(ms::validate(link).empty());
  CHECK(ms::Link{}.d2h_ns(55'000) == Approx(6'000));  // 5 us + 1 us at 55 GB/s
}
