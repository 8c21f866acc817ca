// The pool re-planned for a swap schedule (swap_pool.hpp) on hand-made iterations whose answers
// are worked out by hand: no swaps (the plain pool, a crossing buffer cut at the iteration
// start), three swapped buffers that share two slots only when a buffer may come back elsewhere
// (a) and need three under the same-address rule (b), a swap around the iteration end that
// lets another buffer use the bytes, and inputs that do not belong together.
#include <catch2/catch.hpp>

#include "iteration_builder.hpp"
#include "memtool/planner/placement.hpp"
#include "memtool/swapper/simulate.hpp"
#include "memtool/swapper/swap_pool.hpp"
#include "pool_checks.hpp"

namespace ms = memtool::swapper;
using memtool::test::add_buffer;
using memtool::test::add_persistent;
using memtool::test::ops_of;
using memtool::test::pool_clash;
using memtool::test::simple_link;
using memtool::test::swap;

namespace {

ms::SwapPoolOptions exact() {
  ms::SwapPoolOptions options;
  options.alignment = 1;
  options.time_limit_seconds = 0.1;
  return options;
}

// Both packings valid by the planner's own validator, on the problems built from the pool.
void check_valid(const ms::Iteration& it, const ms::SwapPool& pool) {
  for (const bool same : {false, true}) {
    INFO((same ? "same address" : "free"));
    const memtool::trace::Problem problem = ms::pool_problem(it, pool.residencies, pool.period_ns, 1, same);
    memtool::planner::Placement placement;
    placement.pool_size = same ? pool.pool_bytes_same_address : pool.pool_bytes;
    if (same) {
      for (const memtool::trace::BufferRequest& r : problem.buffers) {
        for (const ms::Residency& res : pool.residencies) {
          if (res.buffer == r.id) {
            placement.offsets.push_back(res.offset_same_address);
            break;
          }
        }
      }
    } else {
      for (const ms::Residency& res : pool.residencies) placement.offsets.push_back(res.offset);
    }
    const auto check = memtool::planner::validate(problem, placement);
    CHECK(check.message == "");
    CHECK(check.valid);
    CHECK(pool_clash(it, pool, same) == "");
  }
}

}  // namespace

TEST_CASE("swap pool: no swaps is the plain pool, a crossing buffer cut at the iteration start", "[swapper][pool]") {
  // 6 ops of 100 ns. W: persistent 1000 B; C: 300 B allocated before op 4, freed after op 1 of the
  // next iteration; Y: 200 B over ops 2..3. Live: W + C over [0, 200) and [400, 600), W + Y between.
  ms::Iteration it = ops_of(6, 100);
  add_persistent(it, 1000, {0});
  add_buffer(it, 300, 4, 1, {1, 4});
  add_buffer(it, 200, 2, 3, {2});
  const ms::Schedule none;
  const ms::Simulation sim = ms::simulate(it, none, simple_link());
  const ms::SwapPool pool = ms::plan_swap_pool(it, none, sim, exact());
  CHECK(pool.period_ns == 600);
  REQUIRE(pool.residencies.size() == 3);
  CHECK(pool.residencies[0].begin_ns == 0);
  CHECK(pool.residencies[0].end_ns == 600);
  CHECK_FALSE(pool.residencies[0].wraps(600));
  CHECK(pool.residencies[1].begin_ns == 400);
  CHECK(pool.residencies[1].end_ns == 800);  // to the end of op 1 of the next iteration
  CHECK(pool.residencies[1].wraps(600));
  CHECK(pool.residencies[2].begin_ns == 200);
  CHECK(pool.residencies[2].end_ns == 400);
  CHECK(sim.peak_bytes == 1300);
  CHECK(pool.lower_bound_bytes == 1300);
  CHECK(pool.pool_bytes == 1300);  // C and Y share a slot beside W
  CHECK(pool.pool_bytes_same_address == 1300);
  const memtool::trace::Problem problem = ms::pool_problem(it, pool.residencies, pool.period_ns, 1, false);
  CHECK(problem.buffers[1].crosses_iteration);
  CHECK(problem.buffers[1].intervals.size() == 2);
  check_valid(it, pool);
}

