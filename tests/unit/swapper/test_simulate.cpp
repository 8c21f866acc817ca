// The simulator on hand-made iterations whose answers are worked out by hand: one buffer and one
// gap (exact peak, stall, link time), latency, the duplex penalty, FIFO engines, a swap around
// the iteration end, a waited copy-out, holding a budget as the executor does (waits where the
// memory is needed, the rule's evictions, an op reaching every buffer calling off the leaves under
// way), malformed schedules, the memory curve, and reuse.
#include <catch2/catch.hpp>

#include "iteration_builder.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::OneGap;
using memtool::test::ops_of;
using memtool::test::simple_link;
using memtool::test::swap;

namespace {

// The executor's rule alone holding `budget` where memory is needed (no leaving early), over a
// link of 4 B/ns (2000 B in 500 ns).
// 6 ops of 1 us; a 2000 B buffer used by ops 0 and 5; 1500 B allocated for op 4 alone: under a
// budget of 2000 B, op 4 needs the first one out.
ms::Iteration room_for_op_4() {
  ms::Iteration it = ops_of(6, 1000);
  add_buffer(it, 2000, 0, 5, {0, 5});
  add_buffer(it, 1500, 4, 4, {4});
  return it;
}

ms::Simulation rule_alone(const ms::Iteration& it, std::uint64_t budget) {
  ms::SimulateOptions held;
  held.hold_budget_bytes = budget;
  held.rule_lookahead_ops = 0;
  return ms::simulate(it, {}, simple_link(4.0), held);
}

}  // namespace

TEST_CASE("no schedule: the plain iteration", "[swapper][simulate]") {
  const OneGap g;
  const ms::Simulation sim = ms::simulate(g.it, {}, simple_link());
  CHECK(sim.plain_peak_bytes == 6500);
  CHECK(sim.peak_bytes == 6500);
  CHECK(sim.base_time_ns == 5000);
  CHECK(sim.time_ns == 5000);
  CHECK(sim.stall_ns == 0);
  CHECK(sim.bytes_out == 0);
  CHECK(sim.d2h_busy_ns == 0);
}

TEST_CASE("one buffer, one gap, hidden: exact peak, times and link occupancy", "[swapper][simulate]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, /*out after*/ 0, /*in at*/ 3));
  const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link());
  // Out [1000, 2000) after op 0; in issued when op 3 starts (3000), done at 4000 when op 4 starts.
  CHECK(sim.time_ns == 5000);
  CHECK(sim.stall_ns == 0);
  CHECK(sim.slowdown == 0);
  // B is away over [2000, 3000), exactly while C is live: the peak is A + B.
  CHECK(sim.peak_bytes == 6000);
  CHECK(sim.bytes_out == 1000);
  CHECK(sim.bytes_in == 1000);
  CHECK(sim.d2h_busy_ns == 1000);
  CHECK(sim.h2d_busy_ns == 1000);
  REQUIRE(sim.swaps.size() == 1);
  CHECK(sim.swaps[0].out_start_ns == 1000);
  CHECK(sim.swaps[0].out_end_ns == 2000);
  CHECK(sim.swaps[0].in_start_ns == 3000);
  CHECK(sim.swaps[0].in_end_ns == 4000);
  CHECK(sim.swaps[0].lateness_ns == 0);
}

TEST_CASE("a swap-in issued at its consumer stalls it for the whole copy", "[swapper][simulate]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 4));
  const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link());
  CHECK(sim.stall_ns == 1000);
  CHECK(sim.time_ns == 6000);
  CHECK(sim.slowdown == Approx(0.2));
  CHECK(sim.op_stall_ns[4] == 1000);
  CHECK(sim.op_stall_ns[3] == 0);
  CHECK(sim.swaps[0].lateness_ns == 1000);
  CHECK(sim.peak_bytes == 6000);
}

TEST_CASE("latency is paid by every copy", "[swapper][simulate]") {
  const OneGap g;
  ms::Link link = simple_link();
  link.d2h_latency_ns = link.h2d_latency_ns = 100;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 3));
  const ms::Simulation sim = ms::simulate(g.it, schedule, link);
  CHECK(sim.swaps[0].out_end_ns == 2100);
  CHECK(sim.swaps[0].in_end_ns == 4100);
  CHECK(sim.stall_ns == 100);
  CHECK(sim.op_stall_ns[4] == 100);
  // B is away over [2100, 3000): C's 500 bytes from 2000 to 2100 land on top of A and B.
  CHECK(sim.peak_bytes == 6500);
}

