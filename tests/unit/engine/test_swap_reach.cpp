// Explicit swapping against work that reaches buffers besides its arguments (WorkItem: a pointer
// table a kernel wrote, an address that escaped, memory memtool cannot read), on the simulated
// device, whose vector clocks count every access to bytes not ordered after their last user and
// every unmap of memory whose last access the host has not seen done. Each case is one of the
// ordering holes of issue 33, and fails without its fix: a copy out ordered only after the
// streams memtool saw use the buffer, a remap under work still running, a copy back not waited
// for by work that reaches the buffer; and MEMTOOL_SWAP_VERIFY's reports. The [marks] cases (issue
// 34): a remap waits for the last work that may read the host copy, not for later work.
#include <catch2/catch.hpp>

#include <string>

#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr StreamId s1 = 1;
constexpr StreamId s2 = 2;

struct Rig {
  SimDevice device{SimDevice::Options{64 * MiB}};
  std::unique_ptr<Resource> swap;

  explicit Rig(std::uint64_t budget, bool verify = false) {
    SwapOptions options;
    options.mode = SwapMechanism::explicit_copies;
    options.budget_bytes = budget;
    options.policy = "belady";
    options.min_bytes = MiB;
    options.verify = verify;
    swap = make_swap(device, make_device_resource(device, true), options);
  }
  DevicePtr alloc(std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  }
  // A kernel on `stream` that touches `touched` (its arguments) and may reach `reached`.
  void item(StreamId stream, std::initializer_list<DevicePtr> touched, std::initializer_list<DevicePtr> reached = {},
            std::string_view kernel = "kernel", bool reaches_all = false,
            std::initializer_list<DevicePtr> escaped = {}) {
    const std::vector<DevicePtr> t(touched), r(reached), e(escaped);
    WorkItem w;
    w.stream = stream;
    w.touched = t;
    w.reached = r;
    w.escaped = e;
    w.reaches_all = reaches_all;
    w.kernel = kernel;
    swap->before_item(w);
  }
  // Two iterations of: a, b allocated and used, b used again, c allocated (a leaves for it) and
  // used for a while. In
  // the second, a leaves early — at b's second use, for c — so its copy out is still under way
  // after that item; returns a, b (c is not allocated yet). The first iteration's are freed.
  std::pair<DevicePtr, DevicePtr> leave_early(std::uint32_t seed) {
    swap->on_boundary(Boundary{});
    const DevicePtr a0 = alloc(4 * MiB);
    item(1, {a0});
    const DevicePtr b0 = alloc(4 * MiB);
    item(1, {b0});
    item(1, {b0});
    const DevicePtr c0 = alloc(4 * MiB);
    for (int i = 0; i < 24; ++i) item(1, {c0});  // a long iteration: a's next use lies far ahead
    for (const DevicePtr p : {a0, b0, c0}) CHECK(swap->deallocate(p, MemoryKind::device, 1) == kSuccess);
    device.synchronize();
    swap->on_boundary(Boundary{});
    const DevicePtr a = alloc(4 * MiB);
    item(1, {a}, {}, "producer");
    REQUIRE(device.fill(a, 4 * MiB, seed));
    const DevicePtr b = alloc(4 * MiB);
    const std::uint64_t out_before = summary().bytes_swapped_out;
    item(1, {b});
    REQUIRE(summary().bytes_swapped_out == out_before + 4 * MiB);  // a is leaving
    return {a, b};
  }
  // a allocated, used on s1 and filled with `seed`, then b, for which a leaves (a budget of one
  // 4 MiB buffer); the device caught up and b used again, a's copy out has landed: its address
  // maps the host copy. Returns a, b.
  std::pair<DevicePtr, DevicePtr> swapped_out(std::uint32_t seed) {
    const DevicePtr a = alloc(4 * MiB);
    item(s1, {a});
    REQUIRE(device.fill(a, 4 * MiB, seed));
    const DevicePtr b = alloc(4 * MiB);
    item(s1, {b});
    device.synchronize();
    item(s1, {b});
    return {a, b};
  }
  Summary summary() const {
    Summary s;
    swap->summarize(s);
    return s;
  }
  void finish(std::initializer_list<DevicePtr> buffers) {
    for (const DevicePtr p : buffers) CHECK(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
    swap->shutdown(true);
    CHECK(device.live_bytes() == 0);
  }
};

}  // namespace

TEST_CASE("explicit swap: a copy out under way is called off for work that may reach the buffer",
          "[engine][swap][reach]") {
  Rig rig(9 * MiB);
  const auto [a, b] = rig.leave_early(21);
  // A kernel on another stream that reaches a through a table a kernel wrote, and writes it.
  rig.item(s2, {b}, {a});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  REQUIRE(rig.device.fill(a, 4 * MiB, 22));
  rig.device.synchronize();
  rig.item(s1, {b});  // settles: a's device memory, which the kernel wrote, must not be released
  CHECK(rig.summary().swap_leaves_called_off == 1);
  CHECK(rig.device.verify(a, 4 * MiB, 22));
  CHECK(rig.device.violations() == 0);
  rig.finish({a, b});
}

