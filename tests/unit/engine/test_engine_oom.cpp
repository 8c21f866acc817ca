// Out of memory: the real allocator's status reaches the caller unchanged, the pool's own
// allocation failing falls back (and finally disables pool mode), and nothing leaks.
#include <catch2/catch.hpp>

#include "memtool/pool/engine.hpp"
#include "program.hpp"

using namespace memtool::pool;
using namespace memtool::pool::test;

TEST_CASE("fallback OOM while observing returns the status and records nothing", "[pool][oom]") {
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

TEST_CASE("pool allocation failure falls back, then disables pool mode", "[pool][oom]") {
  // No single allocation may exceed the largest buffer: the pool never fits.
  SimDevice d(SimDevice::Options{std::uint64_t{1} << 30, 128 * kUnit});
  PoolEngine engine(d, sync_options());
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 40; ++it) mlp.iteration(p, 8);  // LB > 128 units
  const Summary s = engine.summary();
  CHECK(s.pool_alloc_failures == 3);
  CHECK(engine.state() == EngineState::disabled);
  CHECK(s.allocs_from_pool == 0);
  CHECK(s.pool_bytes == 0);
  CHECK(p.corrupted == 0);
  mlp.teardown(p);
  CHECK(p.failed_frees == 0);
  CHECK(d.live_bytes() == 0);
  CHECK(engine.mem_info().pool_reserved == 0);
}

TEST_CASE_METHOD(EngineRig, "OOM of the fallback while applying", "[pool][oom]") {
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 8; ++it) mlp.iteration(p, 4);
  REQUIRE(engine.state() == EngineState::apply);
  const auto used = d.live_bytes();
  d.set_capacity(used + 4 * kUnit);
  // Not in the plan → the real allocator, which is out of memory.
  DevicePtr ptr = 0;
  CHECK(engine.allocate(64 * kUnit, MemoryKind::device, 0, &ptr) == kOutOfMemory);
  CHECK(d.live_bytes() == used);
  // The planned iteration needs no new device memory: it still runs from the pool.
  const auto from_pool = engine.summary().allocs_from_pool;
  for (int it = 0; it < 3; ++it) mlp.iteration(p, 4);
  CHECK(engine.summary().allocs_from_pool >= from_pool + 3 * 9);
  CHECK(d.live_bytes() == used);
  mlp.teardown(p);
  CHECK(p.corrupted == 0);
  CHECK(p.failed_frees == 0);
  engine.shutdown();
  CHECK(d.live_bytes() == 0);
}

TEST_CASE_METHOD(EngineRig, "shutdown with a live pooled buffer keeps the pool until it is freed",
                 "[pool][oom]") {
  ConvNet net;
  net.setup(p);
  for (int it = 0; it < 12; ++it) net.iteration(p, 1);
  REQUIRE(engine.state() == EngineState::apply);
  engine.shutdown();  // the prefetched batch lives in the pool
  CHECK(engine.mem_info().pool_reserved > 0);
  net.teardown(p);  // verifies the prefetched batch: the pool was not freed under it
  CHECK(p.corrupted == 0);
  CHECK(engine.mem_info().pool_reserved == 0);
  CHECK(d.live_bytes() == 0);
  CHECK(engine.state() == EngineState::disabled);
}
