// Out of memory: the real allocator's status reaches the caller unchanged, the pool's own
// allocation failing falls back (and finally disables pool mode), and nothing leaks.
#include <catch2/catch.hpp>

#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

TEST_CASE("fallback OOM while observing returns the status and records nothing", "[engine][oom]") {
  SimDevice d(SimDevice::Options{1 << 20, ~std::uint64_t{0}});
  PoolEngine engine(d, sync_options());
  DevicePtr ptr = 0xdead;
  CHECK(engine.allocate(2 << 20, MemoryKind::device, 0, &ptr) == kOutOfMemory);
  CHECK(ptr == 0xdead);
  CHECK(engine.allocate(1 << 19, MemoryKind::async, 3, &ptr) == kSuccess);
  CHECK(engine.mem_info().passed_through_live == 1 << 19);
  CHECK(engine.summary().allocs_passed_through == 1);
  CHECK(engine.release(ptr, MemoryKind::async, 3) == kSuccess);
  CHECK(engine.release(ptr, MemoryKind::async, 3) == kInvalidValue);  // the driver's answer
  CHECK(engine.allocate(1, MemoryKind::device, 0, nullptr) == kInvalidValue);
  CHECK(d.live_bytes() == 0);
}

TEST_CASE("pool allocation failure falls back, then disables pool mode", "[engine][oom]") {
  // No single allocation may exceed the largest buffer: the pool never fits.
  SimDevice d(SimDevice::Options{std::uint64_t{1} << 30, 128 * kUnit});
  PoolEngine engine(d, sync_options());
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 40; ++it) mlp.iteration(p, 8);  // LB > 128 units
  const Summary s = engine.summary();
  CHECK(s.pool_alloc_failures == 3);
  CHECK(engine.state() == "disabled");
  CHECK(s.allocs_from_pool == 0);
  CHECK(s.pool_bytes == 0);
  CHECK(p.corrupted == 0);
  mlp.teardown(p);
  CHECK(p.failed_frees == 0);
  CHECK(d.live_bytes() == 0);
  CHECK(engine.mem_info().pool_reserved == 0);
}

TEST_CASE_METHOD(EngineRig, "OOM of the fallback while applying: the pool's free space serves it", "[engine][oom]") {
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 8; ++it) mlp.iteration(p, 4);
  REQUIRE(engine.state() == "apply");
  const auto used = d.live_bytes();
  d.set_capacity(used + 4 * kUnit);
  // Not in the plan, and the device is full — but between iterations the pool is idle, and the
  // program would have had that memory without memtool: the request is served from it.
  DevicePtr extra = 0;
  REQUIRE(engine.allocate(64 * kUnit, MemoryKind::device, 0, &extra) == kSuccess);
  CHECK(d.live_bytes() == used);
  CHECK(engine.summary().pool_reclaims == 1);
  // While it lives, the iteration does not fit (as it would not without memtool): allocations
  // fail with the driver's status, nothing is corrupted, nothing overlaps.
  std::uint64_t failures = 0;
  std::vector<Buffer> held;
  for (int i = 0; i < 9; ++i) {
    if (auto b = p.alloc(16 * kUnit, 7)) {
      held.push_back(*b);
    } else {
      CHECK(p.last_status() == kOutOfMemory);
      ++failures;
    }
  }
  CHECK(failures > 0);
  for (const Buffer& b : held) p.free(b);
  REQUIRE(engine.release(extra, MemoryKind::device, 0) == kSuccess);
  // Freed: whole iterations run again, without new device memory.
  for (int it = 0; it < 6; ++it) mlp.iteration(p, 4);
  CHECK(engine.summary().allocs_from_pool > 0);
  CHECK(d.live_bytes() <= used);
  mlp.teardown(p);
  CHECK(p.corrupted == 0);
  CHECK(p.overlaps == 0);
  CHECK(p.failed_frees == 0);
  engine.shutdown();
  CHECK(d.live_bytes() == 0);
}

TEST_CASE_METHOD(EngineRig, "a pass-through allocation that does not fit takes back an idle pool", "[engine][oom]") {
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 8; ++it) mlp.iteration(p, 4);
  REQUIRE(engine.state() == "apply");
  const auto pool = engine.summary().pool_bytes;
  REQUIRE(pool > 0);
  const auto used = d.live_bytes();
  d.set_capacity(used);
  // Bigger than the pool: no gap can hold it; without memtool the device would have the pool's
  // bytes free, so the idle pool is given back and the request succeeds.
  DevicePtr big = 0;
  REQUIRE(engine.allocate(pool + 4 * kUnit, MemoryKind::device, 0, &big) == kOutOfMemory);
  d.set_capacity(used + 4 * kUnit);
  REQUIRE(engine.allocate(pool + 4 * kUnit, MemoryKind::device, 0, &big) == kSuccess);
  CHECK(engine.mem_info().pool_reserved == 0);
  CHECK(engine.summary().pool_reclaims >= 1);
  REQUIRE(engine.release(big, MemoryKind::device, 0) == kSuccess);
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE_METHOD(EngineRig, "shutdown with a live pooled buffer keeps the pool until it is freed", "[engine][oom]") {
  ConvNet net;
  net.setup(p);
  for (int it = 0; it < 12; ++it) net.iteration(p, 1);
  REQUIRE(engine.state() == "apply");
  engine.shutdown();  // the prefetched batch lives in the pool
  CHECK(engine.mem_info().pool_reserved > 0);
  net.teardown(p);  // verifies the prefetched batch: the pool was not freed under it
  CHECK(p.corrupted == 0);
  CHECK(engine.mem_info().pool_reserved == 0);
  CHECK(d.live_bytes() == 0);
  CHECK(engine.state() == "disabled");
}
