// The swapper's schedule in the process: an observed iteration becomes the swapper's input with
// the right lifetimes and names (swap_observation.hpp), a schedule becomes triggers at the right
// work items, wrapping into the next iteration under the right name, and learns from a late
// copy-in (swap_schedule.hpp); on the simulated device a periodic program is planned, served from the schedule with its
// bytes intact, and falls back when it drifts.
#include <catch2/catch.hpp>

#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"
#include "planned_swaps.hpp"
#include "swap_observation.hpp"
#include "swap_schedule.hpp"

using namespace memtool::engine;
using namespace memtool::engine::detail;
namespace swapper = memtool::swapper;

namespace {

// An iteration's times with the GPU's only (no host times).
ItemTimes gpu_times(std::vector<double> ns) {
  ItemTimes times;
  times.gpu_ns = std::move(ns);
  return times;
}

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

std::vector<std::uint32_t> ops_of(const swapper::Buffer& b) {
  std::vector<std::uint32_t> ops;
  for (const swapper::Access& a : b.accesses) ops.push_back(a.op);
  return ops;
}

const swapper::Buffer& named(const IterationLog::Input& in, Birth birth, std::uint64_t id) {
  for (std::size_t i = 0; i < in.names.size(); ++i) {
    if (in.names[i] == BufferName{birth, id}) return in.iteration.buffers.at(i);
  }
  FAIL("no buffer named " << static_cast<int>(birth) << "/" << id);
  return in.iteration.buffers.front();
}

}  // namespace

// Allocated and freed before the next item, no item between: live during no op, so no buffer,
// but the op's transient bytes (swapper::Op::transient_bytes), which the executor makes room for.
TEST_CASE("swap schedule: allocations freed before the next item are its op's transient bytes",
          "[engine][swap][schedule]") {
  IterationLog log;
  log.clear();
  log.allocated(0, 4 * MiB, 0x4000);
  (void)log.item();  // item 0
  log.used(BufferName{Birth::current, 0});
  log.allocated(1, 2 * MiB, 0x5000);
  log.freed(BufferName{Birth::current, 1});
  log.allocated(2, 6 * MiB, 0x6000);
  log.freed(BufferName{Birth::current, 2});
  (void)log.item();  // item 1
  log.used(BufferName{Birth::current, 0});
  log.freed(BufferName{Birth::current, 0});
  std::string why;
  const auto in = log.to_input(gpu_times({10, 20}), why);
  REQUIRE(in);
  CHECK(in->iteration.buffers.size() == 1);
  REQUIRE(in->iteration.ops.size() == 2);
  CHECK(in->iteration.ops[0].transient_bytes == 0);
  CHECK(in->iteration.ops[1].transient_bytes == 8 * MiB);
}

// A buffer's footprint is what the budget counts (its size in the swapper's input), its own bytes
// what a copy of it moves (swapper::Buffer::copy_bytes); one alive at the start without them
// copies its footprint.
TEST_CASE("swap schedule: the input carries what a copy of each buffer moves", "[engine][swap][schedule]") {
  IterationLog log;
  log.clear();
  log.alive(BufferName{Birth::persistent, 0x1000}, 2 * MiB, 0x1000);
  log.allocated(0, 8 * MiB, 0x4000, 6422528);
  log.allocated(1, 2 * MiB, 0x5000);
  (void)log.item();
  log.used(BufferName{Birth::current, 0});
  log.used(BufferName{Birth::current, 1});
  log.used(BufferName{Birth::persistent, 0x1000});
  (void)log.item();
  log.used(BufferName{Birth::current, 0});
  log.freed(BufferName{Birth::current, 0});
  log.freed(BufferName{Birth::current, 1});
  std::string why;
  const auto in = log.to_input(gpu_times({10, 20}), why);
  REQUIRE(in);
  const swapper::Buffer& activation = named(*in, Birth::current, 0);
  CHECK(activation.size == 8 * MiB);
  CHECK(activation.copy_bytes == 6422528);
  CHECK(activation.moved_bytes() == 6422528);
  CHECK(named(*in, Birth::current, 1).moved_bytes() == 2 * MiB);
  CHECK(named(*in, Birth::persistent, 0x1000).moved_bytes() == 2 * MiB);
}