TEST_CASE("explicit swap: a host copy that work may read stays mapped until that work has run",
          "[engine][swap][reach]") {
  Rig rig(5 * MiB);
  const auto [a, b] = rig.swapped_out(31);  // a's address maps its host copy
  // A kernel on s2 that may read a through a table: it reads the host copy, and is still running
  // (the host has not seen it done) when an announced kernel on s1 needs a back.
  rig.item(s2, {}, {a});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  rig.swap->deallocate(b, MemoryKind::device, s1);
  rig.item(s1, {a});  // a comes back: the remap must wait for s2's kernel
  REQUIRE(rig.device.access(s1, a, 4 * MiB));
  CHECK(rig.device.verify(a, 4 * MiB, 31));
  CHECK(rig.device.violations() == 0);
  rig.finish({a});
}

TEST_CASE("explicit swap: a copy back waits for the work that may read the host copy, not for later work",
          "[engine][swap][reach][marks]") {
  Rig rig(5 * MiB);
  const auto [a, b] = rig.swapped_out(35);  // a's address maps its host copy
  DevicePtr other = 0;                      // memory memtool does not swap
  REQUIRE(rig.device.allocate(MiB, MemoryKind::device, 0, &other) == kSuccess);
  // A kernel on s2 that may read a through a table; the next one on s2 does not reach a. The host
  // has seen the first done when a is needed back, not the second.
  rig.item(s2, {}, {a});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  rig.item(s2, {other});
  rig.device.synchronize();
  REQUIRE(rig.device.access(s2, other, MiB));
  EventId later = 0;
  REQUIRE(rig.device.create_event(&later) == kSuccess);
  REQUIRE(rig.device.record_event(later, s2) == kSuccess);
  // A stream-ordered free: a synchronous one would wait for every stream.
  CHECK(rig.swap->deallocate(b, MemoryKind::async, s1) == kSuccess);
  rig.item(s1, {a});  // back on demand: no wait for s2's second kernel
  CHECK(rig.summary().swap_ins_on_demand == 1);
  CHECK_FALSE(rig.device.event_completed(later));
  REQUIRE(rig.device.access(s1, a, 4 * MiB));
  rig.device.synchronize();
  CHECK(rig.device.verify(a, 4 * MiB, 35));
  CHECK(rig.device.violations() == 0);
  rig.device.destroy_event(later);
  CHECK(rig.device.free(other, MemoryKind::device, 0) == kSuccess);
  rig.finish({a});
}

TEST_CASE(
    "explicit swap: a copy back waits for work still running that may read the host copy, queued before later work",
    "[engine][swap][reach][marks]") {
  Rig rig(5 * MiB);
  const auto [a, b] = rig.swapped_out(37);  // a's address maps its host copy
  DevicePtr other = 0;
  REQUIRE(rig.device.allocate(MiB, MemoryKind::device, 0, &other) == kSuccess);
  // A kernel on s2 that may read a, then one that does not; neither has run when a is needed back.
  rig.item(s2, {}, {a});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  rig.item(s2, {other});
  REQUIRE(rig.device.access(s2, other, MiB));
  EventId later = 0;
  REQUIRE(rig.device.create_event(&later) == kSuccess);
  REQUIRE(rig.device.record_event(later, s2) == kSuccess);
  CHECK(rig.swap->deallocate(b, MemoryKind::async, s1) == kSuccess);
  rig.item(s1, {a});  // back on demand: the remap waits for the first kernel only
  CHECK(rig.summary().swap_ins_on_demand == 1);
  CHECK_FALSE(rig.device.event_completed(later));
  rig.device.destroy_event(later);
  REQUIRE(rig.device.access(s1, a, 4 * MiB));
  rig.device.synchronize();
  CHECK(rig.device.verify(a, 4 * MiB, 37));
  CHECK(rig.device.violations() == 0);
  CHECK(rig.device.free(other, MemoryKind::device, 0) == kSuccess);
  rig.finish({a});
}

TEST_CASE("explicit swap: work that may reach a buffer coming back waits for its copy", "[engine][swap][reach]") {
  Rig rig(5 * MiB);
  const auto [a, b] = rig.swapped_out(41);
  CHECK(rig.swap->deallocate(b, MemoryKind::device, s1) == kSuccess);
  rig.item(s1, {a});  // back on demand, its copy on s1
  // Another stream's kernel may read it through a table: it must come after that copy.
  rig.item(s2, {}, {a});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  CHECK(rig.device.verify(a, 4 * MiB, 41));
  CHECK(rig.device.violations() == 0);
  rig.finish({a});
}

