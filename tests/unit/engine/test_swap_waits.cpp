// Explicit swapping on the simulated device behind a gate that plays two driver situations the
// simulator alone has not: a stream waiting for a value the program writes later
// (Device::host_wait_may_block: the swapper must not wait on the host then, HostWaits), and
// another thread's per-thread default stream that cannot be named while a capture runs
// (record_event answers kCaptureImplicit: refused for now, not gone). The simulator's vector
// clocks count every access not ordered after the last one from another stream.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "gated_device.hpp"
#include "memtool/engine/sim_device.hpp"
#include "small_cache_rig.hpp"

using namespace memtool::engine;
using memtool::engine::test::GatedDevice;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

struct Rig {
  GatedDevice device;
  std::unique_ptr<Resource> swap;

  explicit Rig(std::uint64_t budget, SwapMechanism mode = SwapMechanism::explicit_copies) {
    SwapOptions options;
    options.mode = mode;
    options.budget_bytes = budget;
    options.policy = "belady";
    options.min_bytes = MiB;
    swap = make_swap(device, make_device_resource(device, true), options);
  }
  DevicePtr alloc(std::uint64_t size, MemoryKind kind = MemoryKind::device, StreamId stream = 0) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, kind, stream, 0}, &ptr) == kSuccess);
    return ptr;
  }
  // A kernel on `stream` touching `touched`, whose address `escaped` goes where memtool cannot
  // follow; it runs (the simulator's accesses) once announced.
  void kernel(StreamId stream, std::initializer_list<DevicePtr> touched,
              std::initializer_list<DevicePtr> escaped = {}) {
    const std::vector<DevicePtr> t(touched);
    const std::vector<DevicePtr> e(escaped);
    WorkItem w;
    w.stream = stream;
    w.touched = t;
    w.escaped = e;
    swap->before_item(w);
    for (const DevicePtr p : t) REQUIRE(device.sim.access(stream, p, 4 * MiB));
  }
  Summary summary() const {
    Summary s;
    swap->summarize(s);
    return s;
  }
  void finish(std::initializer_list<DevicePtr> live) {
    device.may_block = false;
    device.refused = 0;
    for (const DevicePtr p : live) CHECK(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
    swap->shutdown(true);
    CHECK(device.sim.live_bytes() == 0);
    CHECK(device.sim.violations() == 0);
  }
};

}  // namespace

TEST_CASE("swap: while a stream waits for a value, a freed buffer still leaving is released later, not waited for",
          "[engine][swap]") {
  Rig rig(8 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB, MemoryKind::async, 1);
  rig.kernel(1, {a});
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(1, {b});
  const DevicePtr c = rig.alloc(4 * MiB);  // a leaves for it: its copy out is under way
  CHECK(rig.summary().bytes_swapped_out >= 4 * MiB);
  rig.device.may_block = true;  // from here a host wait may never end
  // Freed on its stream; the stream gets there, its copy out does not (the host may not wait).
  CHECK(rig.swap->deallocate(a, MemoryKind::async, 1) == kSuccess);
  // The program's stream has got there (the host saw it done); the swapper's copy out has not.
  EventId reached = 0;
  REQUIRE(rig.device.sim.create_event(&reached) == kSuccess);
  REQUIRE(rig.device.sim.record_event(reached, 1) == kSuccess);
  REQUIRE(rig.device.sim.synchronize_event(reached) == kSuccess);
  rig.device.sim.destroy_event(reached);
  rig.kernel(1, {c});
  rig.kernel(1, {b});
  CHECK(rig.device.waits_while_blocked == 0);
  rig.finish({b, c});
}

