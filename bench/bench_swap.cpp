// Swap strategies on the three real training iterations (tests/fixtures/traces/*.log: alexnet,
// mobilenet_v2, lstm, with every operator's buffers), a 55 GB/s link each way (5 us latency) and
// the bytes compute model (bytes touched at 2 TB/s, at least 5 us per op; `--rate=GB/s` changes
// the rate). Timing (Google Benchmark): plan() of each strategy at an 80% budget. Quality
// (printed after the timings; `--quality-only` skips them):
//   - per model, the bound and, for budgets of 90% to 50% of the plain peak, every strategy's peak
//     and slowdown in both modes (save-on-cpu has one point);
//   - ours' curve: its lowest peak at slowdown allowances from 0 to 100%, the best peak within 5%
//     (goal: >= 30% below the plain peak where compute allows) and what a 50% budget costs;
//   - domination: for every baseline point, ours asked for that budget within that slowdown;
//     dominated when it meets the budget whenever the baseline does (else gets at least as low)
//     with no more slowdown; which of ours' constructions won.
//   - the pool re-planned for ours' schedules at 80% and 60% (swapper/swap_pool.hpp): simulated
//     peak, lower bound, pool when a swapped buffer may come back elsewhere (a) and when it must
//     come back to its address (b), and the planner's time (`--pool-only`: just this table;
//     `--pool-limit=S`: the planner's time limit per packing, default 1 s).
// Figures in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../tests/unit/trace_analysis/fixture_log.hpp"
#include "memtool/swapper/bound.hpp"
#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/swap_pool.hpp"
#include "memtool/swapper/trace_input.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"

