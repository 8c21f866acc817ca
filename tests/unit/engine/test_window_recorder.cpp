// WindowRecorder: entries in allocation order, wrap view, what passes through, accesses.
#include <catch2/catch.hpp>

#include "memtool/engine/window_recorder.hpp"
#include "memtool/planner/placement.hpp"

using namespace memtool::engine;

namespace {
// One tick per allocation or free, as an allocation-only program would give the observer.
struct Ticker {
  explicit Ticker(std::uint64_t retain, bool accesses = false) : r(retain, accesses) {}
  std::uint64_t on_alloc(std::uint64_t size, MemoryKind kind, StreamId stream) {
    return r.on_alloc(t++, size, kind, stream, 0);
  }
  void on_free(std::uint64_t id) { r.on_free(id, t++); }
  std::optional<IterationWindow> window(std::uint64_t begin, std::uint64_t period, std::uint64_t alignment) const {
    return r.window(begin, period, 0, alignment);
  }
  [[nodiscard]] std::size_t retained() const { return r.retained(); }
  WindowRecorder r;
  std::uint64_t t = 0;
};
}  // namespace

TEST_CASE("window of one iteration in the wrap view", "[engine][windows]") {
  Ticker r(1000);
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

TEST_CASE("never-freed and unpoolable kinds pass through; long-lived get slots", "[engine][windows]") {
  Ticker r(1000);
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
  CHECK(w->entries[2].slots == 2);    // alloc at 3, freed at 6 + 5: L = 8
  CHECK_FALSE(w->entries[3].pooled);  // needs more than kMaxSlots slots
  REQUIRE(w->problem.buffers.size() == 2);
  for (const auto& b : w->problem.buffers) {
    CHECK(b.intervals == std::vector<memtool::trace::LiveInterval>{{0, 6}});
    CHECK(b.crosses_iteration);
  }
}

TEST_CASE("records older than the retention are dropped", "[engine][windows]") {
  Ticker r(8);
  for (int i = 0; i < 100; ++i) r.on_free(r.on_alloc(10, MemoryKind::device, 0));
  CHECK(r.retained() <= 5);
  CHECK_FALSE(r.window(10, 4, 512));
  CHECK(r.window(196, 4, 512));
}

TEST_CASE("windows of one owner only, with the accesses of their buffers", "[engine][windows]") {
  WindowRecorder r(1000, true);
  // Two contexts interleaved; owner 1's buffer is touched twice inside the window, once after.
  const auto a = r.on_alloc(10, 4096, MemoryKind::device, 5, 0);
  const auto b = r.on_alloc(11, 512, MemoryKind::async, 6, 1);
  r.on_access(b, 12, 6, AccessKind::launch);
  r.on_access(a, 13, 5, AccessKind::copy);
  r.on_access(b, 14, 7, AccessKind::memset);
  r.on_free(b, 15);
  r.on_access(b, 16, 6, AccessKind::launch);  // after the free: not this buffer's any more
  r.on_free(a, 17);
  const auto w = r.window(10, 8, 1, 512);
  REQUIRE(w);
  CHECK(w->owner == 1);
  CHECK(w->accesses_recorded);
  REQUIRE(w->entries.size() == 1);
  const WindowEntry& e = w->entries[0];
  CHECK(e.alloc_tick == 1);
  CHECK(e.free_tick == 5);
  REQUIRE(e.accesses.size() == 2);
  CHECK(e.accesses[0].tick == 2);
  CHECK(e.accesses[0].stream == 6);
  CHECK(e.accesses[1].kind == AccessKind::memset);
  CHECK(e.accesses[1].stream == 7);
  const auto other = r.window(10, 8, 0, 512);
  REQUIRE(other);
  REQUIRE(other->entries.size() == 1);
  CHECK(other->entries[0].accesses.size() == 1);
}