TEST_CASE("both directions at once run at the bandwidth divided by the duplex factor", "[swapper][simulate]") {
  // Y (ops 0 and 3) comes back while X (ops 1 and 5) goes out, both from t = 2000.
  ms::Iteration it = ops_of(6, 1000);
  const std::uint32_t y = add_buffer(it, 1000, 0, 3, {0, 3});
  const std::uint32_t x = add_buffer(it, 1000, 0, 5, {1, 5});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(y, 0, 0, 3, 0, 2));
  schedule.swaps.push_back(swap(x, 0, 1, 5, 1, 4));

  ms::Link link = simple_link();
  const ms::Simulation full = ms::simulate(it, schedule, link);
  CHECK(full.swaps[0].in_end_ns == 3000);
  CHECK(full.swaps[1].out_end_ns == 3000);
  CHECK(full.stall_ns == 0);

  link.duplex_factor = 2.0;
  const ms::Simulation halved = ms::simulate(it, schedule, link);
  CHECK(halved.swaps[0].in_start_ns == 2000);
  CHECK(halved.swaps[0].in_end_ns == 4000);  // 1000 B at 0.5 B/ns
  CHECK(halved.swaps[1].out_end_ns == 4000);
  CHECK(halved.op_stall_ns[3] == 1000);        // Y's consumer waits
  CHECK(halved.swaps[1].in_start_ns == 5000);  // X comes back alone, at full speed
  CHECK(halved.swaps[1].in_end_ns == 6000);
  CHECK(halved.stall_ns == 1000);
}

TEST_CASE("each engine runs its copies one at a time in issue order", "[swapper][simulate]") {
  ms::Iteration it = ops_of(5, 1000);
  const std::uint32_t p = add_buffer(it, 1000, 0, 4, {0, 4});
  const std::uint32_t q = add_buffer(it, 1000, 0, 4, {0, 4});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(p, 0, 0, 4, 0, 3));
  schedule.swaps.push_back(swap(q, 0, 0, 4, 0, 3));
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link());
  CHECK(sim.swaps[0].out_start_ns == 1000);
  CHECK(sim.swaps[0].out_end_ns == 2000);
  CHECK(sim.swaps[1].out_start_ns == 2000);
  CHECK(sim.swaps[1].out_end_ns == 3000);
  CHECK(sim.swaps[0].in_end_ns == 4000);
  CHECK(sim.swaps[1].in_start_ns == 4000);  // behind P's copy-in
  CHECK(sim.swaps[1].in_end_ns == 5000);
  CHECK(sim.stall_ns == 1000);
  CHECK(sim.d2h_busy_ns == 2000);
}

TEST_CASE("a persistent buffer swapped across the iteration boundary, in steady state", "[swapper][simulate]") {
  // P (2000 B, persistent) is used by op 3 only: out after op 3, back for op 3 of the next
  // iteration, issued at its op 2. T (500 B) lives during op 1.
  ms::Iteration it = ops_of(4, 1000);
  const std::uint32_t p = add_persistent(it, 2000, {3});
  add_buffer(it, 500, 1, 1, {1});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(p, 0, 3, 7, 3, 6));
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link(2.0));
  CHECK(sim.plain_peak_bytes == 2500);
  CHECK(sim.peak_bytes == 2000);  // P is away over [1000, 2000) of every iteration, while T lives
  CHECK(sim.stall_ns == 0);
  // The instance consumed in the measured iteration went out at the end of the one before.
  CHECK(sim.swaps[0].out_start_ns == 0);
  CHECK(sim.swaps[0].out_end_ns == 1000);
  CHECK(sim.swaps[0].in_start_ns == 2000);
  CHECK(sim.swaps[0].in_end_ns == 3000);
  CHECK(sim.swaps[0].lateness_ns == 0);
}

TEST_CASE("an op waiting for a copy-out stalls until it ends", "[swapper][simulate]") {
  ms::Iteration it = ops_of(4, 1000);
  const std::uint32_t b = add_buffer(it, 2000, 0, 3, {0, 3});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(b, 0, 0, 3, 0, 3, /*op 1 waits*/ 1));
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link());
  CHECK(sim.op_stall_ns[1] == 2000);  // copy-out [1000, 3000)
  CHECK(sim.op_stall_ns[3] == 2000);  // synchronous copy-in [5000, 7000)
  CHECK(sim.stall_ns == 4000);
  CHECK(sim.peak_bytes == 2000);
}

