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