TEST_CASE("swap pool: three swapped buffers fit two slots, but three at the same address", "[swapper][pool]") {
  // 8 ops of 100 ns; A, B, C of 10 B each; a 1 B/ns link: every copy takes 10 ns.
  //   A: ops 0..4, away from 110 (out after op 0) to 300 (in at op 3): [0, 110) and [300, 500)
  //   B: ops 1..6, away from 210 to 500:                                 [100, 210) and [500, 700)
  //   C: ops 4..7, away from 510 to 600:                                 [400, 510) and [600, 800)
  // At most two are resident at once, so two slots hold every residency when each may go
  // anywhere; but every two buffers are resident together at some time, so with one address per
  // buffer they need three.
  ms::Iteration it = ops_of(8, 100);
  const std::uint32_t a = add_buffer(it, 10, 0, 4, {0, 4});
  const std::uint32_t b = add_buffer(it, 10, 1, 6, {1, 6});
  const std::uint32_t c = add_buffer(it, 10, 4, 7, {4, 7});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(a, 0, 0, 4, 0, 3));
  schedule.swaps.push_back(swap(b, 0, 1, 6, 1, 5));
  schedule.swaps.push_back(swap(c, 0, 4, 7, 4, 6));
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link());
  REQUIRE(sim.stall_ns == 0);
  CHECK(sim.plain_peak_bytes == 30);
  CHECK(sim.peak_bytes == 20);

  const ms::SwapPool pool = ms::plan_swap_pool(it, schedule, sim, exact());
  REQUIRE(pool.residencies.size() == 6);
  const double expected[6][2] = {{0, 110}, {300, 500}, {100, 210}, {500, 700}, {400, 510}, {600, 800}};
  for (std::size_t k = 0; k < 6; ++k) {
    INFO("residency " << k);
    CHECK(pool.residencies[k].buffer == k / 2);
    CHECK(pool.residencies[k].begin_ns == Approx(expected[k][0]));
    CHECK(pool.residencies[k].end_ns == Approx(expected[k][1]));
  }
  CHECK(pool.lower_bound_bytes == 20);
  CHECK(pool.pool_bytes == 20);
  CHECK(pool.pool_bytes_same_address == 30);
  // (a) moves at least one buffer between its residencies; (b) never does.
  bool moved = false;
  for (std::size_t k = 0; k < 6; k += 2) {
    moved = moved || pool.residencies[k].offset != pool.residencies[k + 1].offset;
    CHECK(pool.residencies[k].offset_same_address == pool.residencies[k + 1].offset_same_address);
  }
  CHECK(moved);
  check_valid(it, pool);

  // Without the swaps the three are live together: the plain pool.
  const ms::Simulation plain = ms::simulate(it, {}, simple_link());
  const ms::SwapPool unswapped = ms::plan_swap_pool(it, {}, plain, exact());
  CHECK(unswapped.residencies.size() == 3);
  CHECK(unswapped.pool_bytes == 30);
  CHECK(unswapped.pool_bytes_same_address == 30);
}

