// The offline swap what-if behind `memtool simulate TRACE --budget B`: one steady iteration of a
// loaded trace or snapshot, or the problem a process planned from (MEMTOOL_SWAP_DUMP), every swap
// strategy at every budget, and the zero-stall bound (with --pool, each schedule's re-planned
// pool too); as a report in text (one table per budget, and the curve of peak against slowdown
// when there are several) or JSON. Parsing of the option values lives here too, so the verb only
// wires flags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "detail/load_model.hpp"
#include "memtool/swapper/bound.hpp"
#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/simulate.hpp"
#include "memtool/swapper/trace_input.hpp"

namespace memtool::cli {

// A budget: bytes, or a fraction of the iteration's plain peak ("80%").
struct BudgetSpec {
  std::uint64_t bytes = 0;
  double fraction = 0;  // used when bytes == 0
  std::string text;
};

// A size above 0 or a share of the plain peak: "80%", "1.5G", "512M", "4GiB", "123456"
// (memtool/trace/bytes.hpp). Throws std::invalid_argument naming the value.
[[nodiscard]] BudgetSpec parse_budget(std::string_view text);
// A comma-separated list of budgets.
[[nodiscard]] std::vector<BudgetSpec> parse_budgets(std::string_view text);
// A size per second above 0, "55GB/s", "12.5GiB/s", "51G/s" (GB = 10^9 bytes, G and GiB =
// 2^30; memtool/trace/bytes.hpp) → bytes per ns. Throws std::invalid_argument naming the value.
[[nodiscard]] double parse_rate(std::string_view text);
// "auto", "gpu", "host", "bytes".
[[nodiscard]] swapper::ComputeModel parse_compute(std::string_view text);
// The executor's rule alone, with no schedule (MEMTOOL_SWAP_POLICY=belady): a name for --swap.
inline constexpr std::string_view kRuleAlone = "belady";

// A comma-separated list of strategy names (the swapper's, or kRuleAlone), each checked.
[[nodiscard]] std::vector<std::string> parse_strategies(std::string_view text);

// The one iteration a swap what-if runs on, and where it came from.
struct SwapSource {
  std::string path;
  std::string input_kind;
  std::size_t iteration_index = 0;
  swapper::ComputeModel compute = swapper::ComputeModel::gpu;
  std::vector<std::string> notes;
  swapper::Iteration iteration;
  std::optional<swapper::Link> link;  // a problem file's
  std::uint64_t budget_bytes = 0;     // a problem file's (0: none)
  swapper::HostCosts host;            // a problem file's (none: none)
};

// The steady iteration of a trace or snapshot. Throws std::invalid_argument when it has none.
[[nodiscard]] SwapSource swap_source(const LoadedModel& loaded, const swapper::TraceInputOptions& options);
// A problem file's text (memtool/swapper/problem.hpp: swapper::looks_like_problem) as the
// process writes it, read from `path`. Throws std::invalid_argument naming the line.
[[nodiscard]] SwapSource swap_problem_source(std::string_view text, const std::string& path);

struct SimulateSwapOptions {
  std::vector<BudgetSpec> budgets;                                // at least one
  swapper::Link link;                                             // 55 GB/s and 5 us each way by default
  std::vector<std::string> strategies;                            // empty: every strategy
  double max_slowdown = std::numeric_limits<double>::infinity();  // ours in stick-to-limit
  swapper::TraceInputOptions input;
  std::uint32_t max_simulations = 4000;  // ours' work limit
  // --pool: re-plan the pool for every schedule (swapper/swap_pool.hpp), free and same-address.
  bool pool = false;
  double pool_time_limit_seconds = 1.0;  // the planner's, per packing
  // What the process's trial compares: the stick-to-limit schedules simulated as memtool's
  // executor runs them (planned waits not run, the budget held with its rule), the rule alone
  // ("belady"), and ours' runners-up.
  bool as_executor = false;
  // The executor's host costs, in the stick-to-limit rows simulated as it runs them and the
  // rule alone's (swapper/simulate.hpp: HostCosts).
  swapper::HostCosts host;
  // Progress while planning a long iteration (at least progress_min_ops ops): a line as each
  // plan starts and ends, and ours' simulations about once a second in between. Null: none.
  std::FILE* progress = stderr;
  std::size_t progress_min_ops = 10'000;
};

// One of ours' runners-up (swapper::PlanResult::alternatives), as its simulation predicts it.
struct RunnerUp {
  std::string construction;
  std::size_t swaps = 0;
  std::uint64_t peak_bytes = 0;
  double stall_ns = 0;
  double slowdown = 0;
  std::uint64_t rule_bytes_out = 0;  // as the executor runs it: its rule's copies out
  std::uint64_t rule_swaps = 0;
};

struct SwapRow {
  std::string strategy;
  swapper::ScheduleMode mode = swapper::ScheduleMode::no_overhead;
  std::uint64_t budget_bytes = 0;
  std::uint64_t peak_bytes = 0;
  bool budget_met = false;
  std::uint64_t bytes_out = 0;
  std::uint64_t bytes_in = 0;
  double stall_ns = 0;
  double slowdown = 0;
  double d2h_busy_ns = 0;
  double h2d_busy_ns = 0;
  std::size_t swaps = 0;
  std::string construction;
  // With SimulateSwapOptions::pool: the pool that holds the schedule's residencies (512-byte
  // aligned), when a buffer may come back elsewhere and when it must come back to its address,
  // and the most footprint bytes resident at once (no pool is smaller).
  std::uint64_t pool_bytes = 0;
  std::uint64_t pool_bytes_same_address = 0;
  std::uint64_t pool_lower_bound_bytes = 0;
  std::vector<RunnerUp> runners_up;  // ours, with SimulateSwapOptions::as_executor
  // Held simulations: the executor's rule's copy-outs an iteration, beside the schedule's.
  std::uint64_t rule_swaps = 0;
  std::uint64_t rule_bytes_out = 0;
  // The simulated iteration's time (base + stall) and the copies issued in it (both ways, the
  // schedule's and the rule's).
  double time_ns = 0;
  std::uint64_t copies = 0;
  // Copy-outs called off in it by ops reaching every buffer (the process's swap_leaves_called_off).
  std::uint64_t leaves_called_off = 0;
  // The planner's own predicted peak (what the process logs as its plan's "predicted peak"),
  // before the schedule is simulated again as the executor runs it (rule alone: the held peak).
  std::uint64_t planned_peak_bytes = 0;
};

struct SwapReport {
  std::string path;
  std::string input_kind;
  std::size_t iteration_index = 0;
  std::size_t ops = 0;
  std::size_t buffers = 0;
  std::uint64_t persistent_bytes = 0;
  double base_time_ns = 0;
  std::uint64_t plain_peak_bytes = 0;
  swapper::Bound bound;
  swapper::ComputeModel compute = swapper::ComputeModel::bytes;
  swapper::Link link;
  std::vector<std::string> notes;
  std::vector<BudgetSpec> budgets;
  bool pool = false;                        // rows carry pool sizes
  bool as_executor = false;                 // SimulateSwapOptions::as_executor
  swapper::HostCosts host;                  // SimulateSwapOptions::host
  std::vector<std::uint64_t> budget_bytes;  // resolved, per budget
  std::vector<SwapRow> rows;                // per budget, per strategy and mode
};

// Throws std::invalid_argument when the iteration is not usable.
[[nodiscard]] SwapReport simulate_swap(const SwapSource& source, const SimulateSwapOptions& options);
[[nodiscard]] std::string swap_report_text(const SwapReport& report);
[[nodiscard]] nlohmann::json swap_report_json(const SwapReport& report);
[[nodiscard]] std::string_view to_string(swapper::ScheduleMode mode);

}  // namespace memtool::cli
