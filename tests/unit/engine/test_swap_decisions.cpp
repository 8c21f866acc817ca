// The swap policy's parts that decide (engine/src/swap/: room.hpp, reach_guard.hpp,
// rule_swap_ins.hpp, schedule_driver.hpp's lateness), white-box on the simulated device, with
// the settling the decisions rest on where the test suite had none: the UVM mover's oldest copy
// out waited for alone, and settling until bytes fit while a stream waits for a value (no host
// wait: frees.hpp, host_waits.hpp). Room: the budget less what the resource below holds, copies
// out and unreached frees left out of the committed bytes, the pools trimmed before any buffer
// leaves, the farthest next use sent first, a buffer a work item being issued touches never sent,
// and what does not fit held off the device while the host may not wait. Reach: a buffer a work
// item may reach kept still under it, an escaped one pinned. The rule's copies back: within a
// buffer's lead only, room for the soonest first. The simulator counts every access not ordered
// after the last one from another stream.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "gated_device.hpp"
#include "memtool/engine/sim_device.hpp"
#include "swap/frees.hpp"
#include "swap/in_flight.hpp"
#include "swap/lateness.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/reach_guard.hpp"
#include "swap/room.hpp"
#include "swap/rule_swap_ins.hpp"
#include "swap/selector.hpp"
#include "swap/swap_in.hpp"
#include "swap/swap_out.hpp"

using namespace memtool::engine;
using detail::SwapBuffer;
using memtool::engine::test::GatedDevice;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kSize = 2 * MiB;  // one of the simulator's VMM granules

// What the policy keeps below it: its reserved bytes count against the budget; a trim gives back
// what the test says it may.
class Below final : public Resource {
 public:
  std::uint64_t reserved = 0;
  std::uint64_t trimmable = 0;  // given back by a trim beyond the threshold
  std::uint64_t kept = 0;       // given back only by a trim of everything
  int trims = 0;
  int trims_all = 0;

  std::string_view name() const override { return "below"; }
  Status allocate(const AllocationRequest&, DevicePtr*) override { return kNotSupported; }
  Status deallocate(DevicePtr, MemoryKind, StreamId) override { return kNotSupported; }
  MemoryUse memory_use() const override { return MemoryUse{reserved, reserved, 0, 0}; }
  std::uint64_t trim_pools(PoolTrim how) override {
    ++trims;
    std::uint64_t freed = trimmable;
    trimmable = 0;
    if (how == PoolTrim::all) {
      ++trims_all;
      freed += kept;
      kept = 0;
    }
    reserved -= freed;
    return freed;
  }
};

// What the swap policy owns, as it hands it to the parts.
struct DecisionRig {
  GatedDevice device;
  detail::SpareEvents events;
  detail::SpareTimingEvents timing;
  detail::HostWaits waits{device};
  std::unique_ptr<detail::SwapMover> mover;
  detail::SideStreams sides{device};
  detail::ScheduleLearner learner{device, timing, "belady", 0, ""};
  detail::StreamJoins joins{device, events};
  detail::UserMarks marks{device, events};
  detail::SwapCounters counters;
  std::uint64_t work = 0;
  std::uint64_t iteration_begin = 0;
  bool in_item = false;
  bool host_waited = false;
  detail::MoveContext moves;
  detail::DeferredFrees frees{moves};
  detail::SwapOut out{moves};
  detail::SwapIn in{moves, frees};
  std::map<DevicePtr, SwapBuffer> buffers;  // node-based, as the policy's: the mover keeps pointers
  detail::BufferNames names;
  detail::InFlightItems in_flight;
  detail::IterationOracle oracle;
  detail::ScheduleSelector selector{detail::SelectorOptions{0.03, 3, false}};
  SwapOptions options;
  Below below;
  detail::Room room{options, moves, frees, out, buffers, in_flight, oracle, below, iteration_begin};
  detail::RuleSwapIns rule_ins{options, moves, room, in, buffers, oracle, selector};
  detail::ReachGuard reach{moves, buffers};
  StreamId program = 0;

  // `uvm`: managed memory moved by prefetches, else explicit VMM copies.
  explicit DecisionRig(bool uvm = false, std::uint64_t budget = 0, std::uint64_t capacity = 64 * MiB)
      : device(capacity),
        mover(uvm ? detail::make_uvm_mover(device, events, waits) : detail::make_vmm_mover(device, events, waits, 0)),
        moves{device, *mover,   events,  timing, waits, sides,   learner,    joins,
              marks,  counters, nullptr, !uvm,   work,  in_item, host_waited} {
    REQUIRE(mover != nullptr);
    REQUIRE(device.create_stream(&program) == kSuccess);
    joins.note(program);
    options.budget_bytes = budget;
    options.lookahead = 4;
  }