TEST_CASE("swap pool: a persistent buffer away across the iteration end lends its bytes", "[swapper][pool]") {
  // 6 ops of 100 ns. P: persistent 100 B used by op 2 only, out after op 2 (away from 400), in at
  // op 5 (back from 500), ready for op 2 of the next iteration. X: 100 B during op 4. P's one
  // residency runs from 500 through the iteration's end to 400: X fits in its bytes.
  ms::Iteration it = ops_of(6, 100);
  const std::uint32_t p = add_persistent(it, 100, {2});
  add_buffer(it, 100, 4, 4, {4});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(p, 0, 2, 8, 2, 5));
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link());
  REQUIRE(sim.stall_ns == 0);
  CHECK(sim.plain_peak_bytes == 200);
  CHECK(sim.peak_bytes == 100);
  const ms::SwapPool pool = ms::plan_swap_pool(it, schedule, sim, exact());
  REQUIRE(pool.residencies.size() == 2);
  CHECK(pool.residencies[0].begin_ns == Approx(500));
  CHECK(pool.residencies[0].end_ns == Approx(1000));
  CHECK(pool.residencies[0].wraps(pool.period_ns));
  CHECK(pool.residencies[1].begin_ns == Approx(400));
  CHECK(pool.residencies[1].end_ns == Approx(500));
  CHECK(pool.lower_bound_bytes == 100);
  CHECK(pool.pool_bytes == 100);
  CHECK(pool.pool_bytes_same_address == 100);
  CHECK(pool.residencies[0].offset == pool.residencies[1].offset);
  const memtool::trace::Problem problem = ms::pool_problem(it, pool.residencies, pool.period_ns, 1, true);
  CHECK(problem.buffers[0].crosses_iteration);
  CHECK_FALSE(problem.buffers[1].crosses_iteration);
  check_valid(it, pool);

  // Alignment is paid per buffer: 100 B rounded to 512 B each, and the two still share.
  ms::SwapPoolOptions aligned = exact();
  aligned.alignment = 512;
  const ms::SwapPool padded = ms::plan_swap_pool(it, schedule, sim, aligned);
  CHECK(padded.lower_bound_bytes == 512);
  CHECK(padded.pool_bytes == 512);
}

TEST_CASE("swap pool: held to a budget, the rule's swaps split residencies too", "[swapper][pool]") {
  // 4 ops of 1000 ns, no schedule, budget 2000. B: 2000 B used by ops 0 and 3; C: 1500 B over ops
  // 1-2. The executor's rule sends B out for op 1 (copy-out [1000, 3000), op 1 waits) and brings
  // it back on demand for op 3 ([5000, 7000)): an 8000 ns iteration where C lives in B's hole.
  ms::Iteration it = ops_of(4, 1000);
  const std::uint32_t b = add_buffer(it, 2000, 0, 3, {0, 3});
  add_buffer(it, 1500, 1, 2, {1, 2});
  ms::SimulateOptions held;
  held.hold_budget_bytes = 2000;
  const ms::Schedule none;
  const ms::Simulation sim = ms::simulate(it, none, simple_link(), held);
  REQUIRE(sim.time_ns == Approx(8000));
  REQUIRE(sim.rule_evictions.size() == 1);
  CHECK(sim.rule_evictions[0].in_start_ns - sim.rule_evictions[0].out_end_ns == Approx(2000));
  CHECK(sim.peak_bytes == 2000);
  const ms::SwapPool pool = ms::plan_swap_pool(it, none, sim, exact());
  REQUIRE(pool.residencies.size() == 3);  // B before its copy-out and after its copy-in; C
  CHECK(pool.residencies[0].buffer == b);
  CHECK(pool.residencies[0].begin_ns == Approx(0));
  CHECK(pool.residencies[0].end_ns == Approx(3000));
  CHECK(pool.residencies[1].begin_ns == Approx(5000));
  CHECK(pool.residencies[1].end_ns == Approx(8000));
  CHECK(pool.lower_bound_bytes == 2000);  // B throughout (3500) without the rule's swap
  CHECK(pool.pool_bytes == 2000);
  CHECK(pool.pool_bytes_same_address == 2000);
  check_valid(it, pool);
}

TEST_CASE("swap pool: a simulation of another schedule or an unknown planner is refused", "[swapper][pool]") {
  ms::Iteration it = ops_of(6, 100);
  const std::uint32_t p = add_persistent(it, 100, {2});
  ms::Schedule schedule;
  schedule.swaps.push_back(swap(p, 0, 2, 8, 2, 5));
  const ms::Simulation plain = ms::simulate(it, {}, simple_link());
  CHECK_THROWS_AS(ms::plan_swap_pool(it, schedule, plain), std::invalid_argument);
  const ms::Simulation sim = ms::simulate(it, schedule, simple_link());
  ms::SwapPoolOptions options;
  options.algorithm = "first-come";
  CHECK_THROWS_AS(ms::plan_swap_pool(it, schedule, sim, options), std::invalid_argument);
  CHECK_THROWS_AS(ms::plan_swap_pool(ms::Iteration{}, {}, ms::Simulation{}), std::invalid_argument);
}
