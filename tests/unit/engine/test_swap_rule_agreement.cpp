// One rule (swapper/include/memtool/swapper/eviction_rule.hpp): the executor (SwapAdaptor on the
// simulated device) and the simulator that predicts it (memtool simulate's budget holder) run the
// same script and send out the same buffers in the same order. Each iteration: A, B, C, D of
// 4 MiB (persistent) are used by work items 0-3 in turn; T (10 MiB) is allocated before item 4,
// used by it and freed; then C, A and D are used again (items 5, 6, 7). The budget is the four
// buffers' 16 MiB, so T's allocation sends out 12 MiB: farthest next use first, B (next
// iteration), D (item 7), A (item 6); C (item 5) stays. Least recent use would send A, B, C.
// Looking ahead, both leave early for T at the same item. With an item reaching every buffer before
// T's allocation, neither side leaves early into it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "iteration_builder.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"
#include "memtool/swapper/simulate.hpp"

using namespace memtool::engine;
namespace ms = memtool::swapper;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kBuffer = 4 * MiB;
constexpr std::uint64_t kTransient = 10 * MiB;
constexpr std::uint64_t kBudget = 16 * MiB;
enum Name : std::uint32_t { A, B, C, D };
// The script's uses after T's item, and each item's buffer before it.
constexpr Name kBefore[] = {A, B, C, D};
constexpr Name kAfter[] = {C, A, D};

// SimDevice, noting the source of every device-to-device copy (an explicit copy out).
class CopyLog final : public Device {
 public:
  SimDevice sim{SimDevice::Options{64 * MiB}};
  std::vector<DevicePtr> copied_from;

  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) override {
    return sim.allocate(size, kind, stream, out);
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override { return sim.free(ptr, kind, stream); }
  Status create_event(EventId* out) override { return sim.create_event(out); }
  Status record_event(EventId event, StreamId stream) override { return sim.record_event(event, stream); }
  Status stream_wait_event(StreamId stream, EventId event) override { return sim.stream_wait_event(stream, event); }
  bool event_completed(EventId event) override { return sim.event_completed(event); }
  void destroy_event(EventId event) override { sim.destroy_event(event); }
  Status synchronize_event(EventId event) override { return sim.synchronize_event(event); }
  Status create_stream(StreamId* out) override { return sim.create_stream(out); }
  Status vmm_granularity(std::uint64_t* bytes) override { return sim.vmm_granularity(bytes); }
  Status host_vmm_granularity(std::uint64_t* bytes) override { return sim.host_vmm_granularity(bytes); }
  Status reserve(std::uint64_t bytes, DevicePtr* out) override { return sim.reserve(bytes, out); }
  Status unreserve(DevicePtr ptr, std::uint64_t bytes) override { return sim.unreserve(ptr, bytes); }
  Status create_physical(std::uint64_t bytes, PhysicalHandle* out) override { return sim.create_physical(bytes, out); }
  Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) override {
    return sim.create_host_physical(bytes, out);
  }
  Status release_physical(PhysicalHandle handle) override { return sim.release_physical(handle); }
  Status map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) override { return sim.map(ptr, bytes, handle); }
  Status unmap(DevicePtr ptr, std::uint64_t bytes) override { return sim.unmap(ptr, bytes); }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    copied_from.push_back(src);
    return sim.copy_device(dst, src, bytes, stream);
  }
  Status copy_to_host(void* dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    return sim.copy_to_host(dst, src, bytes, stream);
  }
};

// The executor's copies out of the last of `iterations` iterations, as (the item they came before,
// the buffer), with the rule looking `lookahead` items ahead (0: copies out only where memory is
// needed: T's allocation).
using Copied = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
// "item:buffer ..." with A-D by name, for readable failures.
std::string show(const Copied& copied) {
  std::string out;
  for (const auto& [item, buffer] : copied) out += std::to_string(item) + ":" + static_cast<char>('A' + buffer) + " ";
  return out;
}

