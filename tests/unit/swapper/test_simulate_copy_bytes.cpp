// A buffer's copies move its own bytes (Buffer::copy_bytes), not the footprint the executor maps
// for it (its size, rounded up to the driver's granularity): the simulator times the schedule's
// and the rule's copies by those bytes while memory counts the size, and the problem file carries
// them (copy=BYTES after the flags).
#include <catch2/catch.hpp>

#include <sstream>

#include "iteration_builder.hpp"
#include "memtool/swapper/problem.hpp"
#include "memtool/swapper/simulate.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::OneGap;
using memtool::test::ops_of;
using memtool::test::simple_link;
using memtool::test::swap;

// OneGap's B (1000 B, ops 0 and 4) whose copies move 400 B: out after op 0 and back at op 4, its
// consumer, which waits for the whole copy in: 400 ns at 1 B/ns, not 1000.
TEST_CASE("a copy moves the buffer's copy bytes, memory counts its size", "[swapper][simulate][copy_bytes]") {
  OneGap g;
  g.it.buffers[g.b].copy_bytes = 400;
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(g.b, 0, 0, 4, 0, 4));
  const ms::Simulation sim = ms::simulate(g.it, schedule, simple_link());
  CHECK(sim.swaps[0].out_start_ns == 1000);
  CHECK(sim.swaps[0].out_end_ns == 1400);
  CHECK(sim.stall_ns == 400);
  CHECK(sim.op_stall_ns[4] == 400);
  CHECK(sim.d2h_busy_ns == 400);
  CHECK(sim.h2d_busy_ns == 400);
  CHECK(sim.bytes_out == 1000);  // the bytes away from the device: its size
  CHECK(sim.peak_bytes == 6000);
  // Held as the executor runs it: the same copies.
  ms::SimulateOptions held;
  held.hold_budget_bytes = 6000;
  CHECK(ms::simulate(g.it, schedule, simple_link(), held).op_stall_ns[4] == 400);
  // Copy bytes of 0, or past the size, copy the size.
  for (const std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1000}, std::uint64_t{4000}}) {
    g.it.buffers[g.b].copy_bytes = bytes;
    CHECK(g.it.buffers[g.b].moved_bytes() == 1000);
    CHECK(ms::simulate(g.it, schedule, simple_link()).stall_ns == 1000);
  }
}

// The executor's rule alone under a budget of 2000 B: op 4 allocates 1500 B, so B (2000 B, ops 0
// and 5) goes out before it and op 4 waits for that copy; B comes back on demand for op 5. Its
// copies move 500 B: op 4 and op 5 wait 500 ns each at 1 B/ns, while B's 2000 B still count.
TEST_CASE("the rule's copies move the buffer's copy bytes too", "[swapper][simulate][copy_bytes]") {
  ms::Iteration it = ops_of(6, 1000);
  const std::uint32_t b = add_buffer(it, 2000, 0, 5, {0, 5});
  add_buffer(it, 1500, 4, 4, {4});
  it.buffers[b].copy_bytes = 500;
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  held.rule_lookahead_ops = 0;
  const ms::Simulation sim = ms::simulate(it, {}, simple_link(), held);
  CHECK(sim.rule_swaps == 1);
  CHECK(sim.rule_bytes_out == 2000);
  CHECK(sim.op_stall_ns[4] == 500);
  CHECK(sim.op_stall_ns[5] == 500);
  CHECK(sim.peak_bytes == 2000);
}

TEST_CASE("a problem file carries a buffer's copy bytes where fewer than its size", "[swapper][problem][copy_bytes]") {
  ms::Problem p;
  p.iteration = ops_of(2, 1000);
  const std::uint32_t b = add_buffer(p.iteration, 2097152, 0, 1, {0, 1});
  add_buffer(p.iteration, 4096, 0, 1, {1});
  p.iteration.buffers[b].copy_bytes = 1204224;
  p.link = simple_link();
  p.budget_bytes = 4096;
  std::ostringstream out;
  ms::write_problem(out, p);
  const std::string text = out.str();
  CHECK(text.find("buffer 0 2097152 0 1 - copy=1204224 0:rw 1:rw\n") != std::string::npos);
  CHECK(text.find("buffer 1 4096 0 1 - 1:rw\n") != std::string::npos);  // copies its size: no mark
  std::istringstream in(text);
  const ms::Problem q = ms::read_problem(in);
  REQUIRE(q.iteration.buffers.size() == 2);
  CHECK(q.iteration.buffers[0].copy_bytes == 1204224);
  CHECK(q.iteration.buffers[0].accesses.size() == 2);
  CHECK(q.iteration.buffers[1].copy_bytes == 0);
  // More than the size is refused.
  std::string over = text;
  over.replace(over.find("copy=1204224"), 12, "copy=2097153");
  std::istringstream bad(over);
  CHECK_THROWS_WITH(ms::read_problem(bad), Catch::Contains("copy bytes 2097153 is out of range"));
}