// As the executor runs it: B (2000 B, ops 0 and 3) out after op 0 and back at op 3, C (1500 B)
// live over ops 1-2. The planned wait at op 1 is not run; op 1 waits only if its allocation of C
// does not fit the budget with B still on its way out (copy-out [1000, 3000)).
TEST_CASE("holding a budget: ops wait for room where they need it, not where the plan says", "[swapper][simulate]") {
  ms::Iteration it = ops_of(4, 1000);
  const std::uint32_t b = add_buffer(it, 2000, 0, 3, {0, 3});
  add_buffer(it, 1500, 1, 2, {1, 2});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(b, 0, 0, 3, 0, 3, /*op 1 waits*/ 1));
  ms::SimulateOptions held;

  SECTION("room enough: the planned wait is not run") {
    held.hold_budget_bytes = 3500;
    const ms::Simulation sim = ms::simulate(it, schedule, simple_link(), held);
    CHECK(sim.op_stall_ns[1] == 0);
    CHECK(sim.op_stall_ns[3] == 2000);  // the copy-in [3000, 5000)
    CHECK(sim.stall_ns == 2000);
    CHECK(sim.peak_bytes == 3500);
    CHECK(ms::simulate(it, schedule, simple_link()).stall_ns == 4000);  // with the planned wait
  }
  SECTION("op 1 waits for B's copy-out, and the budget holds") {
    held.hold_budget_bytes = 2000;
    const ms::Simulation sim = ms::simulate(it, schedule, simple_link(), held);
    CHECK(sim.op_stall_ns[1] == 2000);
    CHECK(sim.op_stall_ns[3] == 2000);  // copy-in [5000, 7000)
    CHECK(sim.peak_bytes == 2000);
  }
  SECTION("nothing under way to wait for: the rule sends out what the op does not touch") {
    // No schedule, budget 2000: op 1 (C allocated) does not fit, and B, next used by op 3, goes
    // out [1000, 3000); it comes back on demand for op 3 ([5000, 7000): op 3 waits).
    held.hold_budget_bytes = 2000;
    const ms::Simulation rule = ms::simulate(it, {}, simple_link(), held);
    CHECK(rule.op_stall_ns[1] == 2000);
    CHECK(rule.op_stall_ns[3] == 2000);
    CHECK(rule.peak_bytes == 2000);
    CHECK(rule.rule_swaps == 1);
    CHECK(rule.rule_bytes_out == 2000);
    CHECK(rule.bytes_out == 0);  // the schedule's: none
    // Budget 1000: B out is not enough and C is op 1's own: over the budget with what there is.
    held.hold_budget_bytes = 1000;
    const ms::Simulation short_of = ms::simulate(it, {}, simple_link(), held);
    CHECK(short_of.op_stall_ns[1] == 2000);
    CHECK(short_of.peak_bytes == 2000);  // B before op 1, and back for op 3
  }
  SECTION("a swap-in waits for room too: issued once a copy-out under way has freed its bytes") {
    // B (2000 B, ops 0 and 4) out after op 0, back at op 3; E (2000 B, ops 0, 2, 4) out after op 2,
    // back at op 4; budget 2000. Op 1 waits for B's copy-out (to 3000); E's runs [5000, 7000), and
    // B's swap-in at op 3 fits only after it: op 3 and the copy-in start at 7000 (B back by 9000).
    // E's swap-in at op 4 has nothing left to wait for: it queues behind B's, [9000, 11000).
    ms::Iteration two = ops_of(5, 1000);
    const std::uint32_t b2 = add_buffer(two, 2000, 0, 4, {0, 4});
    const std::uint32_t e = add_buffer(two, 2000, 0, 4, {0, 2, 4});
    ms::Schedule both;
    both.swaps.push_back(swap(b2, 0, 0, 4, 0, 3));
    both.swaps.push_back(swap(e, 1, 2, 4, 2, 4));
    held.hold_budget_bytes = 2000;
    const ms::Simulation sim = ms::simulate(two, both, simple_link(), held);
    CHECK(sim.op_stall_ns[1] == 2000);
    CHECK(sim.op_stall_ns[3] == 2000);
    CHECK(sim.op_stall_ns[4] == 3000);
    CHECK(sim.peak_bytes == 4000);  // from E's copy-in on: the budget is missed there
  }
}