Copied executor_copies(int iterations, std::uint64_t lookahead) {
  CopyLog device;
  SwapOptions options;
  options.mode = SwapMechanism::explicit_copies;
  options.budget_bytes = kBudget;
  options.policy = "belady";  // the rule alone
  options.min_bytes = MiB;
  options.lookahead = lookahead;
  std::unique_ptr<Resource> swap = make_swap(device, make_device_resource(device, true), options);
  const auto alloc = [&](std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  };
  const std::vector<DevicePtr> buffers = {alloc(kBuffer), alloc(kBuffer), alloc(kBuffer), alloc(kBuffer)};
  Copied copied;
  std::uint32_t item = 0;
  std::size_t seen = 0;
  const auto note = [&] {  // the copies out since the last note came before `item`
    for (; seen < device.copied_from.size(); ++seen) {
      const auto it = std::find(buffers.begin(), buffers.end(), device.copied_from[seen]);
      if (it != buffers.end()) copied.emplace_back(item, static_cast<std::uint32_t>(it - buffers.begin()));
    }
  };
  const auto kernel = [&](DevicePtr ptr) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
    note();
    ++item;
  };
  for (int iteration = 0; iteration < iterations; ++iteration) {
    swap->on_boundary(Boundary{});
    note();
    copied.clear();
    item = 0;
    for (const Name n : kBefore) kernel(buffers[n]);
    const DevicePtr t = alloc(kTransient);
    note();
    kernel(t);
    REQUIRE(swap->deallocate(t, MemoryKind::device, 0) == kSuccess);
    for (const Name n : kAfter) kernel(buffers[n]);
  }
  for (const DevicePtr p : buffers) REQUIRE(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  swap->shutdown(true);
  CHECK(device.sim.violations() == 0);
  return copied;
}

// The simulator's rule copies out of the measured iteration, as (the op they came before, the
// buffer), with the rule looking `lookahead` ops ahead.
Copied simulator_copies(std::uint32_t lookahead) {
  ms::Iteration it = memtool::test::ops_of(8, 1000);
  // Items as ops: A used by ops 0 and 6, B by 1, C by 2 and 5, D by 3 and 7 (kBefore, kAfter).
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {0, 6}) == A);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {1}) == B);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {2, 5}) == C);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {3, 7}) == D);
  memtool::test::add_buffer(it, kTransient, 4, 4, {4});
  ms::SimulateOptions held;
  held.hold_budget_bytes = kBudget;
  held.rule_lookahead_ops = lookahead;
  const ms::Simulation sim = ms::simulate(it, {}, memtool::test::simple_link(4.0), held);
  Copied copied;
  for (const ms::RuleEviction& e : sim.rule_evictions) {
    copied.emplace_back(static_cast<std::uint32_t>(e.out_before_op), e.buffer);
  }
  return copied;
}

// Leaving early under an item that reaches every buffer: the same script with R, an item with no
// pointer argument, between D's item and T's allocation (items A B C D R T C A D), and the rule
// looking 2 items ahead. Leaving early for T at C's or D's item would start copies that R, within
// those 2 items, calls off (EvictionRule::leaves_unwaited): none starts; T's allocation sends out
// B, D, A as before (R's item being issued leaves them all at once, in the same order). Each copy
// out of the last iteration, as (the item it came before, the buffer).
constexpr std::uint32_t kReach = 4;  // R's item; T is allocated before the next one

