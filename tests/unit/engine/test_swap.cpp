// Explicit swapping (MEMTOOL_SWAP_MODE=explicit) on the simulated device, whose vector clocks
// count every copy or kernel that touches bytes without being ordered after their last user:
// a buffer goes out and comes back with its bytes (one nothing wrote moves without a copy),
// every copy is ordered after the buffer's users, an access the policy never saw reaches the host
// copy mapped at the buffer's address, a free is ordered after its users but not behind other
// buffers' copies out, and nothing is left on the device at the end.
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"
#include "program.hpp"
#include "sim_forwarding_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

SimDevice& sim(SimDevice& device) { return device; }
SimDevice& sim(test::SimForwardingDevice& device) { return device.sim; }

template <class TestDevice>
struct SwapRigOn {
  TestDevice device{SimDevice::Options{64 * MiB}};
  std::unique_ptr<Resource> swap;

  explicit SwapRigOn(std::uint64_t budget, std::string policy = "ours") {
    SwapOptions options;
    options.mode = SwapMechanism::explicit_copies;
    options.budget_bytes = budget;
    options.policy = std::move(policy);
    options.min_bytes = MiB;
    swap = make_swap(device, make_device_resource(device, true), options);
  }
  DevicePtr alloc(std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  }
  // A kernel on `stream` that touches the buffer, announced as libmemtool.so's hooks do.
  void kernel(DevicePtr ptr, std::uint64_t size, StreamId stream) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, stream);
    REQUIRE(sim(device).access(stream, ptr, size));
  }
  Summary summary() const {
    Summary s;
    swap->summarize(s);
    return s;
  }
};
using SwapRig = SwapRigOn<SimDevice>;

// Notes each device-to-device copy (the VMM mover's copies out and back) and the stream of the
// last event recorded.
class StreamSpy final : public test::SimForwardingDevice {
 public:
  explicit StreamSpy(SimDevice::Options options) : SimForwardingDevice(options.capacity) {}
  struct Copy {
    DevicePtr dst = 0;
    DevicePtr src = 0;
    StreamId stream = 0;
  };
  std::vector<Copy> copies;
  StreamId last_record = 0;

  // Copies that read or wrote `ptr` itself (not its host copy's own mapping).
  [[nodiscard]] std::size_t copies_at(DevicePtr ptr) const {
    return static_cast<std::size_t>(
        std::count_if(copies.begin(), copies.end(), [ptr](const Copy& c) { return c.dst == ptr || c.src == ptr; }));
  }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    copies.push_back(Copy{dst, src, stream});
    return sim.copy_device(dst, src, bytes, stream);
  }
  Status record_event(EventId event, StreamId stream) override {
    last_record = stream;
    return sim.record_event(event, stream);
  }
};

}  // namespace

