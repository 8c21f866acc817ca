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

// --- managed memory (cuMemAllocManaged, cuMemAdvise, cuMemPrefetchAsync), as fakecuda models it ---

namespace {
constexpr std::uint64_t kChunk = 64 * 1024;  // the residency unit
}  // namespace

TEST_CASE("sim device managed memory is populated where it is first touched", "[engine][sim][managed]") {
  SimDevice d;
  DevicePtr p = 0;
  constexpr std::uint64_t kSize = 5 * kChunk + 100;  // a partial last chunk counts its own bytes
  REQUIRE(d.allocate_managed(kSize, &p) == kSuccess);
  CHECK(d.live_bytes() == 0);  // nowhere until touched
  CHECK(d.allocate_calls() == 0);
  CHECK(d.access(1, p + kChunk, 10));  // one chunk, populated on the device: no migration
  CHECK(d.live_bytes() == kChunk);
  CHECK(d.access(1, p, kSize));
  CHECK(d.live_bytes() == kSize);
  CHECK(d.peak_bytes() == kSize);
  CHECK(d.bytes_migrated_to_device() == 0);
  CHECK(d.fill(p, kSize, 7));
  CHECK(d.verify(p, kSize, 7));
  // A prefetch to the host of chunks never touched populates them there: nothing is charged.
  DevicePtr q = 0;
  REQUIRE(d.allocate_managed(kChunk, &q) == kSuccess);
  CHECK(d.prefetch(q, kChunk, Residence::host, 1) == kSuccess);
  CHECK(d.live_bytes() == kSize);
  CHECK(d.bytes_migrated_to_host() == 0);
  CHECK(d.free(p, MemoryKind::managed, 0) == kSuccess);
  CHECK(d.free(p, MemoryKind::managed, 0) == kInvalidValue);
  CHECK(d.live_bytes() == 0);
  CHECK(d.free(q, MemoryKind::device, 0) == kSuccess);  // cuMemFree frees managed memory too
  CHECK(d.violations() == 0);
}

TEST_CASE("sim device prefetches move managed chunks, freed on the device once the host saw them done",
          "[engine][sim][managed]") {
  SimDevice d;
  DevicePtr p = 0;
  constexpr std::uint64_t kSize = 4 * kChunk;
  REQUIRE(d.allocate_managed(kSize, &p) == kSuccess);
  REQUIRE(d.prefetch(p, kSize, Residence::device, 1) == kSuccess);
  CHECK(d.live_bytes() == kSize);
  CHECK(d.fill(p, kSize, 3));
  // Out on stream 1: the device memory goes when the stream gets there, which the host learns
  // from an event or a synchronisation.
  REQUIRE(d.prefetch(p, kSize, Residence::host, 1) == kSuccess);
  CHECK(d.bytes_migrated_to_host() == kSize);
  CHECK(d.live_bytes() == kSize);
  EventId e = 0;
  REQUIRE(d.create_event(&e) == kSuccess);
  REQUIRE(d.record_event(e, 1) == kSuccess);
  REQUIRE(d.synchronize_event(e) == kSuccess);
  CHECK(d.live_bytes() == 0);
  // Back on the device by a kernel's access (a fault), the bytes with it.
  CHECK(d.access(1, p + kChunk, 2 * kChunk));
  CHECK(d.live_bytes() == 2 * kChunk);
  CHECK(d.bytes_migrated_to_device() == 2 * kChunk);
  // Out and back before the host saw the way out done: counted once, never twice.
  REQUIRE(d.prefetch(p, kSize, Residence::host, 1) == kSuccess);
  REQUIRE(d.prefetch(p, kSize, Residence::device, 1) == kSuccess);
  CHECK(d.live_bytes() == kSize);
  CHECK(d.peak_bytes() == kSize);
  d.synchronize();
  CHECK(d.live_bytes() == kSize);
  CHECK(d.verify(p, kSize, 3));
  d.destroy_event(e);
  CHECK(d.violations() == 0);
}

TEST_CASE("sim device prefetches are ordered on their stream like copies", "[engine][sim][managed]") {
  SimDevice d;
  DevicePtr p = 0;
  REQUIRE(d.allocate_managed(kChunk, &p) == kSuccess);
  CHECK(d.access(1, p, kChunk));
  REQUIRE(d.prefetch(p, kChunk, Residence::host, 2) == kSuccess);  // not after stream 1's kernel
  CHECK(d.violations() == 1);
  EventId e = 0;
  REQUIRE(d.create_event(&e) == kSuccess);
  REQUIRE(d.record_event(e, 2) == kSuccess);
  REQUIRE(d.stream_wait_event(1, e) == kSuccess);
  CHECK(d.access(1, p, kChunk));  // after the prefetch: fine
  CHECK(d.access(3, p, 8));       // not after stream 1's kernel
  CHECK(d.violations() == 2);
  d.destroy_event(e);
}