Copied executor_copies_reaching_all(int iterations) {
  CopyLog device;
  SwapOptions options;
  options.mode = SwapMechanism::explicit_copies;
  options.budget_bytes = kBudget;
  options.policy = "belady";
  options.min_bytes = MiB;
  options.lookahead = 2;
  std::unique_ptr<Resource> swap = make_swap(device, make_device_resource(device, true), options);
  const auto alloc = [&](std::uint64_t size) {
    DevicePtr ptr = 0;
    REQUIRE(swap->allocate(AllocationRequest{size, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    return ptr;
  };
  const std::vector<DevicePtr> buffers = {alloc(kBuffer), alloc(kBuffer), alloc(kBuffer), alloc(kBuffer)};
  Copied copied;
  std::uint32_t item = 0;
  std::size_t seen = 0;
  const auto note = [&] {  // the copies out since the last note came before `item`
    for (; seen < device.copied_from.size(); ++seen) {
      const auto it = std::find(buffers.begin(), buffers.end(), device.copied_from[seen]);
      if (it != buffers.end()) copied.emplace_back(item, static_cast<std::uint32_t>(it - buffers.begin()));
    }
  };
  const auto kernel = [&](DevicePtr ptr) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
    note();
    ++item;
  };
  for (int iteration = 0; iteration < iterations; ++iteration) {
    swap->on_boundary(Boundary{});
    note();
    copied.clear();
    item = 0;
    for (const Name n : kBefore) kernel(buffers[n]);
    WorkItem reach;
    reach.stream = 1;
    reach.reaches_all = true;
    swap->before_item(reach);
    note();
    ++item;
    const DevicePtr t = alloc(kTransient);
    note();
    kernel(t);
    REQUIRE(swap->deallocate(t, MemoryKind::device, 0) == kSuccess);
    for (const Name n : kAfter) kernel(buffers[n]);
  }
  for (const DevicePtr p : buffers) REQUIRE(swap->deallocate(p, MemoryKind::device, 0) == kSuccess);
  swap->shutdown(true);
  CHECK(device.sim.violations() == 0);
  return copied;
}

// The simulator's rule copies out of the measured iteration, and how many were called off.
std::pair<Copied, std::uint32_t> simulator_copies_reaching_all() {
  ms::Iteration it = memtool::test::ops_of(9, 1000);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {0, 7}) == A);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {1}) == B);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {2, 6}) == C);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {3, 8}) == D);
  it.ops[kReach].reaches_all = true;
  memtool::test::add_buffer(it, kTransient, kReach + 1, kReach + 1, {kReach + 1});
  ms::SimulateOptions held;
  held.hold_budget_bytes = kBudget;
  held.rule_lookahead_ops = 2;
  const ms::Simulation sim = ms::simulate(it, {}, memtool::test::simple_link(4.0), held);
  Copied copied;
  for (const ms::RuleEviction& e : sim.rule_evictions) {
    copied.emplace_back(static_cast<std::uint32_t>(e.out_before_op), e.buffer);
  }
  return {copied, sim.leaves_called_off};
}

}  // namespace

TEST_CASE("one rule: the executor and the simulator send out the same buffers in the same order",
          "[engine][swap][rule]") {
  const Copied expected = {{4, B}, {4, D}, {4, A}};
  const Copied simulated = simulator_copies(0);
  CHECK(show(simulated) == show(expected));
  // From the second iteration on the executor has the last one as its oracle; the first is
  // swapped by least recent use (no future known).
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies(iterations, 0)) == show(simulated));
  }
}

TEST_CASE("one rule: the executor and the simulator leave early at the same item", "[engine][swap][rule]") {
  // Looking one item ahead, both make room for T as D's item is issued (T is allocated before the
  // next): B, then A and C, needed after T's item; D, used by that item, stays. With T's item, C
  // (needed next) comes back ahead, and D, needed last, leaves for it.
  const Copied expected = {{3, B}, {3, A}, {3, C}, {4, D}};
  const Copied simulated = simulator_copies(1);
  CHECK(show(simulated) == show(expected));
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies(iterations, 1)) == show(simulated));
  }
}

TEST_CASE("one rule: neither the executor nor the simulator leaves early into an item reaching every buffer",
          "[engine][swap][rule]") {
  const Copied expected = {{kReach + 1, B}, {kReach + 1, D}, {kReach + 1, A}};
  const auto [simulated, called_off] = simulator_copies_reaching_all();
  CHECK(show(simulated) == show(expected));
  CHECK(called_off == 0);
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies_reaching_all(iterations)) == show(simulated));
  }
}
