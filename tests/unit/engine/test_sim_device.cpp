// The simulated device must catch what the engine is supposed to prevent, or the engine's
// tests prove nothing: unordered cross-stream reuse, and bytes overwritten by an overlap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "memtool/engine/sim_device.hpp"

using namespace memtool::engine;

TEST_CASE("sim device flags cross-stream access without a wait", "[engine][sim]") {
  SimDevice d;
  DevicePtr p = 0;
  REQUIRE(d.allocate(4096, MemoryKind::device, 0, &p) == kSuccess);
  CHECK(d.access(1, p, 4096));
  CHECK(d.access(1, p + 100, 10));  // same stream: ordered
  CHECK(d.violations() == 0);
  CHECK(d.access(2, p + 1000, 10));  // other stream, no wait
  CHECK(d.violations() == 1);
  CHECK(d.access(3, p + 2000, 100));  // disjoint from stream 2's bytes, overlaps stream 1's
  CHECK(d.violations() == 2);
}

TEST_CASE("sim device accepts access ordered by an event or a host sync", "[engine][sim]") {
  SimDevice d;
  DevicePtr p = 0;
  REQUIRE(d.allocate(4096, MemoryKind::device, 0, &p) == kSuccess);
  EventId e = 0;
  REQUIRE(d.create_event(&e) == kSuccess);
  d.access(1, p, 4096);
  // Recorded BEFORE the last access: not enough.
  d.record_event(e, 1);
  CHECK_FALSE(d.event_completed(e));
  d.access(1, p, 4096);
  d.stream_wait_event(2, e);
  d.access(2, p, 10);
  CHECK(d.violations() == 1);
  // Recorded after: fine.
  d.record_event(e, 1);
  d.stream_wait_event(3, e);
  d.access(3, p + 20, 10);
  CHECK(d.violations() == 1);
  d.synchronize();
  CHECK(d.event_completed(e));
  d.access(4, p, 4096);
  CHECK(d.violations() == 1);
}

TEST_CASE("sim device keeps bytes and a capacity", "[engine][sim]") {
  SimDevice d(SimDevice::Options{10000, 6000});
  DevicePtr a = 0, b = 0;
  CHECK(d.allocate(7000, MemoryKind::device, 0, &a) == kOutOfMemory);
  REQUIRE(d.allocate(6000, MemoryKind::device, 0, &a) == kSuccess);
  CHECK(d.allocate(5000, MemoryKind::device, 0, &b) == kOutOfMemory);
  CHECK(d.fill(a, 6000, 1));
  CHECK(d.verify(a, 6000, 1));
  CHECK(d.fill(a + 100, 10, 2));  // an overlapping writer
  CHECK_FALSE(d.verify(a, 6000, 1));
  CHECK_FALSE(d.fill(a + 5999, 2, 1));
  CHECK(d.free(a, MemoryKind::device, 0) == kSuccess);
  CHECK(d.free(a, MemoryKind::device, 0) == kInvalidValue);
  CHECK_FALSE(d.verify(a, 10, 1));
  CHECK(d.live_bytes() == 0);
  CHECK(d.peak_bytes() == 6000);
}

// Issue 39: the sizes of buffers allocated one after another may add up past 2^64; only the live
// ones must fit in the address space (16 buffers of 2^60 bytes, one live at a time).
TEST_CASE("sim device reuses freed addresses once the address space is used up", "[engine][sim]") {
  SimDevice d(SimDevice::Options{~std::uint64_t{0}});
  constexpr std::uint64_t kHuge = std::uint64_t{1} << 60;
  DevicePtr first = 0;
  for (int i = 0; i < 40; ++i) {
    DevicePtr p = 0;
    REQUIRE(d.allocate(kHuge, MemoryKind::device, 0, &p) == kSuccess);
    if (i == 0) first = p;
    CHECK(d.free(p, MemoryKind::device, 0) == kSuccess);
  }
  // Live buffers are never overlapped by the reused addresses, and a full space is out of memory.
  std::vector<DevicePtr> live(15);
  for (DevicePtr& p : live) REQUIRE(d.allocate(kHuge, MemoryKind::device, 0, &p) == kSuccess);
  std::sort(live.begin(), live.end());
  CHECK(live.front() >= first);
  for (std::size_t i = 1; i < live.size(); ++i) CHECK(live[i] - live[i - 1] >= kHuge);
  DevicePtr extra = 0;
  CHECK(d.allocate(kHuge, MemoryKind::device, 0, &extra) == kOutOfMemory);
  CHECK(d.free(live[7], MemoryKind::device, 0) == kSuccess);
  CHECK(d.allocate(kHuge, MemoryKind::device, 0, &extra) == kSuccess);
  CHECK(extra == live[7]);
  CHECK(d.allocate_calls() == 56);
}
