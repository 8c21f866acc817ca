// The pool re-planned for ours' schedules on the three real iterations (alexnet, mobilenet_v2,
// lstm) at 80% and 60% of the plain peak: every residency packed without a clash under both
// rules, the lower bound is the simulator's peak (the same times, plus the 512-byte padding), and
// the pool the planner finds for it stays within 8% of that peak. (A schedule the executor's
// rule still helps out is packed at the schedule's own timing.) The benchmark (bench_swap) prints
// the same figures with the planner's full time limit.
#include <catch2/catch.hpp>

#include <vector>

#include "memtool/planner/placement.hpp"
#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/swap_pool.hpp"
#include "pool_checks.hpp"
#include "real_iterations.hpp"

namespace ms = memtool::swapper;
using memtool::test::pool_clash;
using memtool::test::real_iteration;
using memtool::test::real_models;

TEST_CASE("real iterations: ours' schedules packed into a pool close to their simulated peak",
          "[swapper][real][pool]") {
  for (const std::string& model : real_models()) {
    const ms::Iteration& it = real_iteration(model).iteration;
    std::uint64_t padding = 0;  // what 512-byte alignment adds to every buffer at once
    for (const ms::Buffer& b : it.buffers) padding += (b.size + 511) / 512 * 512 - b.size;
    for (const double fraction : {0.8, 0.6}) {
      ms::PlanOptions options;
      options.mode = ms::ScheduleMode::stick_to_limit;
      options.max_simulations = 600;  // keeps the suite fast; the benchmark runs the default
      const auto budget = static_cast<std::uint64_t>(fraction * static_cast<double>(ms::plain_peak_bytes(it)));
      const ms::PlanResult plan = ms::plan(it, ms::Link{}, budget, "ours", options);
      ms::SwapPoolOptions pool_options;
      pool_options.time_limit_seconds = 0.2;
      // Held to the budget as the executor runs it: the rule's swaps beside the schedule's split
      // residencies too.
      const ms::Simulation& timing = plan.simulation;
      const ms::SwapPool pool = ms::plan_swap_pool(it, plan.schedule, timing, pool_options);
      const double peak = static_cast<double>(timing.peak_bytes);
      INFO(model << " at " << fraction << ": " << plan.schedule.swaps.size() << " swaps, peak " << peak
                 << ", lower bound " << pool.lower_bound_bytes << ", pool " << pool.pool_bytes << ", same address "
                 << pool.pool_bytes_same_address);
      // Where ours keeps the rule alone (no schedule: alexnet at 80%, the rule's leaves kept back
      // without a copy while under way), the rule's swaps are the residencies to pack.
      REQUIRE((!plan.schedule.swaps.empty() || !timing.rule_evictions.empty()));
      // A buffer away k times (copy-out ended before copy-in started) has k + 1 residencies, a
      // persistent one k (one of them through the iteration's start), unless it never leaves.
      std::vector<std::size_t> away(it.buffers.size(), 0);
      for (std::size_t s = 0; s < plan.schedule.swaps.size(); ++s) {
        const ms::SwapTiming& t = timing.swaps[s];
        if (t.in_start_ns > t.out_end_ns) ++away[plan.schedule.swaps[s].gap.buffer];
      }
      for (const ms::RuleEviction& e : timing.rule_evictions) {
        if (e.in_start_ns > e.out_end_ns) ++away[e.buffer];
      }
      std::size_t expected = 0;
      for (std::size_t b = 0; b < it.buffers.size(); ++b) {
        expected += it.buffers[b].persistent && away[b] > 0 ? away[b] : away[b] + 1;
      }
      CHECK(pool.residencies.size() == expected);
      CHECK(pool.lower_bound_bytes >= timing.peak_bytes);
      CHECK(pool.lower_bound_bytes <= timing.peak_bytes + padding);
      // Ours' schedules hold the budget as the executor does (the rule's own swaps adopted), so
      // many ops sit right at it; 0.2 s of packing then ends up to 4% above the live-bytes peak
      // (mobilenet_v2 at 60% the most). A needless swap ours kept could make it far more (its
      // residencies and others pairwise overlapping around the period: ours drops such swaps).
      CHECK(static_cast<double>(pool.pool_bytes) <= 1.08 * peak);
      CHECK(pool.pool_bytes >= pool.lower_bound_bytes);
      CHECK(pool.pool_bytes_same_address >= pool.lower_bound_bytes);
      CHECK(pool_clash(it, pool, false) == "");
      CHECK(pool_clash(it, pool, true) == "");
      for (std::size_t k = 1; k < pool.residencies.size(); ++k) {
        const ms::Residency& a = pool.residencies[k - 1];
        const ms::Residency& b = pool.residencies[k];
        if (a.buffer == b.buffer) CHECK(a.offset_same_address == b.offset_same_address);
      }
    }
  }
}
