// Allocations the program frees before the op they precede (Op::transient_bytes): no buffer
// holds them, but the executor's rule counts them among the allocations ahead when it leaves
// early or brings a buffer back ahead (simulate.hpp, as the executor). The planners' model
// leaves them out.
#include <catch2/catch.hpp>

#include <cstdint>

#include "iteration_builder.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::ops_of;
using memtool::test::simple_link;

// 5 ops of 1 us; A (4000 B, ops 0-4, touched by 0 and 4), B (4000 B, op 1 only); budget 6000,
// link 4 B/ns (A's copy 1 us), the rule not leaving early. B sends A out at op 1 (waiting for its
// copy); A is due back twice its copy ahead of op 4, at op 2. With 4000 transient bytes at op 4
// counted among what the ops up to A's access allocate, A does not fit ahead at op 2 nor 3 and
// comes back on demand: op 4 waits for its copy. Without them it is back in time. The planners'
// model leaves them out.
TEST_CASE("transient allocations: a buffer due ahead is held back for them", "[swapper][simulate][transient]") {
  ms::Iteration it = ops_of(5, 1000);
  add_buffer(it, 4000, 0, 4, {0, 4});
  add_buffer(it, 4000, 1, 1, {1});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 6000;
  held.rule_lookahead_ops = 0;
  const ms::Simulation without = ms::simulate(it, {}, simple_link(4.0), held);
  CHECK(without.rule_swaps == 1);
  CHECK(without.op_stall_ns[1] == 1000);
  CHECK(without.op_stall_ns[4] == 0);

  it.ops[4].transient_bytes = 4000;
  const ms::Simulation with = ms::simulate(it, {}, simple_link(4.0), held);
  CHECK(with.rule_swaps == 1);
  CHECK(with.op_stall_ns[1] == 1000);
  CHECK(with.op_stall_ns[4] == 1000);
  CHECK(with.time_ns == without.time_ns + 1000);
  CHECK(with.peak_bytes == without.peak_bytes);  // in no buffer

  CHECK(ms::simulate(it, {}, simple_link(4.0)).time_ns == 5000);  // the planners' model
}

// 5 ops of 1 us; A (4000 B, ops 0-4, touched by 0 and 4); budget 6000, link 4 B/ns, the rule
// looking 2 ops ahead, op 2 with 4000 transient bytes. Leaving early after op 1, the rule counts
// them among what ops 2-3 allocate: 8000 B do not fit, and A (needed at op 4 only) leaves. Not
// counted, nothing would: A alone fits throughout.
TEST_CASE("transient allocations: the rule leaves early for them", "[swapper][simulate][transient]") {
  ms::Iteration it = ops_of(5, 1000);
  add_buffer(it, 4000, 0, 4, {0, 4});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 6000;
  held.rule_lookahead_ops = 2;
  CHECK(ms::simulate(it, {}, simple_link(4.0), held).rule_swaps == 0);
  it.ops[2].transient_bytes = 4000;
  const ms::Simulation sim = ms::simulate(it, {}, simple_link(4.0), held);
  REQUIRE(sim.rule_swaps == 1);
  REQUIRE(sim.rule_evictions.size() == 1);
  CHECK(sim.rule_evictions[0].out_before_op == 1);  // left as op 1 was issued
}