// With no schedule the executor's rule leaves early: B (2000 B, ops 0 and 5), C (1500 B, op 4),
// budget 2000. Looking 2 ops ahead, B goes out after op 2 is issued ([2000, 4000)) and op 4
// does not wait for it.
TEST_CASE("holding a budget with no schedule, the rule makes room ahead of the allocation", "[swapper][simulate]") {
  const ms::Iteration it = room_for_op_4();
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  held.rule_lookahead_ops = 2;
  const ms::Simulation early = ms::simulate(it, {}, simple_link(), held);
  CHECK(early.op_stall_ns[4] == 0);
  CHECK(early.rule_swaps == 1);
  REQUIRE(early.rule_evictions.size() == 1);
  CHECK(early.rule_evictions[0].out_before_op == 2);
  CHECK(early.rule_evictions[0].in_at_op > 2);
  held.rule_lookahead_ops = 0;  // only where needed: op 4 waits for the copy-out
  const ms::Simulation late = ms::simulate(it, {}, simple_link(), held);
  CHECK(late.op_stall_ns[4] == 2000);
  CHECK(late.peak_bytes == 2000);
}

// An op that may reach every buffer keeps them still, as the executor does (keep_still): B's
// copy-out after op 1 ([2000, 3000); issued before op 2 by the allocation there, as the executor's
// allocate does) is still under way when op 2, reaching everything, is issued at 2000: it is
// called off (its link time spent, B stays on the device, no swap-in at op 3) and op 2 starts only
// at 3000, when the copy has ended. The budget holds: the peak is the plain one.
TEST_CASE("holding a budget, an op reaching every buffer calls off the leave under way and waits for its copy",
          "[swapper][simulate]") {
  memtool::test::OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, /*out after*/ 1, /*in at*/ 3));
  ms::SimulateOptions held;
  held.hold_budget_bytes = 100'000;
  const ms::Simulation moving = ms::simulate(g.it, schedule, simple_link(), held);
  CHECK(moving.time_ns == 5000);  // unmarked: the swap as planned
  CHECK(moving.leaves_called_off == 0);
  CHECK(moving.copies_issued == 2);
  CHECK_FALSE(moving.swaps[0].stayed);

  g.it.ops[2].reaches_all = true;
  const ms::Simulation still = ms::simulate(g.it, schedule, simple_link(), held);
  CHECK(still.op_stall_ns[2] == 1000);  // its stream waits for the copy in motion
  CHECK(still.op_stall_ns[3] == 0);
  CHECK(still.time_ns == 6000);
  CHECK(still.leaves_called_off == 1);
  CHECK(still.d2h_busy_ns == 1000);  // the copy out was spent
  CHECK(still.h2d_busy_ns == 0);     // and none comes back
  CHECK(still.copies_issued == 1);
  CHECK(still.peak_bytes == still.plain_peak_bytes);  // B never left
  CHECK(still.swaps[0].in_end_ns == 0);               // no swap-in timed
  CHECK(still.swaps[0].stayed);
  // The planner's model (no budget held) keeps the plan's copies.
  CHECK(ms::simulate(g.it, schedule, simple_link()).time_ns == 5000);
}

// A copy-out due at an item reaching every buffer is skipped by the executor (the item is being
// issued: ScheduleApplier::outs): with no allocation before op 1 to issue it first, B's copy-out
// after op 0 never starts, nothing is called off or waited for, and no swap-in follows.
TEST_CASE("holding a budget, a copy-out due at an op reaching every buffer is skipped", "[swapper][simulate]") {
  memtool::test::OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, /*out after*/ 0, /*in at*/ 3));
  ms::SimulateOptions held;
  held.hold_budget_bytes = 100'000;
  g.it.ops[1].reaches_all = true;
  const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link(), held);
  CHECK(sim.time_ns == 5000);
  CHECK(sim.op_stall_ns[1] == 0);
  CHECK(sim.leaves_called_off == 0);
  CHECK(sim.copies_issued == 0);
  CHECK(sim.d2h_busy_ns == 0);
  CHECK(sim.peak_bytes == sim.plain_peak_bytes);
  CHECK(sim.swaps[0].stayed);
  // The planner's model (no budget held) keeps the plan's copies.
  const ms::Simulation planned = ms::simulate(g.it, schedule, simple_link());
  CHECK(planned.copies_issued == 2);
  CHECK_FALSE(planned.swaps[0].stayed);
}

