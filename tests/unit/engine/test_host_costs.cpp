// The swap policy's host-cost meter (engine/src/swap/host_costs.hpp), white-box on a scripted
// clock: a work item's hook time less the copies it issued and the host's waits for the GPU, a
// copy's time (nested copies counted, their time once), settling work charged to the copies, and
// each iteration's figures kept at its end.
#include <catch2/catch.hpp>

#include "swap/host_costs.hpp"

using memtool::engine::detail::HostCostMeter;

namespace {
std::uint64_t g_now = 0;
std::uint64_t scripted_ns() { return g_now; }
}  // namespace

TEST_CASE("host costs: an op's hook less its copies and waits; copies with their settling", "[engine][swap]") {
  g_now = 1000;
  std::uint64_t stalls = 0;
  HostCostMeter meter(&scripted_ns);
  meter.set_stalls([&] { return stalls; });
  CHECK(meter.costs().none());  // nothing until an iteration ends
  {
    const HostCostMeter::Scope op = meter.op();
    g_now += 100;  // bookkeeping
    {
      const HostCostMeter::Scope copy = meter.copy();
      g_now += 300;
      {
        const HostCostMeter::Scope inner = meter.copy();  // a copy out to make room for a copy in
        g_now += 200;
      }
    }
    g_now += 50;
    stalls += 400;  // the host waited for the GPU: not a cost
    g_now += 400;
  }
  {
    const HostCostMeter::Scope op = meter.op();
    g_now += 250;
    meter.copying(false, [&] { g_now += 100; });  // settling copies issued earlier
  }
  CHECK(meter.costs().none());
  meter.end_iteration();
  // ops: (100 + 50) and 250; copies: 2 issued, 500 + 100 ns of their work.
  CHECK(meter.costs().per_op_ns == Approx(200.0));
  CHECK(meter.costs().per_copy_ns == Approx(300.0));

  // The next iteration: no copies; the cost per copy stays the last one measured.
  {
    const HostCostMeter::Scope op = meter.op();
    g_now += 80;
  }
  meter.end_iteration();
  CHECK(meter.costs().per_op_ns == Approx(80.0));
  CHECK(meter.costs().per_copy_ns == Approx(300.0));
  // An iteration with no work item keeps the figures.
  meter.end_iteration();
  CHECK(meter.costs().per_op_ns == Approx(80.0));
}

TEST_CASE("host costs: a wait inside a copy is not the copy's; the steady clock moves", "[engine][swap]") {
  g_now = 0;
  std::uint64_t stalls = 0;
  HostCostMeter meter(&scripted_ns);
  meter.set_stalls([&] { return stalls; });
  {
    const HostCostMeter::Scope op = meter.op();
    meter.copying(true, [&] {
      g_now += 1000;
      stalls += 900;  // a copy back on demand, waited for
    });
  }
  meter.end_iteration();
  CHECK(meter.costs().per_op_ns == Approx(0.0));
  CHECK(meter.costs().per_copy_ns == Approx(100.0));

  HostCostMeter steady;  // the default clock
  {
    const HostCostMeter::Scope op = steady.op();
    const std::uint64_t start = HostCostMeter::steady_ns();
    while (HostCostMeter::steady_ns() - start < 20000) {}
  }
  steady.end_iteration();
  CHECK(steady.costs().per_op_ns >= 20000.0);
  CHECK(steady.costs().per_copy_ns == 0.0);
}

TEST_CASE("host costs: memtool's host time spent, its waits and open scopes included", "[engine][swap]") {
  g_now = 5000;
  std::uint64_t stalls = 0;
  HostCostMeter meter(&scripted_ns);
  meter.set_stalls([&] { return stalls; });
  CHECK(meter.spent_ns() == 0);
  stalls += 70;  // a wait outside any scope (an export's)
  CHECK(meter.spent_ns() == 70);
  {
    const HostCostMeter::Scope op = meter.op();
    g_now += 100;
    CHECK(meter.spent_ns() == 170);  // open: its time so far
    {
      const HostCostMeter::Scope copy = meter.copy();
      g_now += 40;
      stalls += 60;  // a wait in it: counted once, as the time it took
      g_now += 60;
    }
    CHECK(meter.spent_ns() == 270);
  }
  g_now += 1000;  // the program's own time
  CHECK(meter.spent_ns() == 270);
  {
    const HostCostMeter::Scope other = meter.other();  // an allocation's work
    g_now += 30;
    meter.copying(true, [&] { g_now += 20; });  // a copy out to make room for it
  }
  CHECK(meter.spent_ns() == 320);
  meter.end_iteration();
  // The allocation's work is no op's cost: one op (100 ns), two copies (40 + 20 ns, the wait out).
  CHECK(meter.costs().per_op_ns == Approx(100.0));
  CHECK(meter.costs().per_copy_ns == Approx(30.0));
  CHECK(meter.spent_ns() == 320);  // not per iteration
}
