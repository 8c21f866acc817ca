// PoolArena: the occupancy check (invariant 1) and release records that follow a range.
#include <catch2/catch.hpp>

#include "pool_arena.hpp"

using namespace memtool::engine;

TEST_CASE("arena refuses ranges overlapping a live one", "[engine][arena]") {
  PoolArena arena(0x1000, 4096);
  CHECK(arena.range_free(0, 4096));
  CHECK_FALSE(arena.range_free(0, 4097));
  CHECK_FALSE(arena.range_free(4096, 1));
  CHECK_FALSE(arena.range_free(100, 0));
  arena.occupy(1024, 512);
  CHECK(arena.range_free(0, 1024));
  CHECK(arena.range_free(1536, 2560));
  CHECK_FALSE(arena.range_free(0, 1025));
  CHECK_FALSE(arena.range_free(1535, 10));
  CHECK_FALSE(arena.range_free(1100, 10));
  CHECK_FALSE(arena.range_free(0, 4096));
  CHECK(arena.live_count() == 1);
  CHECK(arena.live_bytes() == 512);
  auto r = arena.live_range_at(0x1000 + 1300);
  REQUIRE(r);
  CHECK(r->first == 1024);
  CHECK(r->second == 512);
  CHECK_FALSE(arena.live_range_at(0x1000 + 1536));
  CHECK_FALSE(arena.live_range_at(0x0fff));
  CHECK(arena.release(1024, nullptr));
  CHECK_FALSE(arena.release(1024, nullptr));
  CHECK(arena.range_free(0, 4096));
  CHECK(arena.live_bytes() == 0);
}

TEST_CASE("release records are inherited by overlapping hand-outs and split", "[engine][arena]") {
  PoolArena arena(0, 4096);
  arena.occupy(0, 2048);
  auto events = std::make_shared<ReleaseEvents>();
  events->events.emplace_back(5, 99);
  arena.release(0, events);
  CHECK(arena.release_records() == 1);
  // A buffer in the middle inherits it; the parts either side keep it.
  auto inherited = arena.occupy(512, 512);
  REQUIRE(inherited.size() == 1);
  CHECK(inherited[0]->events[0].second == 99);
  CHECK(arena.release_records() == 2);
  CHECK(arena.occupy(0, 256).size() == 1);
  CHECK(arena.occupy(1024, 1024).size() == 1);
  CHECK(arena.release_records() == 1);  // [256, 512) is left
  CHECK(arena.occupy(2048, 2048).empty());
  CHECK(arena.occupy(256, 256).size() == 1);
  CHECK(arena.release_records() == 0);
}