TEST_CASE("swap schedule: an observed iteration as the swapper's input", "[engine][swap][schedule]") {
  IterationLog log;
  log.clear();
  log.alive(BufferName{Birth::persistent, 0x1000}, 8 * MiB, 0x1000);  // a weight
  log.alive(BufferName{Birth::previous, 1}, 2 * MiB, 0x2000);         // made last iteration, freed at item 1
  log.alive(BufferName{Birth::previous, 2}, 2 * MiB, 0x3000);         // made last iteration, lives on
  log.allocated(0, 4 * MiB, 0x4000);                                  // an activation
  (void)log.item();                                                   // item 0
  log.used(BufferName{Birth::current, 0});
  log.used(BufferName{Birth::persistent, 0x1000});
  (void)log.item();  // item 1
  log.used(BufferName{Birth::previous, 1});
  log.freed(BufferName{Birth::previous, 1});
  log.allocated(1, 2 * MiB, 0x5000);  // crosses into the next iteration, like previous 1 into this one
  (void)log.item();                   // item 2
  log.used(BufferName{Birth::current, 1});
  log.used(BufferName{Birth::previous, 2});
  log.reaches_all();  // it may reach every buffer too (a launch with no pointer argument)
  (void)log.item();   // item 3
  log.used(BufferName{Birth::current, 0});
  log.used(BufferName{Birth::persistent, 0x1000});
  log.freed(BufferName{Birth::current, 0});
  CHECK(log.items() == 4);
  CHECK(log.signature() == std::vector<std::uint64_t>{4 * MiB, 2 * MiB});

  std::string why;
  const auto in = log.to_input(gpu_times({10, 20, 30, 40}), why);
  REQUIRE(in);
  CHECK(swapper::validate(in->iteration).empty());
  REQUIRE(in->iteration.ops.size() == 4);
  CHECK(in->iteration.ops[2].duration_ns == 30);
  for (std::size_t i = 0; i < 4; ++i) CHECK(in->iteration.ops[i].reaches_all == (i == 2));

  const swapper::Buffer& weight = named(*in, Birth::persistent, 0x1000);
  CHECK(weight.persistent);
  CHECK(weight.swappable);
  CHECK(ops_of(weight) == std::vector<std::uint32_t>{0, 3});

  const swapper::Buffer& activation = named(*in, Birth::current, 0);
  CHECK_FALSE(activation.persistent);
  CHECK(activation.alloc_before_op == 0);
  CHECK(activation.free_after_op == 3);
  CHECK(ops_of(activation) == std::vector<std::uint32_t>{0, 3});

  // The crossing buffer: allocated before item 2, freed in the next iteration after item 1,
  // with its twin's uses before that.
  const swapper::Buffer& crossing = named(*in, Birth::current, 1);
  CHECK(crossing.crosses_iteration());
  CHECK(crossing.alloc_before_op == 2);
  CHECK(crossing.free_after_op == 1);
  CHECK(ops_of(crossing) == std::vector<std::uint32_t>{1, 2});

  // Made last iteration and still alive: persistent from the next boundary on, by its address.
  const swapper::Buffer& long_lived = named(*in, Birth::persistent, 0x3000);
  CHECK(long_lived.persistent);
  CHECK(ops_of(long_lived) == std::vector<std::uint32_t>{2});
  CHECK(in->iteration.buffers.size() == 4);  // previous 1 went with its twin

  CHECK_FALSE(log.to_input(gpu_times({1, 2}), why));  // a time per item, or nothing
  CHECK_FALSE(in->iteration.host_timed);              // GPU times only: no host timeline

  // With the program's host times and synchronisations, the ops carry them.
  ItemTimes times;
  times.gpu_ns = {10, 20, 30, 40};
  times.host_ns = {5, 0, 70, 12.6};
  times.syncs = {false, false, true, false};
  times.host_timed = true;
  const auto timed = log.to_input(times, why);
  REQUIRE(timed);
  CHECK(timed->iteration.host_timed);
  std::vector<std::uint64_t> host;
  std::vector<bool> syncs;
  for (const swapper::Op& op : timed->iteration.ops) {
    host.push_back(op.host_ns);
    syncs.push_back(op.syncs);
  }
  CHECK(host == std::vector<std::uint64_t>{5, 0, 70, 12});
  CHECK(syncs == times.syncs);
  CHECK(timed->iteration.ops[2].duration_ns == 30);
  // Not measured with memtool's time taken out: none of it reaches the swapper.
  times.host_timed = false;
  const auto untimed = log.to_input(times, why);
  REQUIRE(untimed);
  CHECK_FALSE(untimed->iteration.host_timed);
  CHECK(untimed->iteration.ops[2].host_ns == 0);
  CHECK_FALSE(untimed->iteration.ops[2].syncs);
}