// The rule does not leave early into an op reaching every buffer: as in "the rule makes room
// ahead of the allocation" (B, ops 0 and 5; C, 1500 B at op 4; budget 2000, looking 2 ops ahead),
// B would leave after op 2 is issued ([2000, 4000)), but op 3 reaches every buffer within those 2
// ops and would call that copy off, its link time spent (EvictionRule::leaves_unwaited). B stays
// until op 4 needs the room: it goes out then ([4000, 6000)) and op 4 waits for it; nothing is
// called off and op 3 waits for no copy.
TEST_CASE("holding a budget, the rule does not leave early into an op reaching every buffer", "[swapper][simulate]") {
  ms::Iteration it = ops_of(6, 1000);
  add_buffer(it, 2000, 0, 5, {0, 5});
  add_buffer(it, 1500, 4, 4, {4});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  held.rule_lookahead_ops = 2;
  it.ops[3].reaches_all = true;
  const ms::Simulation sim = ms::simulate(it, {}, simple_link(), held);
  CHECK(sim.op_stall_ns[3] == 0);
  CHECK(sim.op_stall_ns[4] == 2000);
  CHECK(sim.leaves_called_off == 0);
  CHECK(sim.rule_swaps == 1);
  CHECK(sim.rule_bytes_out == 2000);
  CHECK(sim.peak_bytes == 2000);
  REQUIRE(sim.rule_evictions.size() == 1);
  CHECK(sim.rule_evictions[0].out_before_op == 4);
}

// The rule's swap-in due ahead makes room from buffers needed after its access, as the
// executor's prefetch does. 10 ops of 1 us, link 4 B/ns (2000 B in 500 ns), budget 4000:
// X (ops 0, 6, freed after 6), Y (ops 0, 2, 9), T (ops 1, 8, allocated before op 1), 2000 B
// each. Op 1 does not fit: X, next used farther than Y, goes out ([1000, 1500); op 1 waits). X
// is due at op 5 (its copy, twice over, ends by op 6) but the device is full: Y, next used at
// op 9, goes out as op 5 is issued, and X comes back on demand at op 6 once Y's bytes have left
// (op 6 waits for X's copy only). Without making room there, Y would go out at op 6 and op 6
// would wait for both copies.
TEST_CASE("holding a budget, the rule's swap-in due ahead makes room from what is needed later",
          "[swapper][simulate]") {
  ms::Iteration it = ops_of(10, 1000);
  const std::uint32_t x = add_buffer(it, 2000, 0, 6, {0, 6});
  const std::uint32_t y = add_buffer(it, 2000, 0, 9, {0, 2, 9});
  add_buffer(it, 2000, 1, 8, {1, 8});
  const ms::Simulation sim = rule_alone(it, 4000);
  CHECK(sim.op_stall_ns[1] == 500);
  CHECK(sim.op_stall_ns[5] == 0);
  CHECK(sim.op_stall_ns[6] == 500);
  CHECK(sim.peak_bytes == 4000);
  REQUIRE(sim.rule_evictions.size() == 2);
  CHECK(sim.rule_evictions[0].buffer == x);
  CHECK(sim.rule_evictions[0].out_before_op == 1);
  CHECK(sim.rule_evictions[0].in_at_op == 6);
  CHECK(sim.rule_evictions[1].buffer == y);
  CHECK(sim.rule_evictions[1].out_before_op == 5);
}

// The executor knows buffers by name: one past its last access (freed later) is next used, as it
// sees it, by its twin in the next iteration, so the rule sends it out first, for one copy, and
// it never comes back. 6 ops of 1 us, link 4 B/ns, budget 4000: D (ops 0, freed after 3),
// L (ops 0, 5), T (op 1), 2000 B each. Op 1 does not fit: D goes out ([1000, 1500), op 1 waits),
// L stays; D is freed while out.
TEST_CASE("holding a budget, the rule sends out a buffer past its last access first, for good", "[swapper][simulate]") {
  ms::Iteration it = ops_of(6, 1000);
  add_buffer(it, 2000, 0, 3, {0});
  add_buffer(it, 2000, 0, 5, {0, 5});
  add_buffer(it, 2000, 1, 1, {1});
  const ms::Simulation sim = rule_alone(it, 4000);
  CHECK(sim.op_stall_ns[1] == 500);
  CHECK(sim.op_stall_ns[5] == 0);
  CHECK(sim.stall_ns == 500);
  CHECK(sim.rule_swaps == 1);
  CHECK(sim.rule_bytes_out == 2000);
  REQUIRE(sim.rule_evictions.size() == 1);
  const ms::RuleEviction& d = sim.rule_evictions[0];
  CHECK(d.freed);  // never came back: away from its copy's end to its free (after op 3)
  CHECK(d.out_before_op == 1);
  CHECK(d.in_at_op == 4);
  // Times from the measured iteration's start: this is the iteration before it.
  CHECK(d.out_end_ns + sim.time_ns == 1500);
  CHECK(d.in_start_ns + sim.time_ns == 4500);  // op 3 runs [3500, 4500)
  CHECK(sim.peak_bytes == 4000);
}