namespace {

namespace ms = memtool::swapper;

const std::vector<std::string> kModels{"alexnet", "mobilenet_v2", "lstm"};
constexpr double kBudgets[] = {0.9, 0.8, 0.7, 0.6, 0.5};
constexpr double kAllowances[] = {0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0};
double g_rate_bytes_per_ns = 2000.0;
double g_pool_limit_seconds = 1.0;  // the planner's, per packing

const ms::Iteration& iteration(const std::string& model) {
  static std::map<std::string, ms::Iteration> loaded;
  auto it = loaded.find(model);
  if (it == loaded.end()) {
    memtool::trace::TraceModel trace;
    memtool::test::load_fixture_log(memtool::test::fixture_path(model + ".log"), trace);
    ms::TraceInputOptions options;
    options.compute = ms::ComputeModel::bytes;
    options.bytes_per_ns = g_rate_bytes_per_ns;
    it = loaded.emplace(model, ms::to_swap_input(trace, memtool::trace::find_iterations(trace), options).iteration)
             .first;
  }
  return it->second;
}

std::uint64_t budget_of(const ms::Iteration& it, double fraction) {
  return static_cast<std::uint64_t>(fraction * static_cast<double>(ms::plain_peak_bytes(it)));
}

void BM_Plan(benchmark::State& state, const std::string& model, const char* strategy, ms::ScheduleMode mode) {
  const ms::Iteration& it = iteration(model);
  ms::PlanOptions options;
  options.mode = mode;
  const ms::Link link;
  for (auto _ : state) {
    const ms::PlanResult r = ms::plan(it, link, budget_of(it, 0.8), strategy, options);
    benchmark::DoNotOptimize(r.simulation.peak_bytes);
    state.counters["simulations"] = r.simulations;
  }
}

std::string point(const ms::PlanResult& r) {
  return fmt::format(
      "{:.1f}% @ {:.1f}%",
      100.0 * static_cast<double>(r.simulation.peak_bytes) / static_cast<double>(r.simulation.plain_peak_bytes),
      100.0 * r.simulation.slowdown);
}

ms::PlanResult ours_within(const ms::Iteration& it, std::uint64_t budget, double slowdown) {
  ms::PlanOptions options;
  options.mode = slowdown > 0 ? ms::ScheduleMode::stick_to_limit : ms::ScheduleMode::no_overhead;
  options.max_slowdown = slowdown;
  return ms::plan(it, ms::Link{}, budget, "ours", options);
}

void quality() {
  const ms::Link link;
  fmt::print(
      "\nSwap strategies: link 55 GB/s each way, 5 us latency; compute: bytes touched at {:.0f} GB/s, >= 5 us/op\n",
      g_rate_bytes_per_ns);
  fmt::print("cells: peak (of the plain peak) @ slowdown\n");
  for (const std::string& model : kModels) {
    const ms::Iteration& it = iteration(model);
    const ms::Bound bound = ms::bound(it, link);
    const double plain = static_cast<double>(bound.plain_peak_bytes);
    fmt::print("\n## {}: {} ops, {:.2f} ms per iteration, plain peak {:.1f} MB, bound {:.1f}% (zero stall)\n", model,
               it.ops.size(), static_cast<double>(ms::base_time_ns(it)) / 1e6, plain / 1e6,
               100.0 * static_cast<double>(bound.peak_bytes) / plain);
    fmt::print("| strategy | mode |");
    for (const double b : kBudgets) fmt::print(" {:.0f}% |", 100 * b);
    fmt::print("\n|---|---|");
    for (std::size_t i = 0; i < std::size(kBudgets); ++i) fmt::print("---|");
    fmt::print("\n");
    struct Baseline {
      std::string name;
      std::uint64_t budget;
      ms::PlanResult result;
    };
    std::vector<Baseline> baselines;
    for (const ms::StrategyInfo& s : ms::strategies()) {
      for (const auto mode : {ms::ScheduleMode::no_overhead, ms::ScheduleMode::stick_to_limit}) {
        if (s.name == "save-on-cpu" && mode == ms::ScheduleMode::stick_to_limit) continue;
        fmt::print(
            "| {} | {} |", s.name,
            s.name == "save-on-cpu" ? "-" : (mode == ms::ScheduleMode::no_overhead ? "no-overhead" : "stick-to-limit"));
        for (const double b : kBudgets) {
          ms::PlanOptions options;
          options.mode = mode;
          const ms::PlanResult r = ms::plan(it, link, budget_of(it, b), s.name, options);
          fmt::print(" {} |", point(r));
          if (s.name != "ours" && (s.name != "save-on-cpu" || b == kBudgets[0])) {
            baselines.push_back(
                {std::string(s.name), s.name == "save-on-cpu" ? r.simulation.peak_bytes : budget_of(it, b), r});
          }
        }
        fmt::print("\n");
      }
    }
    fmt::print("\nours, lowest peak within a slowdown allowance:");
    double within_5 = 1.0;
    for (const double a : kAllowances) {
      const ms::PlanResult r = ours_within(it, 0, a);
      fmt::print(" {:.0f}%: {};", 100 * a, point(r));
      if (a <= 0.05) within_5 = std::min(within_5, static_cast<double>(r.simulation.peak_bytes) / plain);
    }
    ms::PlanOptions stick;
    stick.mode = ms::ScheduleMode::stick_to_limit;
    const ms::PlanResult half = ms::plan(it, link, budget_of(it, 0.5), "ours", stick);
    fmt::print("\nours within 5% slowdown: {:.1f}% lower peak; a 50% budget: {} ({})\n", 100.0 * (1.0 - within_5),
               half.budget_met ? fmt::format("met at {:.1f}% slowdown", 100.0 * half.simulation.slowdown)
                               : fmt::format("not met, {}", point(half)),
               half.construction);
    std::size_t dominated = 0;
    std::map<std::string, int> won;
    for (const Baseline& b : baselines) {
      const ms::PlanResult ours = ours_within(it, b.budget, b.result.simulation.slowdown);
      const bool ok =
          ours.simulation.slowdown <= b.result.simulation.slowdown + 1e-9 &&
          std::max(ours.simulation.peak_bytes, b.budget) <= std::max(b.result.simulation.peak_bytes, b.budget);
      dominated += ok ? 1 : 0;
      ++won[ours.construction];
      if (!ok)
        fmt::print("  not dominated: {} at {:.1f} MB: {} vs ours {}\n", b.name, static_cast<double>(b.budget) / 1e6,
                   point(b.result), point(ours));
    }
    fmt::print("ours dominates {} of {} baseline points; constructions that won:", dominated, baselines.size());
    for (const auto& [name, count] : won) fmt::print(" {} {};", name, count);
    fmt::print("\n");
  }
}

// The pool for ours' schedules, both packings, with the planner's default time limit.
void pools() {
  fmt::print("\nPool re-planned for ours' schedules: planner `best`, {:g} s per packing, 512-byte alignment\n",
             g_pool_limit_seconds);
  ms::SwapPoolOptions pool_options;
  pool_options.time_limit_seconds = g_pool_limit_seconds;
  fmt::print(
      "| model | budget | mode | swaps | residencies | simulated peak | lower bound | pool (a) | (a)/peak |"
      " pool (b), same address | (b)/peak | (b)/(a) | planner s |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const auto mb = [](std::uint64_t bytes) { return fmt::format("{:.3f} MB", static_cast<double>(bytes) / 1e6); };
  const auto ratio = [](std::uint64_t a, std::uint64_t b) { return static_cast<double>(a) / static_cast<double>(b); };
  for (const std::string& model : kModels) {
    const ms::Iteration& it = iteration(model);
    const auto row = [&](const std::string& budget, const std::string& mode, const ms::Schedule& schedule,
                         const ms::Simulation& simulation) {
      const auto start = std::chrono::steady_clock::now();
      const ms::SwapPool pool = ms::plan_swap_pool(it, schedule, simulation, pool_options);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::uint64_t peak = simulation.peak_bytes;
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.4f} | {} | {:.4f} | {:.4f} | {:.2f} |\n", model, budget,
                 mode, schedule.swaps.size(), pool.residencies.size(), mb(peak), mb(pool.lower_bound_bytes),
                 mb(pool.pool_bytes), ratio(pool.pool_bytes, peak), mb(pool.pool_bytes_same_address),
                 ratio(pool.pool_bytes_same_address, peak), ratio(pool.pool_bytes_same_address, pool.pool_bytes),
                 seconds);
    };
    // The planner's own gap on the same iteration without swapping: the reference.
    const ms::Schedule none;
    row("-", "no swap", none, ms::simulate(it, none, ms::Link{}));
    for (const double b : {0.8, 0.6}) {
      for (const auto mode : {ms::ScheduleMode::no_overhead, ms::ScheduleMode::stick_to_limit}) {
        ms::PlanOptions options;
        options.mode = mode;
        const ms::PlanResult r = ms::plan(it, ms::Link{}, budget_of(it, b), "ours", options);
        row(fmt::format("{:.0f}%", 100 * b), mode == ms::ScheduleMode::no_overhead ? "no-overhead" : "stick-to-limit",
            r.schedule, r.simulation);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool timings = true;
  bool pool_only = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quality-only") == 0)
      timings = false;
    else if (std::strcmp(argv[i], "--pool-only") == 0)
      pool_only = true;
    else if (std::strncmp(argv[i], "--pool-limit=", 13) == 0)
      g_pool_limit_seconds = std::stod(argv[i] + 13);
    else if (std::strncmp(argv[i], "--rate=", 7) == 0)
      g_rate_bytes_per_ns = std::stod(argv[i] + 7);
    else
      args.push_back(argv[i]);
  }
  if (pool_only) {
    pools();
    return 0;
  }
  if (timings) {
    for (const std::string& model : kModels) {
      for (const char* strategy : {"paper-vote", "save-on-cpu", "ours"}) {
        for (const auto mode : {ms::ScheduleMode::no_overhead, ms::ScheduleMode::stick_to_limit}) {
          const std::string name =
              fmt::format("plan/{}/{}/{}", model, strategy,
                          mode == ms::ScheduleMode::no_overhead ? "no-overhead" : "stick-to-limit");
          benchmark::RegisterBenchmark(name.c_str(), BM_Plan, model, strategy, mode)->Unit(benchmark::kMillisecond);
        }
      }
    }
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    benchmark::RunSpecifiedBenchmarks();
  }
  quality();
  pools();
  return 0;
}