  // A buffer born `ordinal`-th in this iteration, written by a kernel on the program's stream.
  DevicePtr add(std::uint32_t seed, std::uint64_t ordinal) {
    SwapBuffer b;
    b.size = kSize;
    DevicePtr ptr = 0;
    REQUIRE(mover->allocate(b, program, &ptr) == kSuccess);
    REQUIRE(device.sim.fill(ptr, kSize, seed));
    REQUIRE(device.sim.access(program, ptr, kSize));
    b.streams.push_back(program);
    names.born(ptr, b, ordinal);
    buffers.emplace(ptr, b);
    return ptr;
  }

  // The last iteration, `length` items long, used buffer `ordinal` at each of `when`.
  void used_last_time(std::uint64_t length, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& uses) {
    for (const auto& [ordinal, when] : uses) oracle.used(ordinal, when);
    oracle.end_iteration(length);
    oracle.begin_iteration();
  }

  SwapBuffer& at(DevicePtr ptr) { return buffers.at(ptr); }
};

}  // namespace

TEST_CASE("swap room: the budget less what is below, committed bytes without copies out and unreached frees",
          "[engine][swap]") {
  DecisionRig rig(false, 10 * kSize);
  rig.below.reserved = 3 * kSize;
  CHECK(rig.room.device_budget() == 7 * kSize);
  rig.below.reserved = 11 * kSize;
  CHECK(rig.room.device_budget() == 0);  // what is below passes the budget by itself
  rig.below.reserved = 0;
  CHECK(detail::Room::host_limit(rig.options) == ~std::uint64_t{0});
  rig.options.host_limit_bytes = 5 * MiB;
  CHECK(detail::Room::host_limit(rig.options) == 5 * MiB);
  rig.options.host_limit_bytes = 0;

  const DevicePtr a = rig.add(1, 0);
  const DevicePtr c = rig.add(2, 1);
  const DevicePtr d = rig.add(3, 2);
  CHECK(rig.room.committed() == 3 * kSize);
  REQUIRE(rig.out.send(a, rig.at(a)));  // its copy out is under way: it comes back with a wait
  CHECK(rig.mover->device_bytes() == 3 * kSize);
  CHECK(rig.room.committed() == 2 * kSize);
  bool ok = false;
  const EventId reached = rig.events.take(rig.device, ok);
  REQUIRE(ok);
  REQUIRE(rig.device.record_event(reached, rig.program) == kSuccess);
  rig.frees.add_after(rig.buffers.extract(c), reached);  // freed, not reached yet
  CHECK(rig.room.committed() == kSize);
  rig.frees.settle(true);
  CHECK(rig.room.committed() == kSize);
  CHECK(rig.mover->device_bytes() == kSize);
  CHECK(rig.at(d).resident);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap room: the pools first, then the farthest next use; what a work item touches stays", "[engine][swap]") {
  DecisionRig rig(false, 4 * kSize);
  // A 10-item iteration: buffer 0 used at item 2, buffer 1 at 8, buffer 2 at 5, buffer 3 at 9.
  const DevicePtr b0 = rig.add(10, 0);
  const DevicePtr b1 = rig.add(11, 1);
  const DevicePtr b2 = rig.add(12, 2);
  const DevicePtr b3 = rig.add(13, 3);
  rig.used_last_time(10, {{0, 2}, {1, 8}, {2, 5}, {3, 9}});

  // Within the budget: nothing trimmed, nothing leaves.
  rig.room.make(0, 0, detail::Room::Mode::warn);
  CHECK(rig.below.trims == 0);
  CHECK(rig.counters.swap_outs == 0);

  // One buffer more: what the pools keep beyond their thresholds goes first, and is enough.
  rig.below.reserved = kSize;
  rig.below.trimmable = kSize;
  rig.room.make(0, 0, detail::Room::Mode::warn);
  CHECK(rig.below.trims == 1);
  CHECK(rig.below.trims_all == 0);
  CHECK(rig.counters.swap_outs == 0);

  // Two more: buffer 3 (next used at 9) and buffer 1 (at 8) leave, the work item being issued
  // touching buffer 3 keeps it, so buffer 1 and then buffer 2 (at 5) go.
  detail::InFlight& item = rig.in_flight.begin(rig.program);
  item.bases.push_back(b3);
  rig.room.make(2 * kSize, 0, detail::Room::Mode::quiet);
  CHECK(rig.at(b3).resident);
  CHECK_FALSE(rig.at(b1).resident);
  CHECK_FALSE(rig.at(b2).resident);
  CHECK(rig.at(b0).resident);
  CHECK(rig.counters.swap_outs == 2);
  CHECK(rig.room.committed() + 2 * kSize <= rig.room.device_budget());
  rig.in_flight.queued();

  // Needed later (every buffer still resident is used within 10 items): nothing leaves, and the
  // pools keep what the program asked them to keep.
  rig.below.reserved = 2 * kSize;
  rig.below.kept = 2 * kSize;
  rig.room.make(3 * kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.counters.swap_outs == 2);
  CHECK(rig.below.trims_all == 0);
  // Needed now: what may leave leaves, and as that is not enough, the pools keep nothing.
  rig.room.make(3 * kSize, 0, detail::Room::Mode::quiet);
  CHECK(rig.counters.swap_outs == 4);
  CHECK(rig.below.trims_all == 1);
  CHECK(rig.below.reserved == 0);
  rig.frees.settle(true);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap room: the pools are asked again only when their figures may have changed", "[engine][swap]") {
  DecisionRig rig(false, 2 * kSize);
  const DevicePtr a = rig.add(15, 0);
  (void)rig.add(16, 1);
  rig.used_last_time(10, {{0, 2}, {1, 8}});
  // Over the budget with nothing that may leave (needed within 10 items): the pools are trimmed
  // once, not at every call of the same work item.
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.below.trims == 1);
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  rig.room.make(2 * kSize, 10, detail::Room::Mode::warn);
  CHECK(rig.below.trims == 1);
  // An allocation or free passed down: asked again, once.
  rig.room.below_changed();
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.below.trims == 2);
  // The next work item (the GPU ran on, reaching frees): again.
  ++rig.work;
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  rig.room.make(kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.below.trims == 3);
  // A host wait (the GPU reached what was queued before it): again.
  REQUIRE(rig.out.send(a, rig.at(a)));
  rig.frees.settle(true);
  REQUIRE(rig.waits.stall_ns() != 0);
  rig.room.make(2 * kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.below.trims == 4);
  rig.room.make(2 * kSize, 10, detail::Room::Mode::quiet);
  CHECK(rig.below.trims == 4);
  CHECK(rig.below.trims_all == 0);
  // Within the budget: never asked.
  ++rig.work;
  rig.room.make(0, 0, detail::Room::Mode::warn);
  CHECK(rig.below.trims == 4);
  rig.frees.settle(true);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap room: with no budget nothing moves; settling until it fits waits for the oldest copy only",
          "[engine][swap]") {
  DecisionRig unlimited;
  (void)unlimited.add(1, 0);
  unlimited.used_last_time(4, {{0, 1}});
  unlimited.room.make(100 * kSize, 0, detail::Room::Mode::wait);
  CHECK(unlimited.counters.swap_outs == 0);
  CHECK(unlimited.below.trims == 0);
  CHECK_FALSE(unlimited.room.held(100 * kSize));

  DecisionRig rig(false, 3 * kSize);
  const DevicePtr first = rig.add(21, 0);
  const DevicePtr second = rig.add(22, 1);
  REQUIRE(rig.out.send(first, rig.at(first)));
  REQUIRE(rig.device.sim.access(rig.program, second, kSize));
  REQUIRE(rig.out.send(second, rig.at(second)));
  // Both copies under way: committed is 0, but the device holds both until they land. One
  // buffer's bytes now fit once the first has landed; the second stays in flight.
  rig.host_waited = false;
  rig.room.settle_until_fits(2 * kSize, rig.room.device_budget());
  CHECK(rig.host_waited);
  CHECK_FALSE(rig.at(first).leaving);
  CHECK(rig.at(second).leaving);
  CHECK(rig.mover->device_bytes() == kSize);
  // Already fitting: nothing waited for.
  rig.host_waited = false;
  rig.room.settle_until_fits(kSize, rig.room.device_budget());
  CHECK_FALSE(rig.host_waited);
  rig.frees.settle(true);
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap room: while a stream waits for a value, what does not fit is held off the device", "[engine][swap]") {
  DecisionRig rig(false, 2 * kSize);
  (void)rig.add(31, 0);
  (void)rig.add(32, 1);
  CHECK_FALSE(rig.room.held(kSize));  // the host may wait: room is made, not held
  rig.device.may_block = true;
  CHECK(rig.room.held(kSize));
  CHECK(rig.room.held(kSize));
  CHECK(rig.counters.held_for_value_waits == 2);
  DecisionRig roomy(false, 4 * kSize);
  (void)roomy.add(33, 0);
  roomy.device.may_block = true;
  CHECK_FALSE(roomy.room.held(kSize));  // it fits: nothing held
  CHECK(roomy.counters.held_for_value_waits == 0);
  CHECK(rig.device.waits_while_blocked == 0);
}