// A buffer the rule sent out early, due back while its copy out is still under way: the executor
// keeps its device memory and drops that copy (SwapMover::move_in of one leaving), so nothing comes
// back over the link; and it counts its bytes as though away, so it is kept only where it would fit
// coming back. 10 ops of 1 us, link 1 B/ns, looking 2 ops ahead: X (2000 B, ops 0, 6), F (ops 0,
// 1, freed after 1), W (2000 B, ops 0, 2, 8), T (2000 B, op 3). At op 1 the rule leaves early for
// T: X, the farthest not needed within 2 ops (F is op 1's), goes out ([1000, 3000), not waited
// for), due back at op 2 (its copy, twice over, ends by op 6).
namespace {
ms::Simulation leaving_when_due(std::uint64_t f_bytes, std::uint64_t budget, std::uint32_t& x) {
  ms::Iteration it = ops_of(10, 1000);
  x = add_buffer(it, 2000, 0, 9, {0, 6});
  add_buffer(it, f_bytes, 0, 1, {0, 1});
  add_buffer(it, 2000, 0, 9, {0, 2, 8});
  add_buffer(it, 2000, 3, 3, {3});
  ms::SimulateOptions held;
  held.hold_budget_bytes = budget;
  held.rule_lookahead_ops = 2;
  return ms::simulate(it, {}, simple_link(), held);
}
}  // namespace

TEST_CASE("holding a budget, the rule's buffer due back while its copy out is under way stays without a copy",
          "[swapper][simulate]") {
  std::uint32_t x = 0;
  SECTION("room for it: kept") {
    // F (4000 B) is freed after op 1: at op 2 X (counted twice, 2000 B more) and T fit in the
    // budget of 8000 with W: X stays on the device, its copy out spent, none back.
    const ms::Simulation sim = leaving_when_due(4000, 8000, x);
    CHECK(sim.rule_swaps == 1);
    CHECK(sim.copies_issued == 1);
    CHECK(sim.d2h_busy_ns == 2000);
    CHECK(sim.h2d_busy_ns == 0);
    REQUIRE(sim.rule_evictions.size() == 1);
    const ms::RuleEviction& e = sim.rule_evictions[0];
    CHECK(e.buffer == x);
    CHECK(e.kept);  // its bytes never left
    CHECK(e.out_before_op == 1);
    CHECK(e.in_at_op == 2);
    CHECK(e.in_start_ns == e.out_end_ns);
    CHECK(sim.stall_ns == 0);
    CHECK(sim.peak_bytes == 8000);
  }
  SECTION("no room for it: it waits, and comes back over the link") {
    // F (2000 B), budget 6000: at op 2 X counted twice and T would pass it; at op 3 X's copy has
    // ended (its bytes away) and it comes back then ([3000, 5000)), in time for op 6.
    const ms::Simulation sim = leaving_when_due(2000, 6000, x);
    CHECK(sim.copies_issued == 2);
    CHECK(sim.h2d_busy_ns == 2000);
    REQUIRE(sim.rule_evictions.size() == 1);
    CHECK(sim.rule_evictions[0].buffer == x);
    CHECK(sim.rule_evictions[0].out_before_op == 1);
    CHECK(sim.rule_evictions[0].in_at_op == 3);
    CHECK_FALSE(sim.rule_evictions[0].kept);
    CHECK(sim.stall_ns == 0);
    CHECK(sim.peak_bytes == 6000);
  }
}

