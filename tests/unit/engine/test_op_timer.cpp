// The swap planner's GPU times per work item (op_timer.hpp), on a device whose events carry
// scripted GPU times: an item's time runs from the event after the item before it, or, when
// its stream waited for a copy back, from after that wait; each the shorter of two iterations
// in a row of the same length; without timing events, host gaps.
#include <catch2/catch.hpp>

#include <deque>
#include <map>

#include "memtool/engine/sim_device.hpp"
#include "op_timer.hpp"
#include "scripted_timing_device.hpp"

using namespace memtool::engine;
using memtool::engine::detail::ItemTimes;
using memtool::engine::detail::OpTimer;
using memtool::engine::detail::SpareTimingEvents;

namespace {

using memtool::engine::test::ScriptedTimingDevice;

}  // namespace

TEST_CASE("op timer: GPU times per item, a wait for a copy back left out", "[engine][swap][op_timer]") {
  // Recorded in this order: the start (0), after item 0 (10), after item 1's wait (25), after
  // item 1 (30), after item 2 (35).
  ScriptedTimingDevice device({0, 10, 25, 30, 35});
  SpareTimingEvents events;
  OpTimer timer(device, events);
  const StreamId s = 1;
  timer.begin();
  timer.item(s);
  timer.item(s);
  timer.waited(s);  // item 1's stream waited 15 ns for a copy: not the item's own time
  timer.item(s);
  timer.end();
  CHECK_FALSE(timer.poll());  // the GPU has not run it yet
  device.caught_up_ = true;
  const std::optional<ItemTimes> times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{10, 5, 5});
  CHECK(timer.gpu_timed());
  timer.release();
  events.destroy_all(device);
}

TEST_CASE("op timer: each item's time the shorter of two iterations in a row of the same length",
          "[engine][swap][op_timer]") {
  // Marks, in recording order: two items (0, 1, 2); three (10, 40, 45, 50), compared with none
  // (the one before had two items); three (100, 200, 300, 400), compared with none (the one
  // before was read); then two of three kept for comparison: (500, 510, 550, 555) with items of
  // 10, 40 (late: run late by a busy machine, or a wait not seen) and 5 ns, and (600, 630, 635,
  // 640) with 30 (late), 5 and 5 ns.
  ScriptedTimingDevice device({0, 1, 2, 10, 40, 45, 50, 100, 200, 300, 400, 500, 510, 550, 555, 600, 630, 635, 640});
  SpareTimingEvents events;
  OpTimer timer(device, events);
  const StreamId s = 1;
  const auto iteration = [&](int items) {
    timer.begin();
    for (int i = 0; i < items; ++i) timer.item(s);
    timer.end();
  };
  device.caught_up_ = true;
  iteration(2);
  iteration(3);
  std::optional<ItemTimes> times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{30, 5, 5});
  iteration(3);
  times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{100, 100, 100});
  device.caught_up_ = false;
  iteration(3);
  iteration(3);               // the one before, ended unread, is kept for the comparison
  CHECK_FALSE(timer.poll());  // the GPU has not run them yet
  device.caught_up_ = true;
  times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{10, 5, 5});
  CHECK_FALSE(timer.poll());  // read once
  timer.release();
  events.destroy_all(device);
}

TEST_CASE("op timer: an iteration kept for the comparison is dropped with an unfinished one after it",
          "[engine][swap][op_timer]") {
  // Three items ended unread (kept), then two of an iteration that never ends, then three again:
  // those are compared with nothing (the kept one is older than the unfinished one), so their
  // times are their own (a second each), not the older one's host gaps.
  constexpr double kSecond = 1e9;
  ScriptedTimingDevice device({0, 1, 2, 3, 10, 11, 100, 100 + kSecond, 100 + 2 * kSecond, 100 + 3 * kSecond});
  SpareTimingEvents events;
  OpTimer timer(device, events);
  const StreamId s = 1;
  device.caught_up_ = true;
  timer.begin();
  for (int i = 0; i < 3; ++i) timer.item(s);
  timer.end();
  timer.begin();
  for (int i = 0; i < 2; ++i) timer.item(s);
  timer.begin();
  for (int i = 0; i < 3; ++i) timer.item(s);
  timer.end();
  const std::optional<ItemTimes> times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{kSecond, kSecond, kSecond});
  timer.release();
  events.destroy_all(device);
}

