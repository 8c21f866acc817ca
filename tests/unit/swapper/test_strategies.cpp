// Each strategy's choices on small cases whose answers follow from its rules, the bound, and the
// learning hook.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "iteration_builder.hpp"
#include "memtool/swapper/adjust.hpp"
#include "memtool/swapper/bound.hpp"
#include "memtool/swapper/plan.hpp"
#include "transformer_iteration.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::ops_of;
using memtool::test::simple_link;
using memtool::test::swap;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// 20 ops of 1 ms around a peak at op 10; link 1 GB/s (a MiB takes 1.05 ms each way).
//   S 4 MiB ops 8-12, M 8 MiB ops 2-18, B 3 MiB ops 3-17, L 1.2 MiB ops 1-19: all span the peak.
//   T1 10 MiB ops 4-16 (not swappable), T2 2 MiB op 10 only, tiny 0.5 MiB ops 0-19 (under
//   1 MiB), late 1.5 MiB ops 13-18 (after the peak).
// DOA: L 18 ms > M 16 > B 14 > S 4.  DOA minus transfers: L 15.5 ms, B 7.7, M -0.8, S -4.4, so
// AOA ranks B > L > M > S.  Above the 22.6 MiB limit are ops 4-16, which S's gap [8, 12) covers
// only part of: WDOA ranks M = B = L > S (ties in candidate order: S, M, B, L).
struct PeakCase {
  ms::Iteration it = ops_of(20, 1'000'000);
  std::uint32_t s, m, b, l;
  std::uint64_t limit = 22 * MiB + MiB * 6 / 10;
  PeakCase() {
    s = add_buffer(it, 4 * MiB, 8, 12, {8, 12});
    m = add_buffer(it, 8 * MiB, 2, 18, {2, 18});
    b = add_buffer(it, 3 * MiB, 3, 17, {3, 17});
    l = add_buffer(it, MiB * 12 / 10, 1, 19, {1, 19});
    const std::uint32_t t1 = add_buffer(it, 10 * MiB, 4, 16, {4, 16});
    it.buffers[t1].swappable = false;
    add_buffer(it, 2 * MiB, 10, 10, {10});
    add_buffer(it, MiB / 2, 0, 19, {0, 19});
    add_buffer(it, MiB * 3 / 2, 13, 18, {13, 18});
  }
};

ms::Link gigabyte_link() { return simple_link(1.0); }

std::set<std::uint32_t> swapped(const ms::PlanResult& r) {
  std::set<std::uint32_t> buffers;
  for (const ms::Swap& s : r.schedule.swaps) buffers.insert(s.gap.buffer);
  return buffers;
}

ms::PlanResult stick(const PeakCase& c, std::string_view name, bool bugs = false) {
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;
  options.paper_bugs = bugs;
  return ms::plan(c.it, gigabyte_link(), c.limit, name, options);
}

}  // namespace

TEST_CASE("the paper's scores pick by their own ranks until the ideal load is under the limit", "[swapper][paper]") {
  const PeakCase c;
  REQUIRE(ms::validate(c.it).empty());
  REQUIRE(ms::plain_peak_bytes(c.it) == 28 * MiB + MiB * 2 / 10 + MiB / 2);
  // DOA: L, then M brings the peak op from 28.7 to 19.5 MiB.
  CHECK(swapped(stick(c, "paper-doa")) == std::set{c.l, c.m});
  // AOA: B, L, then M.
  CHECK(swapped(stick(c, "paper-aoa")) == std::set{c.b, c.l, c.m});
  // WDOA: M alone is enough; the vote's three-way tie (L, M, B all rank-sum 3) goes to M too.
  CHECK(swapped(stick(c, "paper-wdoa")) == std::set{c.m});
  CHECK(swapped(stick(c, "paper-vote")) == std::set{c.m});
  // With the implementation's bug WDOA is 0 for all: candidate order, S first, then M.
  CHECK(swapped(stick(c, "paper-wdoa", true)) == std::set{c.s, c.m});
}