TEST_CASE("malformed schedules are refused", "[swapper][simulate]") {
  const OneGap g;
  const auto refused = [&](const ms::Swap& s) {
    ms::Schedule schedule;
    schedule.swaps.push_back(s);
    const bool reported = !ms::validate(g.it, schedule).empty();
    bool thrown = false;
    try {
      (void)ms::simulate(g.it, schedule, simple_link());
    } catch (const std::invalid_argument&) {
      thrown = true;
    }
    return reported && thrown;
  };
  CHECK(refused(swap(g.b, 0, 0, 4, 2, 2)));     // in not after out
  CHECK(refused(swap(g.b, 0, 0, 4, 0, 5)));     // in after the consumer
  CHECK(refused(swap(g.b, 0, 1, 4, 1, 3)));     // no access at op 1: not a gap
  CHECK(refused(swap(g.b, 0, 0, 4, 0, 3, 0)));  // waiting op before the copy-out
  ms::Schedule twice;
  twice.swaps = {swap(g.b, 0, 0, 4, 0, 3), swap(g.b, 0, 0, 4, 1, 2)};
  CHECK_FALSE(ms::validate(g.it, twice).empty());

  OneGap unswappable;
  unswappable.it.buffers[unswappable.b].swappable = false;
  ms::Schedule one;
  one.swaps.push_back(swap(unswappable.b, 0, 0, 4, 0, 3));
  CHECK_FALSE(ms::validate(unswappable.it, one).empty());
  CHECK(ms::validate(g.it, one).empty());
}

TEST_CASE("the memory curve of the measured iteration", "[swapper][simulate]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 3));
  ms::SimulateOptions options;
  options.record_curve = true;
  const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link(), options);
  REQUIRE(sim.curve.size() >= 3);
  const auto level_at = [&](double t) {
    std::uint64_t bytes = 0;
    for (const ms::MemoryPoint& p : sim.curve) {
      if (p.time_ns <= t) bytes = p.bytes;
    }
    return bytes;
  };
  CHECK(level_at(500) == 6000);
  CHECK(level_at(2500) == 5500);
  CHECK(level_at(3500) == 6000);
  std::uint64_t highest = 0;
  for (const ms::MemoryPoint& p : sim.curve) highest = std::max(highest, p.bytes);
  CHECK(highest == sim.peak_bytes);
}

TEST_CASE("a simulator reused gives the same answers, and more warm-up changes nothing here", "[swapper][simulate]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 4));
  ms::Simulator simulator;
  const ms::Simulation first = simulator.run(g.it, schedule, simple_link());
  (void)simulator.run(g.it, {}, simple_link());
  const ms::Simulation again = simulator.run(g.it, schedule, simple_link());
  CHECK(again.time_ns == first.time_ns);
  CHECK(again.peak_bytes == first.peak_bytes);
  CHECK(again.op_stall_ns == first.op_stall_ns);
  ms::SimulateOptions longer;
  longer.iterations = 6;
  const ms::Simulation steady = ms::simulate(g.it, schedule, simple_link(), longer);
  CHECK(steady.time_ns == first.time_ns);
  CHECK(steady.peak_bytes == first.peak_bytes);
}

// The executor learns its rule's swap-in leads in work items: from its lookahead, doubled for a
// buffer whose swap-in came late (EvictionRule::grown_lead); learn_rule_leads simulates that.
// B (1000 B, ops 0 and 30 of 40 ops of 100 ns) makes room for C (ops 5-8, budget 1500); its copy
// back takes 1000 ns (10 ops) at 1 B/ns. From a lead of 2 ops it is late at 2, 4 and 8 and on
// time at 16: issued with op 14, not waited for. The planners' model issues it at twice its copy time ahead (20
// ops: op 10).
TEST_CASE("held: the rule's leads learnt as the executor learns them", "[swapper][simulate]") {
  ms::Iteration it = ops_of(40, 100);
  const std::uint32_t b = add_buffer(it, 1000, 0, 31, {0, 30});
  add_buffer(it, 1000, 5, 8, {5, 8});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 1500;
  held.rule_lookahead_ops = 2;
  const auto in_at = [&](const ms::Simulation& sim) {
    for (const ms::RuleEviction& e : sim.rule_evictions) {
      if (e.buffer == b && !e.freed) return static_cast<std::int64_t>(e.in_at_op);
    }
    return std::int64_t{-1};
  };
  const ms::Simulation margin = ms::simulate(it, {}, simple_link(), held);
  CHECK(in_at(margin) == 10);
  held.learn_rule_leads = true;
  const ms::Simulation learnt = ms::simulate(it, {}, simple_link(), held);
  CHECK(in_at(learnt) == 14);
  CHECK(learnt.op_stall_ns[30] == 0);         // on time
  CHECK(learnt.stall_ns == margin.stall_ns);  // op 5 waits for B's copy out in both
  CHECK(learnt.peak_bytes <= 1500);
  // A lead that starts long enough is not learnt further: issued 20 ops ahead.
  held.rule_lookahead_ops = 20;
  CHECK(in_at(ms::simulate(it, {}, simple_link(), held)) == 10);
}

