// The simulator's host ahead of the GPU, holding a budget (SimulateOptions::host_ahead): the
// executor decides an op while the GPU still runs the op before it, so the buffers freed since
// the host last waited for the GPU are no room yet. An op that needs their bytes waits for the
// GPU to reach them (the host back HostCosts::per_sync_ns later), the rule sends nothing out for
// them, and a swap-in ahead finds no room in them.
#include <catch2/catch.hpp>

#include <cstdint>

#include "iteration_builder.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::ops_of;
using memtool::test::simple_link;

// 3 ops of 1 us; A (4000 B, ops 0-1, freed after op 1), B (4000 B, op 2 only, freed after it);
// budget 6000, a wake-up of 100 ns. Every free reached, each op fits (4000 B live). The host
// ahead decides op 2 while op 1 runs: A's bytes still held, 8000 B do not fit, no copy is under
// way to wait for: it waits for op 1 to end and comes back 100 later; op 0 likewise for B's
// free after op 2 (the iteration wraps). Where the program synchronises after ops 1 and 2 the
// host has waited there already: no wait for room (the syncs' own 100 each are the base time's).
TEST_CASE("host ahead: an op that needs bytes freed after an op the GPU still runs waits for it",
          "[swapper][simulate][host]") {
  ms::Iteration it = ops_of(3, 1000);
  add_buffer(it, 4000, 0, 1, {0, 1});
  add_buffer(it, 4000, 2, 2, {2});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 6000;
  held.rule_lookahead_ops = 0;
  held.host.per_sync_ns = 100;

  const ms::Simulation lockstep = ms::simulate(it, {}, simple_link(), held);  // the planners' model
  CHECK(lockstep.time_ns == 3000);
  CHECK(lockstep.stall_ns == 0);

  held.host_ahead = true;
  const ms::Simulation ahead = ms::simulate(it, {}, simple_link(), held);
  CHECK(ahead.base_time_ns == 3000);
  CHECK(ahead.time_ns == 3200);
  CHECK(ahead.op_stall_ns[2] == 100);
  CHECK(ahead.op_stall_ns[0] == 100);
  CHECK(ahead.op_stall_ns[1] == 0);
  CHECK(ahead.rule_swaps == 0);  // they come back with a wait, not a copy
  CHECK(ahead.copies_issued == 0);

  it.ops[1].syncs = true;
  it.ops[2].syncs = true;
  const ms::Simulation synced = ms::simulate(it, {}, simple_link(), held);
  CHECK(synced.base_time_ns == 3200);
  CHECK(synced.time_ns == 3200);
  CHECK(synced.stall_ns == 0);
}

// The frees not reached add up while the host runs ahead (no synchronisation between them): 4
// ops of 1 us; A and B (2000 B each, freed after ops 0 and 1), C (4000 B, op 3 only); budget
// 5000. At op 3, decided while op 2 runs, A's and B's bytes are still held (the host has not
// waited since op 0): 8000 B, so it waits for op 2 to end. Where the program synchronises after
// op 1 the host has waited there for both frees, and op 2 frees nothing: no wait at op 3.
TEST_CASE("host ahead: the frees since the host last waited add up", "[swapper][simulate][host]") {
  ms::Iteration it = ops_of(4, 1000);
  add_buffer(it, 2000, 0, 0, {0});
  add_buffer(it, 2000, 1, 1, {1});
  add_buffer(it, 4000, 3, 3, {3});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 5000;
  held.rule_lookahead_ops = 0;
  held.host.per_sync_ns = 100;
  held.host_ahead = true;
  const ms::Simulation ahead = ms::simulate(it, {}, simple_link(), held);
  CHECK(ahead.op_stall_ns[3] == 100);
  it.ops[1].syncs = true;
  const ms::Simulation synced = ms::simulate(it, {}, simple_link(), held);
  CHECK(synced.op_stall_ns[3] == 0);
  CHECK(synced.op_stall_ns[2] == 100);  // the program's own synchronisation after op 1
}

// A swap-in ahead finds no room in bytes not reached: 10 ops of 1 us, link 1 B/ns, looking 2 ops
// ahead, budget 8000: X (2000 B, ops 0, 6), F (4000 B, ops 0-1, freed after 1), W (2000 B, ops
// 0, 2, 8), T (2000 B, op 3). At op 1 the rule leaves early for T: X goes out ([1000, 3000), not
// waited for), due back at op 2. Every free reached, F's bytes are room at op 2: X stays on the
// device without a copy back (test_simulate.cpp). The host ahead decides op 2 while op 1 runs,
// F's 4000 B still held: no room for X then. Op 3, decided while op 2 runs, does not fit T with
// them: the host waits for X's copy out (ends at 3000, the GPU past op 2 and F's free by then),
// and X, away now, comes back over the link from 3000 with op 3 ([3000, 5000), before op 6: no
// stall). Times are from the measured iteration's start (the eviction is the one before's).
TEST_CASE("host ahead: a swap-in ahead finds no room in frees not reached", "[swapper][simulate][host]") {
  ms::Iteration it = ops_of(10, 1000);
  const std::uint32_t x = add_buffer(it, 2000, 0, 9, {0, 6});
  add_buffer(it, 4000, 0, 1, {0, 1});
  add_buffer(it, 2000, 0, 9, {0, 2, 8});
  add_buffer(it, 2000, 3, 3, {3});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 8000;
  held.rule_lookahead_ops = 2;
  const ms::Simulation lockstep = ms::simulate(it, {}, simple_link(), held);
  REQUIRE(lockstep.rule_evictions.size() == 1);
  CHECK(lockstep.rule_evictions[0].kept);
  CHECK(lockstep.h2d_busy_ns == 0);
  held.host_ahead = true;
  const ms::Simulation ahead = ms::simulate(it, {}, simple_link(), held);
  REQUIRE(ahead.rule_evictions.size() == 1);
  const ms::RuleEviction& e = ahead.rule_evictions[0];
  CHECK(e.buffer == x);
  CHECK_FALSE(e.kept);
  CHECK(e.out_before_op == 1);
  CHECK(e.in_at_op == 3);
  CHECK(e.out_end_ns == 3000 - 10000);
  CHECK(e.in_start_ns == 3000 - 10000);
  CHECK(ahead.h2d_busy_ns == 2000);
  CHECK(ahead.copies_issued == 2);
  CHECK(ahead.time_ns == 10000);
}
