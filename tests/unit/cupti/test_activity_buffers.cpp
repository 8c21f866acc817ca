// ActivityBuffers: equal buffers, 8-byte aligned, never more than the cap out at once, reused.
#include <catch2/catch.hpp>

#include <cstdint>

#include "activity_buffers.hpp"

using memtool::cupti::detail::ActivityBuffers;

TEST_CASE("activity buffers stop at the cap and are reused", "[cupti][buffers]") {
  ActivityBuffers pool(1000, 2);
  CHECK(pool.bytes() == 1000);
  std::uint8_t* a = pool.take();
  std::uint8_t* b = pool.take();
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 8 == 0);
  CHECK(pool.take() == nullptr);  // the cap: CUPTI drops records rather than us growing
  CHECK(pool.refused() == 1);
  CHECK(pool.out() == 2);
  pool.give_back(a);
  CHECK(pool.out() == 1);
  CHECK(pool.take() == a);  // the same memory again
  pool.give_back(a);
  pool.give_back(b);
  CHECK(pool.out() == 0);
}

TEST_CASE("buffer sizes are rounded to CUPTI's alignment", "[cupti][buffers]") {
  ActivityBuffers pool(1001, 1);
  CHECK(pool.bytes() == 1008);
  ActivityBuffers tiny(0, 0);  // at least one buffer of a usable size
  CHECK(tiny.bytes() >= 64);
  std::uint8_t* only = tiny.take();
  CHECK(only != nullptr);
  tiny.give_back(only);
}
