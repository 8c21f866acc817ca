// The op times the swap policy learns (op_timer.hpp, through SwapAdaptor's before_item) are the
// program's work, not memtool's: an item before which memtool spent long in its own swapping
// (here the rule leaving early, on a device whose copies keep the host 2 ms each) is timed from
// its issue, so that host time is not taken for the item's run time (the planner's problem
// carries it as host costs per copy instead). The device stamps timing events with the host's
// clock, so an item's GPU time is what the host spent between its events. A synchronous free
// memtool passes down (cuMemFree synchronises) is the program's synchronisation: its wait is not
// the program's host time.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <unistd.h>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "memtool/swapper/problem.hpp"
#include "sim_forwarding_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr auto kSlowCopy = std::chrono::milliseconds(2);

// SimDevice whose timing events carry the host's clock and whose copies keep the host kSlowCopy.
class SlowCopies final : public test::SimForwardingDevice {
 public:
  Status create_timing_event(EventId* out) override { return sim.create_event(out); }
  Status record_event(EventId event, StreamId stream) override {
    stamp_[event] = std::chrono::steady_clock::now();
    return sim.record_event(event, stream);
  }
  Status elapsed_ns(EventId start, EventId end, double* out) override {
    const auto a = stamp_.find(start);
    const auto b = stamp_.find(end);
    if (a == stamp_.end() || b == stamp_.end()) return kNotSupported;
    *out = std::chrono::duration<double, std::nano>(b->second - a->second).count();
    return kSuccess;
  }
  void destroy_event(EventId event) override {
    stamp_.erase(event);
    sim.destroy_event(event);
  }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    std::this_thread::sleep_for(kSlowCopy);
    return sim.copy_device(dst, src, bytes, stream);
  }

 private:
  std::map<EventId, std::chrono::steady_clock::time_point> stamp_;
};

// The same clock, with frees that keep the host kSlowFree (cuMemFree's wait for the device).
class SlowFrees final : public test::SimForwardingDevice {
 public:
  static constexpr auto kSlowFree = std::chrono::milliseconds(5);
  Status create_timing_event(EventId* out) override { return sim.create_event(out); }
  Status record_event(EventId event, StreamId stream) override {
    stamp_[event] = std::chrono::steady_clock::now();
    return sim.record_event(event, stream);
  }
  Status elapsed_ns(EventId start, EventId end, double* out) override {
    const auto a = stamp_.find(start);
    const auto b = stamp_.find(end);
    if (a == stamp_.end() || b == stamp_.end()) return kNotSupported;
    *out = std::chrono::duration<double, std::nano>(b->second - a->second).count();
    return kSuccess;
  }
  void destroy_event(EventId event) override {
    stamp_.erase(event);
    sim.destroy_event(event);
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    if (kind == MemoryKind::device) std::this_thread::sleep_for(kSlowFree);
    return sim.free(ptr, kind, stream);
  }

 private:
  std::map<EventId, std::chrono::steady_clock::time_point> stamp_;
};

}  // namespace