TEST_CASE("explicit swap: a copy out comes after all work queued on every stream", "[engine][swap][reach]") {
  Rig rig(5 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.item(s1, {a});
  // A kernel memtool sees touch something else, which reaches a through memory it cannot read.
  const DevicePtr small = 0x10;  // not a swapped buffer
  rig.item(s2, {small});
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  const DevicePtr b = rig.alloc(4 * MiB);  // a leaves: its copy must follow s2's kernel too
  rig.device.synchronize();
  rig.item(s1, {b});
  CHECK(rig.summary().bytes_swapped_out == 4 * MiB);
  CHECK(rig.device.violations() == 0);
  rig.finish({a, b});
}

TEST_CASE("explicit swap: a buffer whose address escaped never moves again", "[engine][swap][reach]") {
  Rig rig(5 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.item(s1, {a}, {}, "publish", false, {a});  // its address went into a device global
  const DevicePtr b = rig.alloc(4 * MiB);        // over the budget, and a may not leave
  rig.item(s1, {b});
  const Summary s = rig.summary();
  CHECK(s.swap_pinned == 1);
  CHECK(s.bytes_swapped_out == 0);
  CHECK(rig.device.violations() == 0);
  rig.finish({a, b});
}

TEST_CASE("explicit swap: work that may reach anything leaves nothing in motion, and room is made before it",
          "[engine][swap][reach]") {
  Rig rig(9 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.item(s1, {a});
  REQUIRE(rig.device.fill(a, 4 * MiB, 81));
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.item(s1, {b});
  const DevicePtr c = rig.alloc(4 * MiB);  // a leaves
  rig.item(s1, {c});
  rig.device.synchronize();
  // A kernel that may reach anything (no pointer argument besides a, a table in a device global)
  // needs a back: b or c must leave for it, and be gone (on the host) before it is queued.
  rig.item(s2, {a}, {}, "from_global", true);
  REQUIRE(rig.device.access(s2, a, 4 * MiB));
  REQUIRE(rig.device.access(s2, b, 4 * MiB));
  REQUIRE(rig.device.access(s2, c, 4 * MiB));
  CHECK(rig.device.verify(a, 4 * MiB, 81));
  const Summary s = rig.summary();
  CHECK(s.swap_items_reaching_all == 1);
  CHECK(s.bytes_swapped_out >= 8 * MiB);
  CHECK(s.peak_device_bytes <= 9 * MiB);
  CHECK(rig.device.violations() == 0);
  rig.finish({a, b, c});
}

TEST_CASE("swap verify: a write behind memtool's back while out is said, with the last launch",
          "[engine][swap][verify]") {
  Rig rig(5 * MiB, true);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.item(s1, {a}, {}, "producer");
  REQUIRE(rig.device.fill(a, 4 * MiB, 51));
  const DevicePtr b = rig.alloc(4 * MiB);  // a leaves
  rig.item(s1, {b}, {}, "other");
  rig.device.synchronize();
  rig.item(s1, {b}, {}, "other");         // a's copy has landed and is checksummed
  rig.item(s1, {b}, {}, "stray_writer");  // writes a through a pointer memtool cannot see
  REQUIRE(rig.device.fill(a, 4 * MiB, 52));
  rig.device.synchronize();
  CHECK(rig.swap->deallocate(b, MemoryKind::device, s1) == kSuccess);
  rig.item(s1, {a}, {}, "consumer");
  const Summary s = rig.summary();
  CHECK(s.swap_verify_mismatches == 1);
  CHECK(s.swap_verify_checks >= 3);
  CHECK_THAT(s.swap_verify_first_mismatch, Catch::Contains("while out") && Catch::Contains("stray_writer"));
  CHECK(rig.device.verify(a, 4 * MiB, 52));  // what was written there came back
  rig.finish({a});
}

TEST_CASE("swap verify: a write after the copy out read the buffer keeps it on the device", "[engine][swap][verify]") {
  Rig rig(9 * MiB, true);
  const auto [a, b] = rig.leave_early(61);  // a's copy out has read it
  rig.item(s2, {b}, {}, "late_writer");     // writes a through a pointer memtool cannot see
  REQUIRE(rig.device.fill(a, 4 * MiB, 62));
  rig.device.synchronize();
  rig.item(s1, {b}, {}, "other");  // the copy out has landed: the check finds a changed, a stays
  const Summary s = rig.summary();
  CHECK(s.swap_verify_mismatches == 1);
  CHECK_THAT(s.swap_verify_first_mismatch, Catch::Contains("while leaving") && Catch::Contains("late_writer"));
  CHECK(rig.device.verify(a, 4 * MiB, 62));
  rig.finish({a, b});
}

TEST_CASE("swap verify: buffers that only move when memtool moves them pass every check", "[engine][swap][verify]") {
  Rig rig(5 * MiB, true);
  const auto [a, b] = rig.swapped_out(71);
  CHECK(rig.swap->deallocate(b, MemoryKind::device, s1) == kSuccess);
  rig.item(s1, {a});
  rig.device.synchronize();
  const Summary s = rig.summary();
  CHECK(s.swap_verify_checks >= 4);  // leaving (device and host copy), out, back
  CHECK(s.swap_verify_mismatches == 0);
  CHECK(s.swap_verify_first_mismatch.empty());
  CHECK(rig.device.verify(a, 4 * MiB, 71));
  rig.finish({a});
}
