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
constexpr auto kSlowFree = std::chrono::milliseconds(5);

// SimDevice whose timing events carry the host's clock, whose copies keep the host kSlowCopy
// and whose synchronous frees keep it kSlowFree (cuMemFree's wait for the device).
class SlowDevice final : public test::SimForwardingDevice {
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
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    if (kind == MemoryKind::device) std::this_thread::sleep_for(kSlowFree);
    return sim.free(ptr, kind, stream);
  }

 private:
  std::map<EventId, std::chrono::steady_clock::time_point> stamp_;
};

// The swap policy over `device`, explicit mode, buffers of 1 MiB and more swapped, no trial.
struct Learning {
  SlowDevice& device;
  std::filesystem::path problem;
  std::unique_ptr<Resource> swap;

  Learning(SlowDevice& d, std::uint64_t budget, std::uint64_t lookahead, const char* name)
      : device(d), problem(std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))) {
    std::filesystem::remove(problem);
    SwapOptions options;
    options.mode = SwapMechanism::explicit_copies;
    options.budget_bytes = budget;
    options.min_bytes = MiB;
    if (lookahead != 0) options.lookahead = lookahead;
    options.schedule_trial = false;
    options.problem_path = problem.string();
    swap = make_swap(device, make_device_resource(device, true), options);
  }
  DevicePtr alloc(std::uint64_t size) const {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  }
  void free(DevicePtr ptr) const { REQUIRE(swap->deallocate(ptr, MemoryKind::device, 0) == kSuccess); }
  void kernel(DevicePtr ptr) const {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
  }
  // Runs `iteration(i)` after each boundary until the plan's problem is written (planned on its
  // own thread: a few seconds at most), frees `buffers`, and reads the problem back.
  template <class Iteration>
  memtool::swapper::Problem learn(Iteration iteration, std::initializer_list<DevicePtr> buffers) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int i = 0; !std::filesystem::exists(problem) && std::chrono::steady_clock::now() < deadline; ++i) {
      swap->on_boundary(Boundary{});
      iteration(i);
    }
    for (const DevicePtr p : buffers) free(p);
    swap->shutdown(true);
    REQUIRE(std::filesystem::exists(problem));
    std::ifstream in(problem);
    memtool::swapper::Problem learned = memtool::swapper::read_problem(in);
    std::filesystem::remove(problem);
    return learned;
  }
};

}  // namespace

TEST_CASE("swap learning: a synchronous free passed down is the program's synchronisation", "[engine][swap]") {
  // Each iteration: A, B (4 MiB, persistent) used by items 0 and 1; a small buffer S (below
  // MEMTOOL_SWAP_MIN_BYTES: memtool never moves it, its free goes to the driver) allocated
  // before item 1 and freed after it; then A again. The free waits kSlowFree, as cuMemFree waits
  // for the device. A and B do not fit the budget together: a plan is made (its problem written).
  SlowDevice device;
  Learning l(device, 6 * MiB, 0, "memtool_learned_syncs_");
  const DevicePtr a = l.alloc(4 * MiB);
  const DevicePtr b = l.alloc(4 * MiB);
  const memtool::swapper::Problem learned = l.learn(
      [&](int iteration) {
        l.kernel(a);
        const DevicePtr small = l.alloc(64 * 1024);
        l.kernel(b);
        l.free(small);
        l.kernel(a);
        if (iteration == 0) l.kernel(b);  // the first iteration is not learned from (below)
      },
      {a, b});
  REQUIRE(learned.iteration.ops.size() == 3);
  CHECK(learned.iteration.host_timed);
  CHECK_FALSE(learned.iteration.ops[0].syncs);
  CHECK(learned.iteration.ops[1].syncs);  // the free after item 1 waited for the device
  // Its wait is not the program's host time (half of it: room for a loaded machine's delays).
  const std::chrono::duration<double, std::milli> host(static_cast<double>(learned.iteration.ops[1].host_ns) / 1e6);
  INFO("item 1's host time learned at " << host.count() << " ms");
  CHECK(host < 0.5 * kSlowFree);
  CHECK(device.sim.violations() == 0);
}

TEST_CASE("swap learning: an item is not charged memtool's own swapping before its issue", "[engine][swap]") {
  // Each iteration: A, B, C, D (4 MiB, persistent) used by items 0-3; T (10 MiB) allocated before
  // item 4, used by it and freed; then C, A, D again. The budget is 16 MiB and the rule looks one
  // item ahead: as D's item is issued it sends out B, A and C for T (6 ms of slow copies).
  SlowDevice device;
  Learning l(device, 16 * MiB, 1, "memtool_learned_times_");
  const DevicePtr a = l.alloc(4 * MiB);
  const DevicePtr b = l.alloc(4 * MiB);
  const DevicePtr c = l.alloc(4 * MiB);
  const DevicePtr d = l.alloc(4 * MiB);
  const memtool::swapper::Problem learned = l.learn(
      [&](int iteration) {
        for (const DevicePtr p : {a, b, c, d}) l.kernel(p);
        const DevicePtr t = l.alloc(10 * MiB);
        l.kernel(t);
        l.free(t);
        for (const DevicePtr p : {c, a, d}) l.kernel(p);
        // The first iteration, with no last one to tell the rule what comes, is not learned from:
        // one item more than the next.
        if (iteration == 0) l.kernel(b);
      },
      {a, b, c, d});
  REQUIRE(learned.iteration.ops.size() == 8);
  // D's item: the copies sent out as it was issued (3 x kSlowCopy) are not its time (half of
  // them: room for a loaded machine's delays).
  const std::chrono::duration<double, std::milli> dt(static_cast<double>(learned.iteration.ops[3].duration_ns) / 1e6);
  INFO("D's item learned at " << dt.count() << " ms");
  CHECK(dt < 1.5 * kSlowCopy);
  CHECK(device.sim.violations() == 0);
}