TEST_CASE("the paper's schedules: stick-to-limit is out by the peak and back after it", "[swapper][paper]") {
  const PeakCase c;
  for (const auto* name : {"paper-doa", "paper-aoa", "paper-wdoa", "paper-vote"}) {
    const ms::PlanResult r = stick(c, name);
    CHECK(ms::validate(c.it, r.schedule).empty());
    for (const ms::Swap& s : r.schedule.swaps) {
      CHECK(s.out_wait_op <= 10);
      CHECK(s.in_at_op > 10);
    }
  }
  // No-overhead keeps only swaps whose copy-in starts after the copy-out's synchronisation: M's
  // copy-in, chained before L's, would start (op 8) before its copy-out ends (op 13).
  ms::PlanOptions options;
  const ms::PlanResult r = ms::plan(c.it, gigabyte_link(), c.limit, "paper-doa", options);
  CHECK(ms::validate(c.it, r.schedule).empty());
  CHECK(swapped(r) == std::set{c.l});
  for (const ms::Swap& s : r.schedule.swaps) CHECK(s.in_at_op >= s.out_wait_op);
}

TEST_CASE("save-on-cpu copies every activation across the peak on the compute stream", "[swapper][save-on-cpu]") {
  const PeakCase c;
  const ms::PlanResult r = ms::plan(c.it, gigabyte_link(), 0, "save-on-cpu");
  CHECK(swapped(r) == std::set{c.s, c.m, c.b, c.l, 6u});  // buffer 6: the tiny one, any size counts
  for (const ms::Swap& s : r.schedule.swaps) {
    CHECK(s.out_after_op == s.gap.from_op);
    CHECK(s.out_wait_op == s.gap.from_op + 1);
    CHECK(s.in_at_op == s.gap.to_op);
  }
  CHECK(r.simulation.stall_ns > 0);
}

TEST_CASE("ours hides what fits and stalls only when allowed", "[swapper][ours]") {
  // A: 5000 B persistent; B: 1000 B idle between ops 0 and 4; C: 500 B during op 2 (the peak).
  ms::Iteration it = ops_of(5, 1000);
  add_persistent(it, 5000, {2});
  const std::uint32_t b = add_buffer(it, 1000, 0, 4, {0, 4});
  add_buffer(it, 500, 2, 2, {2});
  const ms::PlanResult hidden = ms::plan(it, simple_link(), 0, "ours");
  CHECK(hidden.simulation.peak_bytes == 6000);
  CHECK(hidden.simulation.stall_ns == 0);
  REQUIRE(hidden.schedule.swaps.size() >= 1);
  CHECK(std::any_of(hidden.schedule.swaps.begin(), hidden.schedule.swaps.end(),
                    [&](const ms::Swap& s) { return s.gap.buffer == b; }));
  CHECK(ms::validate(it, hidden.schedule).empty());
  CHECK(hidden.budget_met);

  // At 0.25 B/ns B needs 4 us each way: nothing hides, so no-overhead leaves the peak alone...
  const ms::PlanResult none = ms::plan(it, simple_link(0.25), 0, "ours");
  CHECK(none.simulation.peak_bytes == 6500);
  CHECK(none.simulation.stall_ns == 0);
  // ...and stick-to-limit pays stall to get under a budget of 6000.
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;
  const ms::PlanResult paid = ms::plan(it, simple_link(0.25), 6000, "ours", options);
  CHECK(paid.budget_met);
  CHECK(paid.simulation.peak_bytes <= 6000);
  CHECK(paid.simulation.stall_ns > 0);
  CHECK(ms::validate(it, paid.schedule).empty());
  // A stall allowance caps it.
  options.max_slowdown = 0.01;
  const ms::PlanResult capped = ms::plan(it, simple_link(0.25), 6000, "ours", options);
  CHECK(capped.simulation.slowdown <= 0.01);
}

