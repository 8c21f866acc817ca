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
#include "sim_forwarding_device.hpp"
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
class CopyLog final : public memtool::engine::test::SimForwardingDevice {
 public:
  std::vector<DevicePtr> copied_from;

  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    copied_from.push_back(src);
    return sim.copy_device(dst, src, bytes, stream);
  }
};

using Copied = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
// "item:buffer ..." with A-D by name, for readable failures.
std::string show(const Copied& copied) {
  std::string out;
  for (const auto& [item, buffer] : copied) out += std::to_string(item) + ":" + static_cast<char>('A' + buffer) + " ";
  return out;
}

// The script's shape: the rule looking `lookahead` items (ops) ahead (0: copies out only where
// memory is needed: T's allocation); with `reach`, R, an item with no pointer argument, between
// D's item and T's allocation (items A B C D R T C A D).
struct Script {
  std::uint32_t lookahead = 0;
  bool reach = false;
};
constexpr std::uint32_t kReach = 4;  // R's item, when there is one; T is allocated before the next

// The executor's copies out of the last of `iterations` iterations, as (the item they came before,
// the buffer).
Copied executor_copies(int iterations, Script script) {
  CopyLog device;
  SwapOptions options;
  options.mode = SwapMechanism::explicit_copies;
  options.budget_bytes = kBudget;
  options.policy = "belady";  // the rule alone
  options.min_bytes = MiB;
  options.lookahead = script.lookahead;
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
  const auto issued = [&] {
    note();
    ++item;
  };
  const auto kernel = [&](DevicePtr ptr) {
    const DevicePtr bases[] = {ptr};
    swap->before_work(bases, 1);
    issued();
  };
  for (int iteration = 0; iteration < iterations; ++iteration) {
    swap->on_boundary(Boundary{});
    note();
    copied.clear();
    item = 0;
    for (const Name n : kBefore) kernel(buffers[n]);
    if (script.reach) {
      WorkItem reach;
      reach.stream = 1;
      reach.reaches_all = true;
      swap->before_item(reach);
      issued();
    }
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
// buffer), and how many were called off.
std::pair<Copied, std::uint32_t> simulator_copies(Script script) {
  const std::uint32_t r = script.reach ? 1 : 0;  // the ops after D's shift by R
  ms::Iteration it = memtool::test::ops_of(8 + r, 1000);
  // Items as ops: A used by ops 0 and 6, B by 1, C by 2 and 5, D by 3 and 7 (kBefore, kAfter).
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {0, 6 + r}) == A);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {1}) == B);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {2, 5 + r}) == C);
  REQUIRE(memtool::test::add_persistent(it, kBuffer, {3, 7 + r}) == D);
  if (script.reach) it.ops[kReach].reaches_all = true;
  memtool::test::add_buffer(it, kTransient, 4 + r, 4 + r, {4 + r});
  ms::SimulateOptions held;
  held.hold_budget_bytes = kBudget;
  held.rule_lookahead_ops = script.lookahead;
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
  const Copied simulated = simulator_copies({}).first;
  CHECK(show(simulated) == show(expected));
  // From the second iteration on the executor has the last one as its oracle; the first is
  // swapped by least recent use (no future known).
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies(iterations, {})) == show(simulated));
  }
}

TEST_CASE("one rule: the executor and the simulator leave early at the same item", "[engine][swap][rule]") {
  // Looking one item ahead, both make room for T as D's item is issued (T is allocated before the
  // next): B, then A and C, needed after T's item; D, used by that item, stays. With T's item, C
  // (needed next) comes back ahead, and D, needed last, leaves for it.
  const Copied expected = {{3, B}, {3, A}, {3, C}, {4, D}};
  const Copied simulated = simulator_copies({1, false}).first;
  CHECK(show(simulated) == show(expected));
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies(iterations, {1, false})) == show(simulated));
  }
}

TEST_CASE("one rule: neither the executor nor the simulator leaves early into an item reaching every buffer",
          "[engine][swap][rule]") {
  // Looking 2 items ahead with R before T: leaving early for T at C's or D's item would start
  // copies that R, within those 2 items, calls off (EvictionRule::leaves_unwaited): none starts;
  // T's allocation sends out B, D, A as without R.
  const Copied expected = {{kReach + 1, B}, {kReach + 1, D}, {kReach + 1, A}};
  const auto [simulated, called_off] = simulator_copies({2, true});
  CHECK(show(simulated) == show(expected));
  CHECK(called_off == 0);
  for (const int iterations : {3, 4}) {
    INFO("iterations " << iterations);
    CHECK(show(executor_copies(iterations, {2, true})) == show(simulated));
  }
}
