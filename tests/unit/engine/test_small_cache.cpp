// The swap strategy's cache for the cuMemAlloc buffers it does not swap (small_cache.hpp), on
// the simulated device, whose vector clocks count any access not ordered after the last user of
// its bytes: a free waits for the program's streams (what it can see of cuMemFree's device-wide
// synchronization) and its block is reused without a driver call, safely from another stream;
// an exported block is refused and its size goes
// to the driver from then on; everything else passes straight through.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/engine/sim_device.hpp"
#include "small_cache_rig.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = KiB * KiB;

using CacheRig = test::SmallCacheRig<SimDevice>;

}  // namespace

TEST_CASE("small cache: a freed block comes back without the driver, ordered after its last user",
          "[engine][swap][small_cache]") {
  CacheRig rig;
  const StreamId s1 = 1;
  const StreamId s2 = 2;
  // s2 has run work before (its clock is its own); the program's work then runs on s1, so its
  // blocks are s1's (PyTorch's current stream).
  const DevicePtr y = rig.alloc(64 * KiB);
  rig.kernel(y, 64 * KiB, s2);
  const DevicePtr x = rig.alloc(64 * KiB);
  rig.kernel(x, 64 * KiB, s1);
  const DevicePtr a = rig.alloc(64 * KiB);
  rig.kernel(a, 64 * KiB, s1);
  EventId after_s1 = 0;
  EventId after_s2 = 0;
  REQUIRE(rig.device.create_event(&after_s1) == kSuccess);
  REQUIRE(rig.device.create_event(&after_s2) == kSuccess);
  REQUIRE(rig.device.record_event(after_s1, s1) == kSuccess);
  REQUIRE(rig.device.record_event(after_s2, s2) == kSuccess);
  const std::uint64_t calls = rig.device.allocate_calls();
  REQUIRE(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.free_calls() == 0);  // cached, not given back (no device-wide wait)
  // What the program sees of cuMemFree's synchronization: its streams' work is done.
  CHECK(rig.device.event_completed(after_s1));
  CHECK(rig.device.event_completed(after_s2));
  const DevicePtr b = rig.alloc(64 * KiB);
  CHECK(b == a);
  CHECK(rig.device.allocate_calls() == calls);
  // The next owner, on another stream: ordered after the block's last user.
  rig.kernel(b, 64 * KiB, s2);
  CHECK(rig.device.violations() == 0);
  CHECK(rig.cache->memory_use().in_use == 3 * 64 * KiB);
  REQUIRE(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.cache->deallocate(x, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.cache->deallocate(y, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.cache->memory_use().in_use == 0);
  CHECK(rig.cache->reclaim() > 0);  // the idle segment goes back when memory is short
  CHECK(rig.device.live_bytes() == 0);
}

TEST_CASE("small cache: an exported block is exported in place, its size the driver's from then on",
          "[engine][swap][small_cache]") {
  CacheRig rig;
  const DevicePtr a = rig.alloc(96 * KiB);
  CHECK(rig.cache->pin_for_export(a) == ExportPin::in_place);
  REQUIRE(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  const std::uint64_t calls = rig.device.allocate_calls();
  const DevicePtr b = rig.alloc(96 * KiB);
  CHECK(rig.device.allocate_calls() == calls + 1);               // a driver allocation of its own
  CHECK(rig.cache->pin_for_export(b) == ExportPin::not_served);  // the driver's own
  REQUIRE(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
}

TEST_CASE("small cache: large, stream-ordered and pooled allocations pass through", "[engine][swap][small_cache]") {
  CacheRig rig;
  const DevicePtr large = rig.alloc(MiB);
  const DevicePtr async = rig.alloc(64 * KiB, MemoryKind::async, 1);
  CHECK(rig.cache->pin_for_export(large) == ExportPin::not_served);
  CHECK(rig.cache->pin_for_export(async) == ExportPin::not_served);
  CHECK(rig.device.allocate_calls() == 2);
  REQUIRE(rig.cache->deallocate(large, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.cache->deallocate(async, MemoryKind::async, 1) == kSuccess);
  CHECK(rig.device.free_calls() == 2);
  CHECK(rig.device.live_bytes() == 0);
}

// Issue 34: a budget makes room before the driver is asked, so it must know what a request will
// take: a whole segment when no free block fits (a 64 KiB buffer carves 2 MiB), nothing when
// one does, and the request's own bytes where the driver serves it.
TEST_CASE("small cache: what a request would take from the device, before it is made", "[engine][swap][small_cache]") {
  CacheRig rig;
  const AllocationRequest small{64 * KiB, MemoryKind::device, 0, 0};
  CHECK(rig.cache->growth_of(small) == 2 * MiB);  // the first carves a segment
  const DevicePtr a = rig.alloc(64 * KiB);
  CHECK(rig.cache->memory_use().reserved == 2 * MiB);
  CHECK(rig.cache->growth_of(small) == 0);  // the rest of that segment fits it
  std::vector<DevicePtr> rest;
  for (std::uint64_t held = 64 * KiB; held < 2 * MiB; held += 64 * KiB) rest.push_back(rig.alloc(64 * KiB));
  CHECK(rig.cache->memory_use().reserved == 2 * MiB);
  CHECK(rig.cache->growth_of(small) == 2 * MiB);                                                 // the segment is full
  CHECK(rig.cache->growth_of(AllocationRequest{3 * MiB, MemoryKind::device, 0, 0}) == 3 * MiB);  // the driver's
  CHECK(rig.cache->growth_of(AllocationRequest{64 * KiB, MemoryKind::async, 0, 0}) == 64 * KiB);
  REQUIRE(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  for (const DevicePtr p : rest) REQUIRE(rig.cache->deallocate(p, MemoryKind::device, 0) == kSuccess);
}

// The cache asks the driver for a whole 2 MiB segment where the program asked for 64 KiB: on a
// device with room for the request but not for a segment, the request is the driver's own (as
// without memtool), not out of memory.
TEST_CASE("small cache: no room for a segment, the request itself from the driver", "[engine][swap][small_cache]") {
  CacheRig rig{MiB};
  const DevicePtr a = rig.alloc(64 * KiB);
  CHECK(rig.device.live_bytes() == 64 * KiB);  // the request's bytes, no segment
  CHECK(rig.cache->memory_use().reserved == 64 * KiB);
  CHECK(rig.cache->pin_for_export(a) == ExportPin::not_served);  // the driver's own allocation
  const DevicePtr b = rig.alloc(64 * KiB);
  CHECK(b != a);
  // Past what the device holds: out of memory, as the driver says.
  DevicePtr big = 0;
  CHECK(rig.cache->allocate(AllocationRequest{1000 * KiB, MemoryKind::device, 0, 0}, &big) == kOutOfMemory);
  REQUIRE(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.free_calls() == 2);  // back to the driver, as they came
  CHECK(rig.device.live_bytes() == 0);
}

// The program's stream changed after its first buffers (accum_cnn's replay): its segment's free
// blocks are stream 0's, and the device has no room for a second segment. The request takes one
// of them (ordered after stream 0's work, as any block another stream used) instead of failing.
TEST_CASE("small cache: no room for a segment of its stream, another stream's free block",
          "[engine][swap][small_cache]") {
  CacheRig rig{3 * MiB};
  const StreamId s1 = 1;
  const DevicePtr a = rig.alloc(64 * KiB);
  rig.kernel(a, 64 * KiB, 0);
  rig.kernel(a, 64 * KiB, s1);  // the program's work moves to s1
  const std::uint64_t calls = rig.device.allocate_calls();
  const DevicePtr b = rig.alloc(64 * KiB);
  CHECK(rig.device.allocate_calls() == calls);  // from the segment already there
  CHECK(rig.device.live_bytes() == 2 * MiB);
  rig.kernel(b, 64 * KiB, s1);
  CHECK(rig.device.violations() == 0);
  REQUIRE(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
}
