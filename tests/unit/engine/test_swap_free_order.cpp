// The program's synchronous free of a swapped buffer, in explicit swapping: ordered after the work
// of the streams that used it, and after its own copy out while that is under way (it reads the
// memory), but not behind the copies out of other buffers: queued behind them, the freed bytes
// would stay held until those land, and a copy back that needs them would wait for copies it
// has nothing to do with. White-box on the simulated device: which stream each copy out and the
// free's event go on (a free behind its own copy out under way: the adaptor's deallocate).
#include <catch2/catch.hpp>

#include <memory>
#include <set>

#include "memtool/engine/resources.hpp"
#include "sim_forwarding_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// Notes the streams of device-to-device copies (the VMM mover's copies out and back) and of the
// last event recorded.
class StreamSpy final : public test::SimForwardingDevice {
 public:
  std::set<StreamId> copy_streams;
  StreamId last_record = 0;
  int records = 0;

  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    copy_streams.insert(stream);
    return sim.copy_device(dst, src, bytes, stream);
  }
  Status record_event(EventId event, StreamId stream) override {
    last_record = stream;
    ++records;
    return sim.record_event(event, stream);
  }
};

struct Rig {
  StreamSpy device;
  std::unique_ptr<Resource> swap;

  explicit Rig(std::uint64_t budget) {
    SwapOptions options;
    options.mode = SwapMechanism::explicit_copies;
    options.budget_bytes = budget;
    options.policy = "belady";
    options.min_bytes = MiB;
    swap = make_swap(device, make_device_resource(device, true), options);
  }
  DevicePtr alloc(std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  }
  void kernel(StreamId stream, DevicePtr touched) {
    const std::vector<DevicePtr> t{touched};
    WorkItem w;
    w.stream = stream;
    w.touched = t;
    swap->before_item(w);
    REQUIRE(device.sim.access(stream, touched, 4 * MiB));
  }
};

}  // namespace

TEST_CASE("swap free: a synchronous free waits for its buffer's users, not for other buffers' copies out",
          "[engine][swap]") {
  Rig rig(8 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(1, a);
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(1, b);
  rig.device.copy_streams.clear();
  const DevicePtr c = rig.alloc(4 * MiB);  // a leaves for it: its copy out is under way
  REQUIRE(rig.device.copy_streams.size() == 1);
  const StreamId copies_out = *rig.device.copy_streams.begin();
  REQUIRE(copies_out != 1);

  // b has no copy of its own under way: its free is not queued behind a's copy out.
  REQUIRE(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.last_record != copies_out);
  CHECK(rig.device.last_record != 1);  // nor on the program's stream: the host free orders none

  CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.swap->deallocate(c, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.sim.live_bytes() == 0);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap free: a buffer no work has used is released at its free, ordered after nothing", "[engine][swap]") {
  Rig rig(8 * MiB);
  const DevicePtr a = rig.alloc(4 * MiB);
  rig.kernel(1, a);
  const DevicePtr b = rig.alloc(4 * MiB);
  rig.kernel(1, b);
  const DevicePtr unused = rig.alloc(4 * MiB);  // a leaves for it
  const int records = rig.device.records;
  REQUIRE(rig.swap->deallocate(unused, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.records == records);  // no event: nothing to wait for

  CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.sim.live_bytes() == 0);
  CHECK(rig.device.sim.violations() == 0);
}
