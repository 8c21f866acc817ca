// The executor's host costs in the simulator (simulate.hpp: HostCosts) and in the problem file:
// a cost per op lengthens an iteration by exactly that per op, a cost per copy by exactly that per
// copy issued (the schedule's both ways, the rule's), and the problem file carries both (an
// optional `host` record, absent when both are 0) and refuses bad values.
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>
#include <string>

#include "iteration_builder.hpp"
#include "memtool/swapper/problem.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::OneGap;
using memtool::test::ops_of;
using memtool::test::simple_link;
using memtool::test::swap;

namespace {

ms::SimulateOptions with_costs(double per_op_ns, double per_copy_ns) {
  ms::SimulateOptions options;
  options.host.per_op_ns = per_op_ns;
  options.host.per_copy_ns = per_copy_ns;
  return options;
}

}  // namespace

TEST_CASE("host costs: none by default, the simulator's times unchanged", "[swapper][simulate][host]") {
  const OneGap g;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 3));
  const ms::Simulation plain = ms::simulate(g.it, schedule, simple_link());
  CHECK(ms::SimulateOptions{}.host.none());
  CHECK(plain.time_ns == 5000);
  CHECK(plain.copies_issued == 2);
  const ms::Simulation zero = ms::simulate(g.it, schedule, simple_link(), with_costs(0, 0));
  CHECK(zero.time_ns == plain.time_ns);
}

TEST_CASE("host costs: a cost per op lengthens the iteration by exactly that per op", "[swapper][simulate][host]") {
  const OneGap g;
  const ms::Simulation sim = ms::simulate(g.it, {}, simple_link(), with_costs(100, 0));
  CHECK(sim.base_time_ns == 5000);
  CHECK(sim.time_ns == 5000 + 5 * 100);
  CHECK(sim.stall_ns == 500);
  CHECK(sim.copies_issued == 0);
}

TEST_CASE("host costs: a cost per copy lengthens the iteration by exactly that per copy issued",
          "[swapper][simulate][host]") {
  const OneGap g;
  ms::Schedule schedule;
  // Out after op 0, in with op 3: both copies hidden (1000 ns each at 1 B/ns), so the iteration
  // grows by the host's time for the two copies and nothing else.
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 3));
  for (const double per_copy : {50.0, 333.0}) {
    const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link(), with_costs(0, per_copy));
    CHECK(sim.copies_issued == 2);
    CHECK(sim.time_ns == Approx(5000 + 2 * per_copy).margin(1e-9));
    REQUIRE(sim.swaps.size() == 1);
    CHECK(sim.swaps[0].lateness_ns <= 0);
  }
  // Both together add up.
  const ms::Simulation both = ms::simulate(g.it, schedule, simple_link(), with_costs(10, 50));
  CHECK(both.time_ns == Approx(5000 + 5 * 10 + 2 * 50).margin(1e-9));
}

TEST_CASE("host costs: the executor's rule pays for its copies too", "[swapper][simulate][host]") {
  // Holding 6000 B: B must leave while C is live; the rule sends it out and back.
  const OneGap g;
  ms::SimulateOptions held;
  held.hold_budget_bytes = 6000;
  held.rule_lookahead_ops = 0;
  const ms::Simulation free_host = ms::simulate(g.it, {}, simple_link(4.0), held);
  REQUIRE(free_host.rule_swaps == 1);
  CHECK(free_host.copies_issued == 2);  // out and back
  held.host.per_copy_ns = 200;
  const ms::Simulation costly = ms::simulate(g.it, {}, simple_link(4.0), held);
  CHECK(costly.copies_issued == 2);
  CHECK(costly.time_ns > free_host.time_ns);
  CHECK(costly.time_ns <= free_host.time_ns + 2 * 200 + 1e-9);
}