TEST_CASE("sim device maps host-preferred managed memory instead of migrating it", "[engine][sim][managed]") {
  SimDevice d;
  DevicePtr p = 0;
  constexpr std::uint64_t kSize = 2 * kChunk;
  REQUIRE(d.allocate_managed(kSize, &p) == kSuccess);
  REQUIRE(d.access(1, p, kSize));
  REQUIRE(d.advise(p, kSize, Residence::host) == kSuccess);
  CHECK(d.live_bytes() == kSize);  // advice moves nothing
  REQUIRE(d.prefetch(p, kSize, Residence::host, 1) == kSuccess);
  d.synchronize();
  CHECK(d.live_bytes() == 0);
  CHECK(d.access(1, p, 100));  // at its preferred location, which the device can map
  CHECK(d.live_bytes() == 0);
  CHECK(d.bytes_accessed_on_host() == 100);
  CHECK(d.bytes_migrated_to_device() == 0);
  // A prefetch still moves it ("setting the preferred location does not prevent data
  // prefetching"); advised back to the device, a fault migrates it.
  REQUIRE(d.prefetch(p, kChunk, Residence::device, 1) == kSuccess);
  CHECK(d.live_bytes() == kChunk);
  REQUIRE(d.advise(p + kChunk, kChunk, Residence::device) == kSuccess);
  CHECK(d.access(1, p + kChunk, 1));
  CHECK(d.live_bytes() == kSize);
  CHECK(d.bytes_migrated_to_device() == kSize);
}

TEST_CASE("sim device oversubscribes managed memory by evicting other managed chunks", "[engine][sim][managed]") {
  SimDevice d(SimDevice::Options{4 * kChunk});
  DevicePtr a = 0, b = 0;
  REQUIRE(d.allocate_managed(3 * kChunk, &a) == kSuccess);
  REQUIRE(d.allocate_managed(3 * kChunk, &b) == kSuccess);
  CHECK(d.access(1, a, 3 * kChunk));
  CHECK(d.fill(a, 3 * kChunk, 1));
  CHECK(d.access(1, b, 3 * kChunk));  // room made from a's chunks, not b's own
  CHECK(d.fill(b, 3 * kChunk, 2));
  CHECK(d.live_bytes() == 4 * kChunk);
  CHECK(d.peak_bytes() == 4 * kChunk);
  CHECK(d.bytes_migrated_to_host() == 2 * kChunk);
  CHECK(d.bytes_accessed_on_host() == 0);
  CHECK(d.verify(a, 3 * kChunk, 1));  // the bytes are the same wherever they are
  CHECK(d.verify(b, 3 * kChunk, 2));
  // cuMemAlloc evicts managed chunks too; its own memory is never evicted, so managed memory
  // that finds the device full of it is reached on the host.
  DevicePtr c = 0;
  REQUIRE(d.allocate(3 * kChunk, MemoryKind::device, 0, &c) == kSuccess);
  CHECK(d.live_bytes() == 4 * kChunk);
  CHECK(d.access(1, a, 3 * kChunk));
  CHECK(d.live_bytes() == 4 * kChunk);
  CHECK(d.bytes_accessed_on_host() == 2 * kChunk);
  CHECK(d.verify(a, 3 * kChunk, 1));
  CHECK(d.free(c, MemoryKind::device, 0) == kSuccess);
  CHECK(d.free(a, MemoryKind::managed, 0) == kSuccess);
  CHECK(d.free(b, MemoryKind::managed, 0) == kSuccess);
  CHECK(d.live_bytes() == 0);
}

TEST_CASE("sim device checks managed ranges", "[engine][sim][managed]") {
  SimDevice d;
  DevicePtr p = 0, dev = 0;
  CHECK(d.allocate_managed(0, &p) == kInvalidValue);
  REQUIRE(d.allocate_managed(kChunk, &p) == kSuccess);
  REQUIRE(d.allocate(kChunk, MemoryKind::device, 0, &dev) == kSuccess);
  CHECK(d.advise(p, 0, Residence::host) == kInvalidValue);
  CHECK(d.advise(p, kChunk + 1, Residence::host) == kInvalidValue);
  CHECK(d.prefetch(p + 1, kChunk, Residence::device, 0) == kInvalidValue);
  CHECK(d.prefetch(dev, kChunk, Residence::device, 0) == kInvalidValue);  // not managed memory
  CHECK(d.advise(dev, kChunk, Residence::host) == kInvalidValue);
  CHECK(d.prefetch(p + 10, 20, Residence::device, 0) == kSuccess);  // rounded out to its chunk
  CHECK(d.live_bytes() == 2 * kChunk);
  // A copy populates what was never touched and leaves populated chunks where they are.
  std::vector<std::uint8_t> host(kChunk);
  REQUIRE(d.prefetch(p, kChunk, Residence::host, 0) == kSuccess);
  d.synchronize();
  CHECK(d.copy_to_host(host.data(), p, kChunk, 0) == kSuccess);
  CHECK(d.live_bytes() == kChunk);
  CHECK(d.bytes_migrated_to_device() == 0);
}