// Holding the budget (6000 B), B (1000 B, idle from op 0 to the last of `ops`) must be out for op
// `needed` (5000 B persistent and 500 B used there); op `reach` may reach every buffer. Ours' plan
// with a link of `bytes_per_ns`, checked to meet the budget with no stall and no copy called off,
// by one swap, of B, sent out after op `out_after`.
namespace {
ms::PlanResult plan_around_reach(std::uint32_t ops, std::uint32_t needed, std::uint32_t reach, double bytes_per_ns,
                                 std::uint64_t out_after) {
  ms::Iteration it = ops_of(ops, 1000);
  add_persistent(it, 5000, {needed});
  const std::uint32_t b = add_buffer(it, 1000, 0, ops - 1, {0, ops - 1});
  add_buffer(it, 500, needed, needed, {needed});
  it.ops[reach].reaches_all = true;
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;
  ms::PlanResult r = ms::plan(it, simple_link(bytes_per_ns), 6000, "ours", options);
  CHECK(r.budget_met);
  CHECK(r.simulation.stall_ns == 0);
  CHECK(r.simulation.leaves_called_off == 0);
  REQUIRE(r.schedule.swaps.size() == 1);
  CHECK(r.schedule.swaps[0].gap.buffer == b);
  CHECK(r.schedule.swaps[0].out_after_op == out_after);
  CHECK(ms::validate(it, r.schedule).empty());
  return r;
}
}  // namespace

// A copy-out due at an op reaching every buffer is skipped by the executor (one under way there is
// called off). Right after op 0 B's copy-out would fall due at op 1, which reaches every buffer:
// ours moves it to after op 1, where it still ends before op 4, so nothing stalls.
TEST_CASE("ours moves a copy-out off an op reaching every buffer", "[swapper][ours]") {
  const ms::PlanResult r = plan_around_reach(8, 4, 1, 1.0, 1);
  CHECK(r.simulation.rule_swaps == 0);
  CHECK_FALSE(r.simulation.swaps[0].stayed);
}

// The same with a copy still under way: at 0.5 B/ns B's copy-out takes 2 us, so one after op 0
// ([1000, 3000)) would be called off by op 2, reaching every buffer. After op 2 ([3000, 5000)) it
// is out before op 6 and back by op 9: nothing stalls.
TEST_CASE("ours moves a copy-out that an op reaching every buffer would call off", "[swapper][ours]") {
  (void)plan_around_reach(10, 6, 2, 0.5, 2);
}

TEST_CASE("unknown strategies and malformed inputs are refused", "[swapper][plan]") {
  ms::Iteration it = ops_of(3, 10);
  add_buffer(it, 10, 0, 2, {0, 2});
  CHECK_THROWS_AS(ms::plan(it, simple_link(), 0, "nope"), std::invalid_argument);
  it.buffers[0].size = 0;
  CHECK_THROWS_AS(ms::plan(it, simple_link(), 0, "ours"), std::invalid_argument);
  CHECK(ms::find_strategy("paper-vote") != nullptr);
  CHECK(ms::strategies().size() == 6);
}

TEST_CASE("the bound: tight on one hideable gap", "[swapper][bound]") {
  ms::Iteration it = ops_of(5, 1000);
  add_persistent(it, 5000, {2});
  add_buffer(it, 1000, 0, 4, {0, 4});
  add_buffer(it, 500, 2, 2, {2});
  const ms::Bound bound = ms::bound(it, simple_link());
  CHECK(bound.plain_peak_bytes == 6500);
  CHECK(bound.peak_bytes == 6000);  // B can be away during op 2, not during op 0 or 4
  CHECK(ms::plan(it, simple_link(), 0, "ours").simulation.peak_bytes == bound.peak_bytes);
}