TEST_CASE("problem file: the host costs read back; absent, none", "[swapper][problem][host]") {
  ms::Problem p;
  p.iteration = ops_of(2, 1000);
  add_buffer(p.iteration, 64, 0, 1, {0, 1});
  p.budget_bytes = 100;
  {
    std::ostringstream out;
    ms::write_problem(out, p);
    CHECK(out.str().find("\nhost ") == std::string::npos);  // files without costs are as before
    std::istringstream in(out.str());
    CHECK(ms::read_problem(in).host.none());
  }
  p.host.per_op_ns = 12.5;
  p.host.per_copy_ns = 4321;
  std::ostringstream out;
  ms::write_problem(out, p);
  CHECK(out.str().find("\nhost 12.5 4321\n") != std::string::npos);
  std::istringstream in(out.str());
  const ms::Problem back = ms::read_problem(in);
  CHECK(back.host.per_op_ns == 12.5);
  CHECK(back.host.per_copy_ns == 4321);
}

TEST_CASE("problem file: bad host records are refused naming the line", "[swapper][problem][host]") {
  const std::string head = "memtool-swap-problem 1\nbudget 100\nlink 1 1 0 0 1\n";
  const std::string tail = "ops 1\nop 1000 0 launch\nbuffers 0\nend\n";
  const auto refused = [&](const std::string& host, const std::string& why) {
    std::istringstream in(head + host + tail);
    CHECK_THROWS_WITH(ms::read_problem(in), Catch::Contains("line 4") && Catch::Contains(why));
  };
  refused("host 1\n", "'host' takes 2 values");
  refused("host -1 0\n", "host times must lie in");
  refused("host 0 1e300\n", "host times must lie in");
  refused("host x 0\n", "not a finite number");
  std::istringstream good(head + "host 0 7\n" + tail);
  CHECK(ms::read_problem(good).host.per_copy_ns == 7);
}

namespace {

ms::SimulateOptions with_sync(double per_sync_ns) {
  ms::SimulateOptions options;
  options.host.per_sync_ns = per_sync_ns;
  return options;
}

// `it` host-timed: every op takes the program `host_ns` of host time, the last one synchronises.
ms::Iteration host_timed(ms::Iteration it, std::uint64_t host_ns) {
  it.host_timed = true;
  for (ms::Op& op : it.ops) op.host_ns = host_ns;
  it.ops.back().syncs = true;
  return it;
}

}  // namespace

// Host-timed, GPU-bound (100 ns of host time an op): the host reaches the last op's
// synchronisation at 500, waits for the GPU (5000) and comes back 300 later; the next iteration's
// first op is issued then: 5300 a step. Host-bound (3000 an op): the host reaches it at 15000,
// after the GPU (13000), waits for nothing and pays nothing.
TEST_CASE("sync cost: the host comes back that much after a synchronisation it waited in",
          "[swapper][simulate][host]") {
  const OneGap g;
  const ms::Iteration gpu_bound = host_timed(g.it, 100);
  CHECK(ms::base_time_ns(gpu_bound, 300) == 5300);
  const ms::Simulation sim = ms::simulate(gpu_bound, {}, simple_link(), with_sync(300));
  CHECK(sim.base_time_ns == 5300);
  CHECK(sim.time_ns == 5300);
  CHECK(sim.stall_ns == 0);
  CHECK(ms::simulate(gpu_bound, {}, simple_link()).time_ns == 5000);
  const ms::Iteration host_bound = host_timed(g.it, 3000);
  CHECK(ms::base_time_ns(host_bound, 300) == 15000);
  CHECK(ms::simulate(host_bound, {}, simple_link(), with_sync(300)).time_ns == 15000);
}