TEST_CASE("swap learning: a synchronous free passed down is the program's synchronisation", "[engine][swap]") {
  // Each iteration: A, B (4 MiB, persistent) used by items 0 and 1; a small buffer S (below
  // MEMTOOL_SWAP_MIN_BYTES: memtool never moves it, its free goes to the driver) allocated
  // before item 1 and freed after it; then A again. The free waits kSlowFree, as cuMemFree waits
  // for the device.
  SlowFrees device;
  const std::filesystem::path problem =
      std::filesystem::temp_directory_path() / ("memtool_learned_syncs_" + std::to_string(::getpid()));
  std::filesystem::remove(problem);
  SwapOptions options;
  options.mode = SwapMechanism::explicit_copies;
  options.budget_bytes = 6 * MiB;  // A and B do not fit together: a plan is made (and its problem written)
  options.min_bytes = MiB;
  options.schedule_trial = false;
  options.problem_path = problem.string();
  std::unique_ptr<Resource> swap = make_swap(device, make_device_resource(device, true), options);
  const auto alloc = [&](std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  };
  const auto kernel = [&](DevicePtr ptr) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
  };
  const DevicePtr a = alloc(4 * MiB);
  const DevicePtr b = alloc(4 * MiB);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int iteration = 0; !std::filesystem::exists(problem) && std::chrono::steady_clock::now() < deadline;
       ++iteration) {
    swap->on_boundary(Boundary{});
    kernel(a);
    const DevicePtr small = alloc(64 * 1024);
    kernel(b);
    REQUIRE(swap->deallocate(small, MemoryKind::device, 0) == kSuccess);
    kernel(a);
    if (iteration == 0) kernel(b);  // the first iteration is not learned from (as above)
  }
  for (const DevicePtr p : {a, b}) REQUIRE(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  swap->shutdown(true);
  REQUIRE(std::filesystem::exists(problem));
  std::ifstream in(problem);
  const memtool::swapper::Problem learned = memtool::swapper::read_problem(in);
  std::filesystem::remove(problem);
  REQUIRE(learned.iteration.ops.size() == 3);
  CHECK(learned.iteration.host_timed);
  CHECK_FALSE(learned.iteration.ops[0].syncs);
  CHECK(learned.iteration.ops[1].syncs);  // the free after item 1 waited for the device
  // Its wait is not the program's host time (half of it: room for a loaded machine's delays).
  const std::chrono::duration<double, std::milli> host(static_cast<double>(learned.iteration.ops[1].host_ns) / 1e6);
  INFO("item 1's host time learned at " << host.count() << " ms");
  CHECK(host < 0.5 * SlowFrees::kSlowFree);
}

TEST_CASE("swap learning: an item is not charged memtool's own swapping before its issue", "[engine][swap]") {
  // Each iteration: A, B, C, D (4 MiB, persistent) used by items 0-3; T (10 MiB) allocated before
  // item 4, used by it and freed; then C, A, D again. The budget is 16 MiB and the rule looks one
  // item ahead: as D's item is issued it sends out B, A and C for T (6 ms of slow copies).
  SlowCopies device;
  const std::filesystem::path problem =
      std::filesystem::temp_directory_path() / ("memtool_learned_times_" + std::to_string(::getpid()));
  std::filesystem::remove(problem);
  SwapOptions options;
  options.mode = SwapMechanism::explicit_copies;
  options.budget_bytes = 16 * MiB;
  options.min_bytes = MiB;
  options.lookahead = 1;
  options.schedule_trial = false;
  options.problem_path = problem.string();
  std::unique_ptr<Resource> swap = make_swap(device, make_device_resource(device, true), options);
  const auto alloc = [&](std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  };
  const auto kernel = [&](DevicePtr ptr) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
  };
  const std::vector<DevicePtr> buffers = {alloc(4 * MiB), alloc(4 * MiB), alloc(4 * MiB), alloc(4 * MiB)};
  // Until the plan's problem is written (planned on its own thread), at most a few seconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int iteration = 0; !std::filesystem::exists(problem) && std::chrono::steady_clock::now() < deadline;
       ++iteration) {
    swap->on_boundary(Boundary{});
    for (const std::size_t b : {0, 1, 2, 3}) kernel(buffers[b]);
    const DevicePtr t = alloc(10 * MiB);
    kernel(t);
    REQUIRE(swap->deallocate(t, MemoryKind::device, 0) == kSuccess);
    for (const std::size_t b : {2, 0, 3}) kernel(buffers[b]);
    // The first iteration, with no last one to tell the rule what comes, is not learned from:
    // one item more than the next.
    if (iteration == 0) kernel(buffers[1]);
  }
  for (const DevicePtr p : buffers) REQUIRE(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  swap->shutdown(true);
  REQUIRE(std::filesystem::exists(problem));
  std::ifstream in(problem);
  const memtool::swapper::Problem learned = memtool::swapper::read_problem(in);
  std::filesystem::remove(problem);
  REQUIRE(learned.iteration.ops.size() == 8);
  // D's item: the copies sent out as it was issued (3 x kSlowCopy) are not its time (half of
  // them: room for a loaded machine's delays).
  const std::chrono::duration<double, std::milli> d(static_cast<double>(learned.iteration.ops[3].duration_ns) / 1e6);
  INFO("D's item learned at " << d.count() << " ms");
  CHECK(d < 1.5 * kSlowCopy);
  CHECK(device.sim.violations() == 0);
}