TEST_CASE("swap: while a stream waits for a value, nothing starts leaving: what does not fit is held on the host",
          "[engine][swap]") {
  // A copy out is ordered after every stream, the waiting one too: it would land only once the
  // program writes the value, and work that needs the buffer back before then (on a stream the
  // host then synchronises) would never run (value_wait_free_train hung so under a 64 KiB budget).
  Rig rig(8 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(1, {a});
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(1, {b});
  rig.device.may_block = true;
  const DevicePtr c = rig.alloc(4 * MiB);
  CHECK(rig.summary().bytes_swapped_out == 0);
  CHECK(rig.summary().swap_held_for_value_waits >= 1);
  rig.kernel(1, {c});
  rig.kernel(1, {a});  // still on the device: no copy back to wait for
  CHECK(rig.summary().bytes_swapped_out == 0);
  CHECK(rig.device.waits_while_blocked == 0);
  rig.device.may_block = false;  // the value was written: moves go on
  rig.kernel(1, {b});
  rig.kernel(1, {c});
  rig.finish({a, b, c});
}

TEST_CASE("swap (uvm): while a stream waits for a value, a new buffer that does not fit starts on the host",
          "[engine][swap]") {
  // Managed memory placed by the driver would go on the device at its first touch, past the
  // budget, with no room to be waited for: it is advised to the host and populated there instead.
  // (Stream-ordered on the kernels' stream: the simulator has no legacy stream to order a
  // prefetch on stream 0 before them.)
  Rig rig(8 * MiB, SwapMechanism::uvm);
  const DevicePtr a = rig.alloc(4 * MiB, MemoryKind::async, 1);
  rig.kernel(1, {a});
  const DevicePtr b = rig.alloc(4 * MiB, MemoryKind::async, 1);
  rig.kernel(1, {b});
  rig.device.may_block = true;
  const DevicePtr c = rig.alloc(4 * MiB, MemoryKind::async, 1);
  rig.kernel(1, {c});  // read across the link
  rig.kernel(1, {a});
  CHECK(rig.summary().swap_held_for_value_waits >= 1);
  CHECK(rig.summary().allocations_on_host == 1);
  CHECK(rig.summary().bytes_swapped_out == 0);
  CHECK(rig.summary().peak_device_bytes <= 8 * MiB);
  CHECK(rig.device.sim.peak_bytes() <= 8 * MiB);  // what the device really held
  CHECK(rig.device.waits_while_blocked == 0);
  rig.device.may_block = false;  // the value was written: c comes back when touched
  rig.kernel(1, {c});
  CHECK(rig.summary().bytes_swapped_in >= 4 * MiB);
  CHECK(rig.device.sim.peak_bytes() <= 8 * MiB);
  rig.finish({a, b, c});
}

TEST_CASE(
    "swap: while a stream waits for a value, an escaping or exported buffer's copy back is waited for in "
    "stream order",
    "[engine][swap]") {
  Rig rig(8 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(1, {a});
  REQUIRE(rig.device.sim.fill(a, 4 * MiB, 5));
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(1, {b});
  const DevicePtr c = rig.alloc(4 * MiB);  // a leaves for it
  rig.kernel(1, {c});
  rig.device.sim.synchronize();
  rig.kernel(1, {c});  // a's copy out has landed: a is out
  rig.device.sim.synchronize();
  // a comes back on stream 2 for a kernel announced there (its copy back still under way)...
  const DevicePtr touched[] = {a};
  rig.swap->before_work(touched, 2);
  rig.device.may_block = true;
  // ...then its address escapes on stream 3: stream 3 waits for the copy on the GPU, the host
  // does not.
  rig.kernel(3, {}, {a});
  CHECK(rig.device.sim.access(3, a, 4 * MiB));
  CHECK(rig.device.sim.verify(a, 4 * MiB, 5));
  CHECK(rig.swap->pin_for_export(a) == ExportPin::mapped);
  CHECK(rig.device.waits_while_blocked == 0);
  CHECK(rig.device.sim.violations() == 0);
  rig.finish({a, b, c});
}

TEST_CASE("swap: another thread's stream refused for now during a capture is kept and joined once it can be",
          "[engine][swap]") {
  Rig rig(8 * MiB);
  const StreamId other = 7;  // another thread's per-thread stream
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(1, {a});
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(other, {b});
  // Work on that stream reaches a through memory memtool cannot read (after a's kernel: the
  // program ordered it so).
  rig.device.sim.synchronize();
  REQUIRE(rig.device.sim.access(other, a, 4 * MiB));
  rig.device.refused = other;  // a capture starts: that stream cannot be joined now
  const DevicePtr c = rig.alloc(4 * MiB);
  // Nothing may leave unordered after it (a's copy out would race that work): over the budget.
  CHECK(rig.summary().bytes_swapped_out == 0);
  CHECK(rig.device.sim.violations() == 0);
  rig.device.refused = 0;  // the capture ended; no work item came from that thread since
  rig.kernel(1, {c});
  // a leaves now, ordered after that stream's work: it was kept among the program's streams.
  CHECK(rig.summary().bytes_swapped_out >= 4 * MiB);
  CHECK(rig.device.sim.violations() == 0);
  rig.finish({a, b, c});
}

// The small-block cache under the swapper (small_cache.hpp): a cuMemFree of a cached block waits
// for the program's streams, and the cache's way out of memory waits for its pending blocks.
namespace {

constexpr std::uint64_t KiB = 1024;

using SmallRig = test::SmallCacheRig<GatedDevice>;

}  // namespace

TEST_CASE("small cache: while a stream waits for a value, a freed block is kept until the streams got there",
          "[engine][swap][small_cache]") {
  SmallRig rig;
  const DevicePtr a = rig.alloc(64 * KiB);
  rig.kernel(a, 64 * KiB, 1);  // still running on stream 1 (the simulator drains on a wait)
  rig.device.may_block = true;
  CHECK(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.waits_while_blocked == 0);  // the free returned without a host wait
  // The block is not handed out again before stream 1 got there: a new block (else a reuse on
  // stream 2 unordered after stream 1's kernel, a violation below).
  const DevicePtr b = rig.alloc(64 * KiB);
  CHECK(b != a);
  rig.kernel(b, 64 * KiB, 2);
  CHECK(rig.device.waits_while_blocked == 0);
  rig.device.may_block = false;  // the value was written: the kept block goes to the cache
  const DevicePtr c = rig.alloc(64 * KiB);
  rig.kernel(c, 64 * KiB, 2);
  CHECK(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.cache->deallocate(c, MemoryKind::device, 0) == kSuccess);
  rig.cache->shutdown(true);
  CHECK(rig.device.sim.violations() == 0);
  CHECK(rig.device.sim.live_bytes() == 0);
}

TEST_CASE("small cache: while a stream waits for a value, running out of memory waits for nothing",
          "[engine][swap][small_cache]") {
  SmallRig rig;
  // A cached block freed after a use on stream 1: pending in the cache until stream 1 gets there.
  const DevicePtr a = rig.alloc(64 * KiB);
  rig.kernel(a, 64 * KiB, 1);
  CHECK(rig.cache->deallocate(a, MemoryKind::device, 0) == kSuccess);
  // A stream-ordered free on its way (counted until its stream gets there).
  const DevicePtr s = rig.alloc(2 * MiB, MemoryKind::async, 1);
  rig.kernel(s, 2 * MiB, 1);
  CHECK(rig.cache->deallocate(s, MemoryKind::async, 1) == kSuccess);
  // The device all but full: no room for another segment of the cache.
  DevicePtr filler = 0;
  const std::uint64_t room = 64 * MiB - rig.device.sim.live_bytes();
  REQUIRE(rig.device.sim.allocate(room - 512 * KiB, MemoryKind::device, 0, &filler) == kSuccess);
  rig.device.may_block = true;
  // The cache would wait for its pending block, then free its segments (cuMemFree synchronises
  // the device): the driver serves it instead, as the program asked.
  const DevicePtr b = rig.alloc(64 * KiB);
  rig.kernel(b, 64 * KiB, 2);
  // Memory pressure: only what the GPU has reached is given back.
  (void)rig.cache->reclaim();
  CHECK(rig.device.waits_while_blocked == 0);
  rig.device.may_block = false;
  CHECK(rig.cache->deallocate(b, MemoryKind::device, 0) == kSuccess);
  REQUIRE(rig.device.sim.free(filler, MemoryKind::device, 0) == kSuccess);
  rig.cache->shutdown(true);
  CHECK(rig.device.sim.violations() == 0);
  CHECK(rig.device.sim.live_bytes() == 0);
}