TEST_CASE("swap reach guard: a reached buffer is kept still under the work; an escaped one is pinned",
          "[engine][swap]") {
  DecisionRig rig;
  const DevicePtr leaving = rig.add(41, 0);
  const DevicePtr out = rig.add(42, 1);
  const DevicePtr back = rig.add(43, 2);
  const DevicePtr untouched = rig.add(44, 3);
  StreamId other = 0;
  REQUIRE(rig.device.create_stream(&other) == kSuccess);
  REQUIRE(rig.out.send(out, rig.at(out)));
  rig.frees.settle(true);
  REQUIRE(rig.out.send(back, rig.at(back)));
  rig.frees.settle(true);
  REQUIRE(rig.in.ahead(back, rig.at(back)) == memtool::swapper::Arrival::back);
  REQUIRE(rig.out.send(leaving, rig.at(leaving)));  // still under way

  // Work on another stream may reach three of them (and an address memtool does not track).
  WorkItem item;
  item.stream = other;
  const std::vector<DevicePtr> reached{leaving, out, back, 0x1234};
  item.reached = reached;
  detail::InFlight& in_flight = rig.in_flight.begin(other);
  rig.reach.keep_still_under(item, in_flight);
  CHECK(in_flight.reached == std::vector<DevicePtr>{leaving, out, back});
  CHECK_FALSE(in_flight.all);
  // The copy out is called off: the device memory is still the truth.
  CHECK(rig.at(leaving).resident);
  CHECK_FALSE(rig.at(leaving).leaving);
  CHECK(rig.counters.leaves_called_off == 1);
  // The copy back: the work waits for it. Each one's users now include that stream.
  CHECK(rig.counters.stream_waits == 1);
  for (const DevicePtr ptr : {leaving, out, back}) {
    const std::vector<StreamId>& streams = rig.at(ptr).streams;
    CHECK(std::find(streams.begin(), streams.end(), other) != streams.end());
  }
  CHECK(rig.at(untouched).streams == std::vector<StreamId>{rig.program});
  for (const DevicePtr ptr : {leaving, out, back}) REQUIRE(rig.device.sim.access(other, ptr, kSize));
  rig.device.sim.synchronize();
  CHECK(rig.device.sim.verify(out, kSize, 42));  // read through its address, from the host copy
  CHECK(rig.device.sim.violations() == 0);
  rig.in_flight.queued();

  // Work that may reach anything: every buffer kept still, counted.
  WorkItem all;
  all.stream = rig.program;
  all.reaches_all = true;
  rig.reach.keep_still_under(all, rig.in_flight.begin(rig.program));
  CHECK(rig.counters.items_reaching_all == 1);
  CHECK(rig.in_flight.issuing(untouched) == detail::InFlightItems::Issuing::reached);
  rig.in_flight.queued();

  // Escaped: pinned, once; a copy back still pending is waited for on the host.
  REQUIRE(rig.out.send(untouched, rig.at(untouched)));
  rig.frees.settle(true);
  REQUIRE(rig.in.ahead(untouched, rig.at(untouched)) == memtool::swapper::Arrival::back);
  REQUIRE(rig.at(untouched).arrival_pending);
  WorkItem escaping;
  escaping.stream = rig.program;
  const std::vector<DevicePtr> escaped{untouched};
  escaping.escaped = escaped;
  rig.reach.keep_still_under(escaping, rig.in_flight.begin(rig.program));
  CHECK(rig.at(untouched).pinned);
  CHECK_FALSE(rig.at(untouched).arrival_pending);
  CHECK(rig.counters.pinned == 1);
  rig.reach.pin(untouched, rig.program);
  CHECK(rig.counters.pinned == 1);
  rig.in_flight.queued();
  CHECK_FALSE(rig.out.send(untouched, rig.at(untouched)));  // it never moves again
  CHECK(rig.device.sim.verify(untouched, kSize, 44));
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE(
    "swap reach guard: while a stream waits for a value, an escaping buffer's copy back is waited for in "
    "stream order",
    "[engine][swap]") {
  DecisionRig rig;
  const DevicePtr ptr = rig.add(51, 0);
  REQUIRE(rig.out.send(ptr, rig.at(ptr)));
  rig.frees.settle(true);
  REQUIRE(rig.in.ahead(ptr, rig.at(ptr)) == memtool::swapper::Arrival::back);
  rig.device.may_block = true;
  rig.reach.pin(ptr, rig.program);
  CHECK(rig.at(ptr).pinned);
  CHECK(rig.at(ptr).arrival_pending);  // not waited for on the host
  CHECK(rig.counters.stream_waits == 1);
  CHECK(rig.waits.refused() == 1);
  CHECK(rig.device.waits_while_blocked == 0);
  REQUIRE(rig.device.sim.access(rig.program, ptr, kSize));
  rig.device.sim.synchronize();
  CHECK(rig.device.sim.verify(ptr, kSize, 51));
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap rule swap-ins: within each buffer's lead, the soonest first; a late one's lead grows",
          "[engine][swap]") {
  DecisionRig rig(false, 2 * kSize);
  const DevicePtr soon = rig.add(61, 0);
  const DevicePtr later = rig.add(62, 1);
  const DevicePtr far = rig.add(63, 2);
  // A 20-item iteration: buffer 0 used at item 3, buffer 1 at 5, buffer 2 at 15.
  rig.used_last_time(20, {{0, 3}, {1, 5}, {2, 15}});
  for (const DevicePtr ptr : {soon, later, far}) REQUIRE(rig.out.send(ptr, rig.at(ptr)));
  rig.frees.settle(true);

  CHECK(rig.rule_ins.lead_of(0) == 4);  // the lookahead until it is learned
  // At item 0: buffer 0 (3 items on) is within its lead; buffer 1 (5 on) and 2 are not.
  rig.rule_ins.ahead(0);
  CHECK(rig.at(soon).resident);
  CHECK(rig.at(soon).arrival_ahead);
  CHECK_FALSE(rig.at(later).resident);
  CHECK_FALSE(rig.at(far).resident);
  CHECK(rig.counters.swap_ins_ahead == 1);

  // Its lead grows once it was late (as far as the rule's own growth says).
  rig.rule_ins.grow_lead(1);
  CHECK(rig.rule_ins.lead_of(1) == memtool::swapper::EvictionRule::grown_lead(4));
  rig.rule_ins.ahead(0);
  CHECK(rig.at(later).resident);
  CHECK(rig.counters.swap_ins_ahead == 2);
  CHECK_FALSE(rig.at(far).resident);

  // No room for the next one due (the budget holds two): kept out, not brought back.
  rig.rule_ins.leads()[2] = 100;
  rig.rule_ins.ahead(0);
  CHECK_FALSE(rig.at(far).resident);
  CHECK(rig.at(far).kept_out);
  CHECK(rig.counters.swap_ins_ahead == 2);
  rig.device.sim.synchronize();
  CHECK(rig.device.sim.verify(soon, kSize, 61));
  CHECK(rig.device.sim.verify(later, kSize, 62));
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap rule swap-ins: on demand, room made first; held where it does not fit while the host may not wait",
          "[engine][swap]") {
  DecisionRig rig(false, 2 * kSize);
  const DevicePtr a = rig.add(71, 0);
  const DevicePtr c = rig.add(72, 1);
  rig.used_last_time(10, {{0, 1}, {1, 8}, {2, 5}});
  REQUIRE(rig.out.send(a, rig.at(a)));
  rig.frees.settle(true);
  (void)rig.add(73, 2);  // the budget is full again
  rig.work = 1;          // buffer 0 is needed now

  // While a stream waits for a value: read where it is, nothing sent out for it.
  rig.device.may_block = true;
  rig.rule_ins.now(a, rig.at(a), rig.program);
  CHECK_FALSE(rig.at(a).resident);
  CHECK(rig.counters.swap_ins_failed == 1);
  CHECK(rig.counters.held_for_value_waits == 1);
  CHECK(rig.device.waits_while_blocked == 0);

  // The value written: room made (buffer 1, next used farthest, leaves) and it comes back.
  rig.device.may_block = false;
  rig.rule_ins.now(a, rig.at(a), rig.program);
  CHECK(rig.at(a).resident);
  CHECK_FALSE(rig.at(c).resident);
  CHECK(rig.counters.swap_ins_on_demand == 1);
  CHECK(rig.rule_ins.lead_of(0) == memtool::swapper::EvictionRule::grown_lead(4));  // a longer lead would have helped
  REQUIRE(rig.device.sim.access(rig.program, a, kSize));
  rig.device.sim.synchronize();
  CHECK(rig.device.sim.verify(a, kSize, 71));
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap frees: settling until bytes fit while a stream waits for a value polls only, never waits",
          "[engine][swap]") {
  DecisionRig rig;
  const DevicePtr landed = rig.add(81, 0);
  const DevicePtr flying = rig.add(82, 1);
  REQUIRE(rig.out.send(landed, rig.at(landed)));
  rig.device.sim.synchronize();  // its copy has run; the mover has not seen it yet
  REQUIRE(rig.device.sim.access(rig.program, flying, kSize));
  REQUIRE(rig.out.send(flying, rig.at(flying)));
  REQUIRE(rig.mover->device_bytes() == 2 * kSize);

  // The host may not wait: what has landed is settled (polled: its address maps the host copy;
  // the explicit mover keeps its device memory for reuse, still counted, until a settle that may
  // wait), the copy still under way is left in flight although the bytes do not fit, and no host
  // wait is made or counted as one.
  rig.device.may_block = true;
  rig.host_waited = false;
  rig.frees.settle_until(0);
  CHECK_FALSE(rig.at(landed).leaving);
  CHECK(rig.device.sim.verify(landed, kSize, 81));
  CHECK(rig.at(flying).leaving);
  CHECK_FALSE(rig.device.event_completed(rig.at(flying).left));
  CHECK(rig.mover->device_bytes() == 2 * kSize);
  CHECK_FALSE(rig.host_waited);
  CHECK(rig.device.waits_while_blocked == 0);
  CHECK(rig.waits.stall_ns() == 0);

  // The value written: the copy is waited for.
  rig.device.may_block = false;
  rig.frees.settle_until(0);
  CHECK_FALSE(rig.at(flying).leaving);
  CHECK(rig.mover->device_bytes() == 0);
  CHECK(rig.host_waited);
  CHECK(rig.device.sim.verify(flying, kSize, 82));
  CHECK(rig.device.sim.violations() == 0);
}

TEST_CASE("swap uvm mover: the oldest prefetch out waited for alone; none while the host may not wait",
          "[engine][swap]") {
  DecisionRig rig(true);
  CHECK_FALSE(rig.mover->settle_oldest());  // none under way
  const DevicePtr first = rig.add(91, 0);
  const DevicePtr second = rig.add(92, 1);
  const DevicePtr third = rig.add(93, 2);
  REQUIRE(rig.out.send(first, rig.at(first)));
  REQUIRE(rig.device.sim.access(rig.program, third, kSize));
  REQUIRE(rig.out.send(second, rig.at(second)));
  REQUIRE(rig.mover->leaving_bytes() == 2 * kSize);
  REQUIRE(rig.mover->device_bytes() == 3 * kSize);

  // The host may not wait: nothing waited for, nothing released, the refusal counted.
  rig.device.may_block = true;
  CHECK_FALSE(rig.mover->settle_oldest());
  CHECK(rig.at(first).leaving);
  CHECK(rig.mover->device_bytes() == 3 * kSize);
  CHECK(rig.waits.refused() == 1);
  CHECK(rig.device.waits_while_blocked == 0);
  rig.device.may_block = false;

  // The oldest only: its device bytes go, the newer prefetch stays in flight.
  CHECK(rig.mover->settle_oldest());
  CHECK_FALSE(rig.at(first).leaving);
  CHECK(rig.at(second).leaving);
  CHECK_FALSE(rig.device.event_completed(rig.at(second).left));
  CHECK(rig.mover->device_bytes() == 2 * kSize);
  CHECK(rig.mover->leaving_bytes() == kSize);
  CHECK(rig.mover->settle_oldest());
  CHECK_FALSE(rig.at(second).leaving);
  CHECK(rig.mover->device_bytes() == kSize);
  CHECK(rig.mover->leaving_bytes() == 0);
  CHECK_FALSE(rig.mover->settle_oldest());
  // Managed memory: any access reads the right bytes wherever they are.
  CHECK(rig.device.sim.verify(first, kSize, 91));
  CHECK(rig.device.sim.verify(second, kSize, 92));
  CHECK(rig.device.sim.violations() == 0);
}
