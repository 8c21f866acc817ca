// Ours' last step, the drop of needless swaps, within its work limit in ops simulated
// (PlanOptions::max_drop_simulated_ops): where a first pass over every planned swap does not fit,
// it tries no more swaps than the limit allows, and still keeps only drops that make the schedule
// better; where it fits, it runs its full passes.
#include <catch2/catch.hpp>

#include <cstdint>

#include "iteration_builder.hpp"
#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/simulate.hpp"
#include "transformer_iteration.hpp"

namespace ms = memtool::swapper;

namespace {

struct Planned {
  ms::PlanResult result;
  std::uint32_t simulations = 0;  // of both passes (holding the budget, then with planned waits)
};

Planned plan_with_drop_limit(const ms::Iteration& it, std::uint64_t budget, std::uint64_t drop_ops) {
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;  // no stall limit: held to the budget, two passes
  options.max_simulations = 300;
  options.max_drop_simulated_ops = drop_ops;
  Planned planned;
  options.progress = [&](std::uint32_t, std::uint32_t) { ++planned.simulations; };
  planned.result = ms::plan(it, memtool::test::simple_link(55.0), budget, "ours", options);
  return planned;
}

}  // namespace

TEST_CASE("ours: the drop of needless swaps tries no more than its work limit allows", "[swapper][ours][scale]") {
  const ms::Iteration it = memtool::test::transformer_iteration(2000);
  REQUIRE(ms::validate(it).empty());
  const std::uint64_t budget = ms::plain_peak_bytes(it) * 6 / 10;
  const std::uint64_t n = it.ops.size();
  constexpr std::uint64_t kTries = 5;

  const Planned none = plan_with_drop_limit(it, budget, 0);  // no swap tried
  const Planned few = plan_with_drop_limit(it, budget, kTries * n);
  const Planned full = plan_with_drop_limit(it, budget, std::uint64_t{1} << 40);
  REQUIRE(none.result.schedule.swaps.size() > kTries);  // so that a first pass does not fit in kTries
  INFO("simulations: " << none.simulations << " without a try, " << few.simulations << " with " << kTries << " a pass, "
                       << full.simulations << " with full passes");
  // The steps before the drop are the same in all three: the drop's tries are the difference.
  CHECK(few.simulations > none.simulations);
  CHECK(few.simulations <= none.simulations + 2 * kTries);
  CHECK(full.simulations > few.simulations);
  // What the tries kept made the schedule better, never worse: within the budget, less stall.
  REQUIRE(none.result.budget_met);
  REQUIRE(few.result.budget_met);
  CHECK(few.result.simulation.stall_ns <= none.result.simulation.stall_ns);
  CHECK(few.result.schedule.swaps.size() <= none.result.schedule.swaps.size());
}