TEST_CASE("op timer: without timing events, the host's gaps", "[engine][swap][op_timer]") {
  SimDevice device(SimDevice::Options{std::uint64_t{64} << 20});  // no timing events
  SpareTimingEvents events;
  OpTimer timer(device, events);
  timer.begin();
  timer.item(1);
  timer.waited(1);
  timer.item(1);
  timer.end();
  const std::optional<ItemTimes> times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns.size() == 2);
  CHECK_FALSE(timer.gpu_timed());
  for (const double t : times->gpu_ns) CHECK(t >= 0);
}

namespace {
std::uint64_t g_host_now = 0;
std::uint64_t host_clock() { return g_host_now; }
}  // namespace

TEST_CASE("op timer: the program's host time per item, memtool's time and its synchronisations out",
          "[engine][swap][op_timer]") {
  // Two iterations of three items: four events each (the start and after each item).
  ScriptedTimingDevice device({0, 10, 20, 30, 100, 110, 120, 130});
  device.caught_up_ = true;
  SpareTimingEvents events;
  OpTimer timer(device, events, &host_clock);
  std::uint64_t memtool = 0;  // memtool's host time so far (HostCostMeter::spent_ns)
  timer.set_memtool_time([&] { return memtool; });
  const StreamId s = 1;
  g_host_now = 1000;
  // The first: 40 ns of the program's before its first item (its allocations after the boundary:
  // the last item's, as the iteration repeats); item 0 for 100 ns, 30 of them memtool's; item 1
  // for 150, 50 waiting in a synchronisation; item 2 for 150, 20 memtool's.
  timer.begin();
  g_host_now += 40;
  timer.item(s);
  g_host_now += 70;
  memtool += 30;
  g_host_now += 30;
  timer.item(s);
  g_host_now += 100;
  timer.synced(50);
  g_host_now += 50;
  timer.item(s);
  g_host_now += 130;
  memtool += 20;
  g_host_now += 20;
  timer.end();
  // The second, as long: before its first item 25 ns of the program's, 5 of memtool's and a
  // synchronisation (the wait between the two iterations, which flags the last item); item 0 for
  // 95, 20 of them memtool's; item 1 for 120 (none), item 2 for 140.
  timer.begin();
  g_host_now += 25;
  memtool += 5;
  g_host_now += 5;
  timer.synced(500);
  g_host_now += 500;
  timer.item(s);
  g_host_now += 75;
  memtool += 20;
  g_host_now += 20;
  timer.item(s);
  g_host_now += 120;
  timer.item(s);
  g_host_now += 140;
  timer.end();
  const std::optional<ItemTimes> times = timer.poll();
  REQUIRE(times);
  CHECK(times->gpu_ns == std::vector<double>{10, 10, 10});
  CHECK(times->host_ns == std::vector<double>{70, 100, 140 + 25});  // each the shorter of the two
  CHECK(times->syncs == std::vector<bool>{false, true, true});      // a synchronisation in either
  CHECK(times->host_timed);
  CHECK(times->wall_ns == 25 + 5 + 500 + 95 + 120 + 140);  // the second's
  CHECK(times->memtool_ns == 5 + 20);
  CHECK(times->sync_wait_ns == 500);
  timer.release();
  events.destroy_all(device);
}

TEST_CASE("op timer: host times are not host-timed without memtool's time or timing events",
          "[engine][swap][op_timer]") {
  const auto one = [](Device& device, bool memtool_time) {
    SpareTimingEvents events;
    OpTimer timer(device, events, &host_clock);
    if (memtool_time) timer.set_memtool_time([] { return std::uint64_t{0}; });
    g_host_now = 0;
    timer.begin();
    timer.item(1);
    g_host_now += 40;
    timer.item(1);
    g_host_now += 60;
    timer.end();
    const std::optional<ItemTimes> times = timer.poll();
    timer.release();
    events.destroy_all(device);
    REQUIRE(times);
    CHECK(times->host_ns == std::vector<double>{40, 60});
    return times->host_timed;
  };
  ScriptedTimingDevice timed({0, 1, 2});
  timed.caught_up_ = true;
  CHECK_FALSE(one(timed, false));
  SimDevice untimed(SimDevice::Options{std::uint64_t{64} << 20});  // GPU times are host gaps
  CHECK_FALSE(one(untimed, true));
}