// Not host-timed: the GPU idles that long after each op that syncs (ops 1 and 4 here, the last
// wrapping to the next iteration's first op): 5000 + 2 x 250.
TEST_CASE("sync cost: not host-timed, the GPU idles that long after each op that syncs", "[swapper][simulate][host]") {
  OneGap g;
  g.it.ops[1].syncs = true;
  g.it.ops[4].syncs = true;
  CHECK(ms::base_time_ns(g.it) == 5000);
  CHECK(ms::base_time_ns(g.it, 250) == 5500);
  const ms::Simulation sim = ms::simulate(g.it, {}, simple_link(), with_sync(250));
  CHECK(sim.base_time_ns == 5500);
  CHECK(sim.time_ns == 5500);
  CHECK(sim.op_stall_ns[2] == 250);
  CHECK(sim.op_stall_ns[0] == 250);
  CHECK(sim.op_stall_ns[3] == 0);
}

// The executor's wait for room is a host wait too: op 4 waits for the 2000 B buffer's copy-out
// ([4000, 6000) at 1 B/ns) and is issued 100 after it ended, everything after it 100 later.
// Host-timed (10 ns of host time an op), the program's own synchronisation after op 5 pays it
// too: op 5 ends at 9110 instead of 9010, the host back at 9210.
TEST_CASE("sync cost: the executor's wait for room pays it", "[swapper][simulate][host]") {
  ms::Iteration it = ops_of(6, 1000);
  add_buffer(it, 2000, 0, 5, {0, 5});
  add_buffer(it, 1500, 4, 4, {4});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  held.rule_lookahead_ops = 0;
  const ms::Simulation plain = ms::simulate(it, {}, simple_link(), held);
  REQUIRE(plain.time_ns == 10000);
  REQUIRE(plain.op_stall_ns[4] == 2000);
  held.host.per_sync_ns = 100;
  const ms::Simulation woken = ms::simulate(it, {}, simple_link(), held);
  CHECK(woken.base_time_ns == 6000);  // no synchronisation of the program's
  CHECK(woken.op_stall_ns[4] == 2100);
  CHECK(woken.time_ns == 10100);
  const ms::Simulation timed = ms::simulate(host_timed(it, 10), {}, simple_link(), held);
  CHECK(timed.time_ns == 9210);
}

TEST_CASE("problem file: the host's time per synchronisation reads back; absent, 0", "[swapper][problem][host]") {
  ms::Problem p;
  p.iteration = ops_of(2, 1000);
  add_buffer(p.iteration, 64, 0, 1, {0, 1});
  p.budget_bytes = 100;
  p.host.per_op_ns = 12.5;
  p.host.per_copy_ns = 4321;
  {
    std::ostringstream out;
    ms::write_problem(out, p);
    CHECK(out.str().find("\nhost 12.5 4321\n") != std::string::npos);  // as files before it
  }
  p.host.per_sync_ns = 87.25;
  for (const double per_op : {12.5, 0.0}) {
    p.host.per_op_ns = per_op;
    p.host.per_copy_ns = per_op == 0 ? 0 : 4321;
    std::ostringstream out;
    ms::write_problem(out, p);
    CHECK(out.str().find(per_op == 0 ? "\nhost 0 0 87.25\n" : "\nhost 12.5 4321 87.25\n") != std::string::npos);
    std::istringstream in(out.str());
    const ms::Problem back = ms::read_problem(in);
    CHECK(back.host.per_op_ns == p.host.per_op_ns);
    CHECK(back.host.per_copy_ns == p.host.per_copy_ns);
    CHECK(back.host.per_sync_ns == 87.25);
  }
  const std::string head = "memtool-swap-problem 1\nbudget 100\nlink 1 1 0 0 1\n";
  const std::string tail = "ops 1\nop 1000 0 launch\nbuffers 0\nend\n";
  std::istringstream old(head + "host 3 7\n" + tail);
  CHECK(ms::read_problem(old).host.per_sync_ns == 0);
  const auto refused = [&](const std::string& host, const std::string& why) {
    std::istringstream in(head + host + tail);
    CHECK_THROWS_WITH(ms::read_problem(in), Catch::Contains("line 4") && Catch::Contains(why));
  };
  refused("host 0 0 -5\n", "host times must lie in");
  refused("host 0 0 1e300\n", "host times must lie in");
  refused("host 0 0 1 2\n", "'host' takes 3 values");
}