TEST_CASE("swap schedule: triggers at work items, wrapping into the next iteration, earlier when late",
          "[engine][swap][schedule]") {
  // Buffer 0 (current 5): out after item 1, back at item 7 of a 10-item iteration. Buffer 1
  // (current 6): out after item 8, back at item 2 of the next iteration (12 unrolled).
  const swapper::Schedule schedule{"ours", {test::swap_one_ahead(0, 1, 8), test::swap_one_ahead(1, 8, 13)}};
  SwapSchedule s(schedule, {BufferName{Birth::current, 5}, BufferName{Birth::current, 6}}, 10, {MiB, MiB}, 0);

  REQUIRE(s.outs_at(2).size() == 1);
  CHECK(s.outs_at(2)[0].name == BufferName{Birth::current, 5});
  REQUIRE(s.ins_at(7).size() == 1);
  CHECK(s.ins_at(7)[0].swap == 0);
  REQUIRE(s.outs_at(9).size() == 1);
  CHECK(s.outs_at(9)[0].name == BufferName{Birth::current, 6});
  REQUIRE(s.ins_at(2).size() == 1);
  CHECK(s.ins_at(2)[0].name == BufferName{Birth::previous, 6});  // made in the iteration before
  std::size_t triggers = 0;
  for (std::uint32_t i = 0; i < 10; ++i) triggers += s.outs_at(i).size() + s.ins_at(i).size();
  CHECK(triggers == 4);
  CHECK(s.outs_at(10).empty());

  CHECK(s.lead(0) == 1);
  s.late(0, 1e6);  // the lead doubles, from the next boundary on
  CHECK(s.lead(0) == 2);
  CHECK(s.ins_at(7).size() == 1);
  s.rebuild();
  CHECK(s.ins_at(7).empty());
  CHECK(s.ins_at(6).size() == 1);
  for (int i = 0; i < 10; ++i) s.late(0, 1e6);
  s.rebuild();
  CHECK(s.ins_at(2).size() == 2);  // never before its copy-out

  // Put back where they were, with no more learning.
  const std::vector<std::uint64_t> at{7, 12};
  s.restore_copy_ins(at);
  CHECK(s.copy_ins() == at);
  s.rebuild();
  CHECK(s.lead(0) == 1);
  REQUIRE(s.ins_at(7).size() == 1);
  s.late(0, 1e6);
  s.rebuild();
  CHECK(s.copy_ins() == at);
  CHECK(s.ins_at(7).size() == 1);
  CHECK(s.expects(0, MiB));
  CHECK_FALSE(s.expects(0, 2 * MiB));
  CHECK_FALSE(s.expects(2, MiB));
}

TEST_CASE("swap schedule: a copy-in late as planned keeps its trigger, one later than planned moves",
          "[engine][swap][schedule]") {
  // The plan's simulation has swap 0's copy-in 4 ms late (a busy link: issued earlier, it would
  // only hold its bytes longer) and swap 1's on time.
  const swapper::Schedule schedule{"ours", {test::swap_one_ahead(0, 1, 8), test::swap_one_ahead(1, 2, 9)}};
  SwapSchedule s(schedule, {BufferName{Birth::current, 5}, BufferName{Birth::current, 6}}, 10, {MiB, MiB}, 0);
  s.set_planned_lateness({4e6, 0.0});
  s.late(0, 4.5e6);  // within what the plan accepted
  s.late(1, 1e3);    // planned on time: any lateness is learned from
  s.rebuild();
  CHECK(s.copy_ins() == std::vector<std::uint64_t>{7, 7});  // swap 0 stays at 7, swap 1 moved from 8
  s.late(0, 6e6);                                           // later than planned
  s.rebuild();
  CHECK(s.copy_ins() == std::vector<std::uint64_t>{6, 7});
}