TEST_CASE("explicit swap: out and back with its bytes, every copy ordered after the buffer's users", "[engine][swap]") {
  SwapRig rig(9 * MiB);
  const StreamId s1 = 1;
  const StreamId s2 = 2;
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(a, 4 * MiB, s1);
  REQUIRE(rig.device.fill(a, 4 * MiB, 7));
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(b, 4 * MiB, s2);
  // A third does not fit: the least recently used (a) leaves, its device memory given back.
  const DevicePtr c = rig.alloc(4 * MiB);
  rig.kernel(c, 4 * MiB, s1);
  CHECK(rig.device.live_bytes() <= 9 * MiB);
  CHECK(rig.summary().bytes_swapped_out >= 4 * MiB);
  // a is back for its next user, on another stream, with the bytes it left with.
  rig.kernel(a, 4 * MiB, s2);
  CHECK(rig.device.verify(a, 4 * MiB, 7));
  CHECK(rig.device.live_bytes() <= 9 * MiB);
  const Summary s = rig.summary();
  CHECK(s.swap_mode == "explicit");
  CHECK(s.swap_ins_on_demand >= 1);
  CHECK(s.peak_device_bytes <= 9 * MiB);
  CHECK(rig.device.violations() == 0);
  for (const DevicePtr p : {a, b, c}) CHECK(rig.swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("explicit swap: while out, its address reaches the host copy; what was written there comes back",
          "[engine][swap]") {
  SwapRig rig(5 * MiB);
  const StreamId s1 = 1;
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(a, 4 * MiB, s1);
  REQUIRE(rig.device.fill(a, 4 * MiB, 11));
  const DevicePtr b = rig.alloc(4 * MiB);  // sends a out
  rig.kernel(b, 4 * MiB, s1);
  rig.device.synchronize();
  rig.kernel(b, 4 * MiB, s1);  // the next call settles a's finished copy: host memory at its address
  REQUIRE(rig.device.live_bytes() <= 5 * MiB);
  // What a kernel reaching a through a pointer memtool never saw would read, and write.
  CHECK(rig.device.verify(a, 4 * MiB, 11));
  REQUIRE(rig.device.fill(a, 4 * MiB, 12));
  rig.device.synchronize();
  rig.kernel(a, 4 * MiB, s1);  // announced: back on the device, with the bytes written while out
  CHECK(rig.device.verify(a, 4 * MiB, 12));
  CHECK(rig.device.violations() == 0);
  CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
}

// A buffer nothing has written leaves and comes back without a copy (SwapBuffer::blank): its
// bytes mean nothing. Once work may have written it (touching it, or reaching every buffer), it
// moves with them. Each: a of 4 MiB, then b of 4 MiB in a 5 MiB budget sends a out, and a is
// used again (b, written, leaves for it). Returns whether a came back with its bytes and how many
// copies moved it.
TEST_CASE("explicit swap: a buffer nothing wrote moves without a copy, one work may have written with its bytes",
          "[engine][swap]") {
  const StreamId s1 = 1;
  const auto run = [&](int written_by) {
    SwapRigOn<StreamSpy> rig(5 * MiB);
    const DevicePtr a = rig.alloc(4 * MiB);
    REQUIRE(rig.device.sim.fill(a, 4 * MiB, 21));  // on the device, but nothing memtool saw wrote it
    if (written_by == 1) rig.kernel(a, 4 * MiB, s1);
    if (written_by == 2) {
      WorkItem item;
      item.stream = s1;
      item.reaches_all = true;  // reads a table of pointers memtool cannot follow
      rig.swap->before_item(item);
    }
    const DevicePtr b = rig.alloc(4 * MiB);  // sends a out
    rig.kernel(b, 4 * MiB, s1);
    CHECK(rig.summary().bytes_swapped_out >= 4 * MiB);
    rig.kernel(a, 4 * MiB, s1);  // back on the device
    CHECK(rig.summary().bytes_swapped_in >= 4 * MiB);
    const bool kept = rig.device.sim.verify(a, 4 * MiB, 21);
    CHECK(rig.device.sim.violations() == 0);
    CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
    CHECK(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
    rig.swap->shutdown(true);
    return std::pair{kept, rig.device.copies_at(a)};
  };
  for (const int written_by : {0, 1, 2}) {
    INFO("written by " << written_by);
    const auto [kept, copies] = run(written_by);
    CHECK(kept == (written_by != 0));
    CHECK(copies == (written_by != 0 ? 2U : 0U));
  }
}

// A buffer the rule brings back ahead for its name's next use, which the program frees before
// any use (its next use was its twin's in the next iteration): its memory is released only once
// that copy back is done, never under it (SimDevice counts an unmap the host has not seen the
// range's last copy done for). Each iteration: t, u and v of 4 MiB in a 9 MiB budget; t leaves
// for v (u is used again sooner), u and v are freed, and at the next item t comes back ahead,
// then is freed unused.
TEST_CASE("explicit swap: a buffer brought back ahead and freed unused is released after its copy back",
          "[engine][swap]") {
  SwapRig rig(9 * MiB, "belady");
  const StreamId s = 1;
  for (int iteration = 0; iteration < 3; ++iteration) {
    rig.swap->on_boundary(Boundary{});
    const DevicePtr t = rig.alloc(4 * MiB);
    rig.kernel(t, 4 * MiB, s);
    const DevicePtr u = rig.alloc(4 * MiB);
    rig.kernel(u, 4 * MiB, s);
    const DevicePtr v = rig.alloc(4 * MiB);
    rig.kernel(v, 4 * MiB, s);
    rig.kernel(u, 4 * MiB, s);
    for (const DevicePtr p : {u, v}) CHECK(rig.swap->deallocate(p, MemoryKind::device, s) == kSuccess);
    rig.device.synchronize();      // their frees are reached
    rig.swap->before_work({}, s);  // an item with no buffer of ours: t's twin is used soon after
    CHECK(rig.swap->deallocate(t, MemoryKind::device, s) == kSuccess);
  }
  CHECK(rig.summary().swap_ins_ahead >= 1);  // the case under test happened
  rig.swap->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("swap: a budget the buffers it never moves pass by themselves is said once, with the option",
          "[engine][swap][budget]") {
  const auto said = [](const test::LogCapture& capture) {
    std::size_t n = 0;
    for (const std::string& line : capture.lines()) {
      if (line.find("cannot be met") != std::string::npos) {
        ++n;
        CHECK(line.find("MEMTOOL_SWAP_MIN_BYTES=1048576 B") != std::string::npos);
      }
    }
    return n;
  };
  {
    test::LogCapture capture;
    SwapRig rig(1, "belady");  // MEMTOOL_BUDGET=1, the default MEMTOOL_SWAP_MIN_BYTES
    const DevicePtr a = rig.alloc(4096);
    const DevicePtr b = rig.alloc(8192);
    CHECK(said(capture) == 1);  // once, not per allocation
    REQUIRE(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
    REQUIRE(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  }
  {
    test::LogCapture capture;
    SwapRig rig(16 * MiB, "belady");  // small buffers within the budget: nothing to say
    const DevicePtr a = rig.alloc(4096);
    CHECK(said(capture) == 0);
    REQUIRE(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  }
}

// A free of a buffer no work has used (SwapBuffer::blank: the allocations a program frees unused)
// is carried out at once, ordered after nothing; a used one's waits behind its users.
TEST_CASE("explicit swap: a buffer no work has used is released at its free, ordered after nothing", "[engine][swap]") {
  SwapRig rig(8 * MiB, "belady");
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(a, 4 * MiB, 1);
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(b, 4 * MiB, 1);
  const DevicePtr unused = rig.alloc(4 * MiB);  // a leaves for it
  const std::uint64_t waits = rig.device.waits();
  REQUIRE(rig.swap->deallocate(unused, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.waits() == waits);  // nothing to wait for
  CHECK(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.waits() > waits);  // after the kernel that used it
  CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
  CHECK(rig.device.violations() == 0);
}

// The program's synchronous free is ordered after every stream that used the buffer, on a side
// stream of its own: not behind other buffers' copies out, whose landing would hold its bytes.
// (A buffer whose own copy out still reads its memory is freed behind that copy:
// SwapMover::copy_out_reads, test_swap_moves.cpp.)
TEST_CASE("explicit swap: a synchronous free is ordered on a stream of its own, not behind the copies out",
          "[engine][swap]") {
  SwapRigOn<StreamSpy> rig(9 * MiB, "belady");
  const StreamId s = 1;
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(a, 4 * MiB, s);
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(b, 4 * MiB, s);
  const DevicePtr c = rig.alloc(4 * MiB);  // a leaves for it
  REQUIRE(rig.device.copies.size() == 1);
  const StreamId copies_out = rig.device.copies.front().stream;
  REQUIRE(copies_out != s);

  REQUIRE(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  const StreamId frees = rig.device.last_record;
  CHECK(frees != copies_out);
  CHECK(frees != s);  // nor on the program's stream: a host free orders none
  for (const DevicePtr p : {a, c}) CHECK(rig.swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.sim.live_bytes() == 0);
  CHECK(rig.device.sim.violations() == 0);
}
