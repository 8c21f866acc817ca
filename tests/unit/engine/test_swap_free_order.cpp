// The program's synchronous free of a swapped buffer, in explicit swapping, of one no work has
// used (SwapBuffer::blank: the allocations a program frees unused): carried out at once, ordered
// after nothing, where a used one's free waits for an event behind its users. White-box on the
// simulated device: the events the free records.
#include <catch2/catch.hpp>

#include <memory>

#include "memtool/engine/resources.hpp"
#include "sim_forwarding_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// Counts the events recorded.
class EventSpy final : public test::SimForwardingDevice {
 public:
  int records = 0;

  Status record_event(EventId event, StreamId stream) override {
    ++records;
    return sim.record_event(event, stream);
  }
};

struct Rig {
  EventSpy device;
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

  // One a kernel used: its free waits for an event behind that kernel.
  CHECK(rig.swap->deallocate(b, MemoryKind::device, 0) == kSuccess);
  CHECK(rig.device.records > records);

  CHECK(rig.swap->deallocate(a, MemoryKind::device, 0) == kSuccess);
  rig.swap->shutdown(true);
  CHECK(rig.device.sim.live_bytes() == 0);
  CHECK(rig.device.sim.violations() == 0);
}