namespace {

// A training-like loop on the simulated device: a weight, an activation made early and used
// again late (the swap candidate), and a workspace that needs the room in between.
struct Loop {
  SimDevice device{SimDevice::Options{64 * MiB}};
  std::unique_ptr<Resource> swap;
  DevicePtr weight = 0;

  explicit Loop(std::uint64_t budget, std::string policy) {
    SwapOptions options;
    options.mode = SwapMechanism::explicit_copies;
    options.budget_bytes = budget;
    options.min_bytes = MiB;
    options.policy = std::move(policy);
    options.schedule_trial = false;  // iterations of microseconds: their host times say nothing
    swap = make_swap(device, make_device_resource(device, true), options);
    weight = alloc(4 * MiB);
  }
  DevicePtr alloc(std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  }
  void kernel(std::initializer_list<std::pair<DevicePtr, std::uint64_t>> buffers) {
    std::vector<DevicePtr> bases;
    for (const auto& [ptr, size] : buffers) bases.push_back(ptr);
    swap->before_work(bases, 1);
    for (const auto& [ptr, size] : buffers) REQUIRE(device.access(1, ptr, size));
  }
  void free(DevicePtr ptr) { REQUIRE(swap->deallocate(ptr, MemoryKind::device, 1) == kSuccess); }
  // One iteration; `workspace` bytes are needed while the activation idles.
  void iteration(std::uint32_t seed, std::uint64_t workspace) {
    swap->on_boundary(Boundary{});
    const DevicePtr activation = alloc(8 * MiB);
    kernel({{activation, 8 * MiB}, {weight, 4 * MiB}});
    device.synchronize();
    REQUIRE(device.fill(activation, 8 * MiB, seed));
    const DevicePtr work = alloc(workspace);
    for (int i = 0; i < 6; ++i) kernel({{work, workspace}});
    free(work);
    kernel({{activation, 8 * MiB}, {weight, 4 * MiB}});
    device.synchronize();
    CHECK(device.verify(activation, 8 * MiB, seed));
    free(activation);
  }
  Summary summary() const {
    Summary s;
    swap->summarize(s);
    return s;
  }
};

}  // namespace

TEST_CASE("swap schedule: a periodic program is served from the schedule, then falls back when it drifts",
          "[engine][swap][schedule]") {
  // 4 + 8 + 8 MiB live at once; the budget holds 14: the activation must leave for the workspace.
  Loop loop(14 * MiB, "ours");
  std::uint32_t seed = 1;
  for (int i = 0; i < 12; ++i) loop.iteration(seed++, 8 * MiB);
  const Summary planned = loop.summary();
  CHECK(planned.swap_policy == "ours");
  CHECK(planned.swap_schedules == 1);
  CHECK(planned.swap_outs_scheduled >= 3);
  CHECK(planned.swap_ins_scheduled >= 3);
  CHECK(planned.peak_device_bytes <= 14 * MiB);
  CHECK(loop.device.violations() == 0);

  // Drift: the workspace changes size. The schedule is dropped, the rule keeps the budget, and
  // a new schedule is learned for the new shape.
  for (int i = 0; i < 12; ++i) loop.iteration(seed++, 6 * MiB);
  const Summary drifted = loop.summary();
  CHECK(drifted.swap_schedule_drops >= 1);
  CHECK(drifted.swap_schedules == 2);
  CHECK(drifted.peak_device_bytes <= 14 * MiB);
  CHECK(loop.device.violations() == 0);
  loop.free(loop.weight);
  loop.swap->shutdown(true);
  CHECK(loop.device.live_bytes() == 0);
}

TEST_CASE("swap schedule: belady plans nothing", "[engine][swap][schedule]") {
  Loop loop(14 * MiB, "belady");
  for (std::uint32_t i = 0; i < 8; ++i) loop.iteration(i + 1, 8 * MiB);
  const Summary s = loop.summary();
  CHECK(s.swap_schedules == 0);
  CHECK(s.swap_outs_scheduled == 0);
  CHECK(s.bytes_swapped_out >= 8 * MiB);
  CHECK(s.peak_device_bytes <= 14 * MiB);
  CHECK(loop.device.violations() == 0);
  loop.free(loop.weight);
  loop.swap->shutdown(true);
}