namespace {

// `it` host-timed: every op takes the program `host_ns` of host time, the last one synchronises.
ms::Iteration host_timed(ms::Iteration it, std::uint64_t host_ns) {
  it.host_timed = true;
  for (ms::Op& op : it.ops) op.host_ns = host_ns;
  it.ops.back().syncs = true;
  return it;
}

}  // namespace

// The host on its own timeline: a host-bound program steps at its host's pace (5 ops issued
// 3000 ns apart, the last ended at 13000, the host synchronised at 15000), a GPU-bound one at
// its GPU's (the host waits at the end for the 5000 ns of work).
TEST_CASE("host-timed: the iteration runs at the slower of the host and the GPU", "[swapper][simulate]") {
  const OneGap g;
  const ms::Simulation host_bound = ms::simulate(host_timed(g.it, 3000), {}, simple_link());
  CHECK(host_bound.base_time_ns == 15000);
  CHECK(host_bound.time_ns == 15000);
  CHECK(host_bound.stall_ns == 0);
  const ms::Simulation gpu_bound = ms::simulate(host_timed(g.it, 100), {}, simple_link());
  CHECK(gpu_bound.base_time_ns == 5000);
  CHECK(gpu_bound.time_ns == 5000);
  CHECK(ms::base_time_ns(g.it) == 5000);  // not host-timed: the ops' GPU times
}

// A swap-in issued with its consumer stalls the GPU for its whole copy (1000 ns, "a swap-in
// issued at its consumer"), which a host-bound program hides: op 4 is issued at 12000, its
// swap-in ends at 13000, the op at 14000, before the host synchronises at 15000. With less host
// time to hide it (1200 ns an op: op 4 issued at 4800 and started at 5800 for 5800 without the
// swap) the step grows by what is left: 6800 against 6000.
TEST_CASE("host-timed: a stream-ordered stall hides behind the program's host time", "[swapper][simulate]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 4));
  const ms::Simulation hidden = ms::simulate(host_timed(g.it, 3000), schedule, simple_link());
  CHECK(hidden.time_ns == 15000);
  CHECK(hidden.stall_ns == 0);
  CHECK(hidden.swaps[0].in_end_ns - hidden.swaps[0].in_start_ns == 1000);
  const ms::Simulation partly = ms::simulate(host_timed(g.it, 1200), schedule, simple_link());
  CHECK(partly.base_time_ns == 6000);
  CHECK(partly.time_ns == 6800);
  CHECK(partly.stall_ns == 800);
}

// The rule's wait for room holds the host (memtool waits before it issues the op), so no host
// time hides it: op 4 needs the 2000 B buffer's copy-out ([12000, 14000) at 1 B/ns, once the GPU
// has run op 3 and the host got there), issued at 14000 instead of 12000. In a GPU-bound program
// the host, ahead, waits for the same copy ([4000, 6000)) but then issues op 5's swap-in on
// demand at 6010, while op 4 runs, where without host times it is issued when op 4 has ended:
// 9010 against 10000.
TEST_CASE("host-timed: the rule's wait for room is the host's, not hidden", "[swapper][simulate]") {
  const ms::Iteration it = room_for_op_4();
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  held.rule_lookahead_ops = 0;
  const ms::Simulation host_bound = ms::simulate(host_timed(it, 3000), {}, simple_link(), held);
  CHECK(host_bound.base_time_ns == 18000);
  CHECK(host_bound.time_ns == 20000);  // op 5's swap-in on demand ([17000, 19000)) is hidden
  CHECK(host_bound.peak_bytes <= 2000);
  const ms::Simulation gpu_bound = ms::simulate(host_timed(it, 10), {}, simple_link(), held);
  const ms::Simulation untimed = ms::simulate(it, {}, simple_link(), held);
  CHECK(untimed.time_ns == 10000);
  CHECK(gpu_bound.time_ns == 9010);
  CHECK(gpu_bound.peak_bytes <= 2000);
}