TEST_CASE("the bound: the copy engine limits how much can be away at once", "[swapper][bound]") {
  // P and Q (1000 B each) idle from op 0 to op 4, R (1500 B) during op 2. At op 2 (t = 2000) each
  // could be out on its own, but one engine moves 1000 B in the 1000 ns since their gaps began.
  ms::Iteration it = ops_of(5, 1000);
  add_buffer(it, 1000, 0, 4, {0, 4});
  add_buffer(it, 1000, 0, 4, {0, 4});
  add_buffer(it, 1500, 2, 2, {2});
  const ms::Bound bound = ms::bound(it, simple_link());
  CHECK(bound.peak_bytes == 2500);
  CHECK(bound.op == 2);
  for (const ms::StrategyInfo& s : ms::strategies()) {
    const ms::PlanResult r = ms::plan(it, simple_link(), 0, s.name);
    if (r.simulation.stall_ns == 0) CHECK(r.simulation.peak_bytes >= bound.peak_bytes);
  }
}

TEST_CASE("adjust moves a late swap-in earlier by its lateness, within its gap", "[swapper][adjust]") {
  ms::Iteration it = ops_of(5, 1000);
  const std::uint32_t b = add_buffer(it, 1000, 0, 4, {0, 4});
  const std::uint32_t c = add_buffer(it, 1000, 0, 4, {0, 4});
  ms::Schedule schedule;
  schedule.swaps = {swap(b, 0, 0, 4, 0, 4), swap(c, 0, 0, 4, 0, 3)};
  const std::vector<double> lateness{1000, -200};
  const ms::Schedule adjusted = ms::adjust(it, schedule, lateness);
  CHECK(adjusted.swaps[0].in_at_op == 2);  // 1250 ns needed: ops 3 and 2 give 2000
  CHECK(adjusted.swaps[1] == schedule.swaps[1]);
  CHECK(ms::validate(it, adjusted).empty());

  // Never before its copy-out.
  const std::vector<double> huge{1e9, 0};
  CHECK(ms::adjust(it, schedule, huge).swaps[0].in_at_op == 1);
  CHECK_THROWS_AS(ms::adjust(it, schedule, std::vector<double>{1.0}), std::invalid_argument);

  // Learning: simulate, adjust by what came late, simulate again: on time.
  ms::Schedule one;
  one.swaps = {swap(b, 0, 0, 4, 0, 4)};
  const ms::Simulation late = ms::simulate(it, one, simple_link());
  REQUIRE(late.swaps[0].lateness_ns > 0);
  const std::vector<double> seen{late.swaps[0].lateness_ns};
  const ms::Simulation learnt = ms::simulate(it, ms::adjust(it, one, seen), simple_link());
  CHECK(learnt.swaps[0].lateness_ns <= 0);
  CHECK(learnt.stall_ns == 0);
}

TEST_CASE("ours: a long iteration gets fewer simulations, and each is reported", "[swapper][ours][scale]") {
  const ms::Iteration it = memtool::test::transformer_iteration(2000);
  REQUIRE(ms::validate(it).empty());
  const std::uint64_t budget = ms::plain_peak_bytes(it) * 6 / 10;
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;
  options.max_slowdown = 0.5;  // one pass: planned waits
  std::vector<std::pair<std::uint32_t, std::uint32_t>> reported;
  options.progress = [&](std::uint32_t done, std::uint32_t limit) { reported.emplace_back(done, limit); };
  const ms::PlanResult full = ms::plan(it, simple_link(55.0), budget, "ours", options);
  REQUIRE(!reported.empty());
  CHECK(reported.size() == full.simulations);
  for (std::size_t k = 0; k < reported.size(); ++k) {
    CHECK(reported[k].first == k + 1);
    CHECK(reported[k].second == options.max_simulations);
  }
  REQUIRE(full.simulations > 10);
  // Ten simulations' worth of ops: the limit is ten simulations (checked between steps: the
  // starts for one target, the paper's eight, save-on-cpu's and the fill's, run whole).
  reported.clear();
  options.max_simulated_ops = 10 * it.ops.size();
  const ms::PlanResult limited = ms::plan(it, simple_link(55.0), budget, "ours", options);
  CHECK(limited.simulations < full.simulations);
  CHECK(limited.simulations <= 10 + 15);
  REQUIRE(!reported.empty());
  CHECK(reported.back().second == 10);
}
