// SteadyStateRecorder: entries in allocation order, wrap view, what passes through.
#include <catch2/catch.hpp>

#include "memtool/planner/placement.hpp"
#include "memtool/pool/steady_state.hpp"

using namespace memtool::pool;

TEST_CASE("window of one iteration in the wrap view", "[pool][recorder]") {
  SteadyStateRecorder r(1000);
  const auto weights = r.on_alloc(4096, MemoryKind::device, 0);  // tick 0, never freed
  (void)weights;
  std::uint64_t carried = r.on_alloc(100, MemoryKind::device, 3);  // tick 1, the iteration -1 copy
  for (int it = 0; it < 3; ++it) {
    // period 6: a(2) b(3) free a(4) free carried(5) c=next carried(6)... laid out below.
    const auto a = r.on_alloc(1000, MemoryKind::device, 0);
    const auto b = r.on_alloc(2000, MemoryKind::async, 9);
    r.on_free(a);
    r.on_free(carried);
    carried = r.on_alloc(100, MemoryKind::device, 3);
    r.on_free(b);
  }
  // Iterations start at ticks 2, 8, 14. Take the one at 8.
  auto w = r.window(8, 6, 256);
  REQUIRE(w);
  REQUIRE(w->entries.size() == 3);
  CHECK(w->entries[0].size == 1000);
  CHECK(w->entries[1].kind == MemoryKind::async);
  CHECK(w->entries[1].stream == 9);
  CHECK(w->entries[2].stream == 3);
  REQUIRE(w->problem.buffers.size() == 3);
  const auto& a = w->problem.buffers[0];
  CHECK(a.intervals == std::vector<memtool::trace::LiveInterval>{{0, 2}});
  const auto& c = w->problem.buffers[w->entries[2].problem_index];
  // Allocated at 12 (offset 4), freed at 17 (offset 9 → wraps to 3).
  CHECK(c.crosses_iteration);
  CHECK(c.intervals == std::vector<memtool::trace::LiveInterval>{{0, 3}, {4, 6}});
  CHECK(c.alignment == 256);
  CHECK(memtool::planner::lower_bound(w->problem) > 0);
  // Too old or not yet recorded.
  CHECK_FALSE(r.window(1, 0, 256));
}

TEST_CASE("never-freed and unpoolable kinds pass through; long-lived get slots",
          "[pool][recorder]") {
  SteadyStateRecorder r(1000);
  std::uint64_t long_lived = r.on_alloc(64, MemoryKind::device, 0);
  std::vector<std::uint64_t> very_long;
  for (int it = 0; it < 8; ++it) {
    const auto leak = r.on_alloc(10, MemoryKind::device, 0);
    (void)leak;
    const auto managed = r.on_alloc(20, MemoryKind::managed, 0);
    const auto next = r.on_alloc(64, MemoryKind::device, 0);
    very_long.push_back(r.on_alloc(30, MemoryKind::device, 0));
    r.on_free(managed);
    // Freed in the next iteration, later than its own position: lives longer than a period.
    r.on_free(long_lived);
    long_lived = next;
    if (it >= 5) r.on_free(very_long[static_cast<std::size_t>(it - 5)]);  // 5 periods
  }
  auto w = r.window(13, 6, 512);  // iteration 2: ticks 13..18
  REQUIRE(w);
  REQUIRE(w->entries.size() == 4);
  CHECK_FALSE(w->entries[0].pooled);  // leak
  CHECK_FALSE(w->entries[1].pooled);  // managed
  REQUIRE(w->entries[2].pooled);
  CHECK(w->entries[2].slots == 2);  // alloc at 3, freed at 6 + 5: L = 8
  CHECK_FALSE(w->entries[3].pooled);  // needs more than kMaxSlots slots
  REQUIRE(w->problem.buffers.size() == 2);
  for (const auto& b : w->problem.buffers) {
    CHECK(b.intervals == std::vector<memtool::trace::LiveInterval>{{0, 6}});
    CHECK(b.crosses_iteration);
  }
}

TEST_CASE("records older than the retention are dropped", "[pool][recorder]") {
  SteadyStateRecorder r(8);
  for (int i = 0; i < 100; ++i) r.on_free(r.on_alloc(10, MemoryKind::device, 0));
  CHECK(r.retained() <= 5);
  CHECK_FALSE(r.window(10, 4, 512));
  CHECK(r.window(196, 4, 512));
  r.reset();
  CHECK(r.retained() == 0);
  CHECK(r.ticks() == 200);
}
