// `memtool simulate TRACE`: replay a recorded trace or a PyTorch snapshot, event by event,
// against each allocator — the driver's, CnMem-like, PyTorch's caching allocator and memtool's
// planned pool — on a simulated device (of --capacity bytes), and say what each held at its
// worst, how that compares with the live bytes, and which allocation it would have failed first.
// With --budget (or --budgets), the swap what-if instead: one steady iteration under every swap
// strategy at each budget, with the zero-stall bound (detail/simulate_swap.hpp), and with --pool
// the pool re-planned for each schedule. A swap problem a process wrote (MEMTOOL_SWAP_DUMP) is
// always the swap what-if, at the process's budget and link unless others are given.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/number_checks.hpp"
#include "detail/simulate_args.hpp"
#include "detail/simulate_output.hpp"
#include "detail/simulate_replay.hpp"
#include "detail/simulate_swap.hpp"
#include "memtool/engine/baselines.hpp"
#include "memtool/swapper/problem.hpp"
#include "memtool/trace/input.hpp"
#include "memtool/trace/mapped_file.hpp"

namespace memtool::cli {
namespace {

// The most host time per op, copy or synchronisation --op-cost, --copy-cost and --sync-cost take (a day, in microseconds):
// sums over an iteration stay finite.
constexpr double kMostHostCostUs = 86'400e6;

struct SimulateArgs {
  std::string input;
  std::vector<std::string> resources;
  std::string capacity;
  std::string format = "text";
  std::optional<std::size_t> device;
  // Swap mode.
  std::string budget;
  std::string budgets;
  std::string link;  // default: a problem file's, else 55GB/s
  std::string swap;
  std::string compute = "auto";
  double max_slowdown = -1;
  bool as_executor = false;
  double op_cost_us = -1;    // -1: a problem file's, else none
  double copy_cost_us = -1;  // -1: a problem file's, else none
  double sync_cost_us = -1;  // -1: a problem file's, else none
  bool host_times = false;   // a problem file's host times, when it has them
  bool pool = false;
  double pool_time_limit = 1.0;
};

LoadedModel load(const SimulateArgs& args, const trace::MappedFile& input) {
  LoadModelOptions load_options;
  load_options.device = args.device;
  return load_model(input, args.input, load_options);
}

// A trace, a snapshot or a swap problem; anything else is refused after its head (a stream too).
trace::MappedFile::HeadCheck input_check(const std::string& path) {
  return [known = trace::require_known_input(path)](std::string_view head) {
    if (!swapper::looks_like_problem(head)) known(head);
  };
}

// The option values, checked before the input is read: a bad one is exit status 2.
template <class Parse>
bool parsed(Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "memtool: error: {}\n", e.what());
    return false;
  }
}

// A problem file from a process (MEMTOOL_SWAP_DUMP), or the steady iteration of a trace.
std::optional<SwapSource> swap_source_of(const SimulateArgs& args, const trace::MappedFile& input,
                                         const SimulateSwapOptions& options) {
  try {
    if (swapper::looks_like_problem(input.text())) return swap_problem_source(input.text(), args.input);
    return swap_source(load(args, input), options.input);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "memtool: error: {}: {}\n", args.input, e.what());
    return std::nullopt;
  }
}

// `read`: the input, when the caller has read it already (else it is read here, once the
// options are checked).
int run_swap_simulation(const SimulateArgs& args, const trace::MappedFile* read) {
  SimulateSwapOptions options;
  const bool ok = parsed([&] {
    if (!args.budget.empty()) options.budgets.push_back(parse_budget(args.budget));
    if (!args.budgets.empty()) {
      for (BudgetSpec& b : parse_budgets(args.budgets)) options.budgets.push_back(std::move(b));
    }
    if (!args.link.empty()) {
      const double rate = parse_rate(args.link);
      options.link.d2h_bytes_per_ns = rate;
      options.link.h2d_bytes_per_ns = rate;
    }
    if (!args.swap.empty()) options.strategies = parse_strategies(args.swap);
    options.input.compute = parse_compute(args.compute);
    if (args.max_slowdown >= 0) options.max_slowdown = args.max_slowdown;
    if (!(args.pool_time_limit > 0)) throw std::invalid_argument("--pool-time-limit: must be above 0 seconds");
    options.pool = args.pool;
    options.pool_time_limit_seconds = args.pool_time_limit;
    options.as_executor = args.as_executor;
    if (args.op_cost_us > kMostHostCostUs || args.copy_cost_us > kMostHostCostUs || args.sync_cost_us > kMostHostCostUs)
      throw std::invalid_argument(fmt::format("--op-cost, --copy-cost, --sync-cost: at most {} us", kMostHostCostUs));
  });
  if (!ok) return 2;
  std::optional<trace::MappedFile> own;
  // Read once, as it may be a pipe.
  const trace::MappedFile& input = read != nullptr ? *read : own.emplace(args.input, input_check(args.input));
  std::optional<SwapSource> source = swap_source_of(args, input, options);
  if (!source) return 2;
  if (!args.host_times) source->iteration.host_timed = false;
  // A process's problem: its budget and link unless others are given, as its executor runs them.
  if (source->budget_bytes != 0 && options.budgets.empty()) {
    options.budgets.push_back(
        BudgetSpec{source->budget_bytes, 0, fmt::format("{} B (the process's)", source->budget_bytes)});
  }
  if (source->link && args.link.empty()) options.link = *source->link;
  if (source->link) options.as_executor = true;
  options.host = source->host;
  if (args.op_cost_us >= 0) options.host.per_op_ns = args.op_cost_us * 1e3;
  if (args.copy_cost_us >= 0) options.host.per_copy_ns = args.copy_cost_us * 1e3;
  if (args.sync_cost_us >= 0) options.host.per_sync_ns = args.sync_cost_us * 1e3;
  SwapReport report;
  try {
    report = simulate_swap(*source, options);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "memtool: error: {}: {}\n", args.input, e.what());
    return 2;
  }
  const std::string text = args.format == "json" ? swap_report_json(report).dump(1) + "\n" : swap_report_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int run_simulate(const SimulateArgs& args) {
  if (!args.budget.empty() || !args.budgets.empty()) return run_swap_simulation(args, nullptr);
  SimulationOptions options;
  const bool ok = parsed([&] {
    options.resources = resolve_resources(args.resources);
    if (!args.capacity.empty()) options.capacity = parse_capacity(args.capacity);
  });
  if (!ok) return 2;
  const trace::MappedFile input(args.input, input_check(args.input));  // read once: it may be a pipe
  if (swapper::looks_like_problem(input.text())) return run_swap_simulation(args, &input);
  const LoadedModel loaded = load(args, input);
  for (auto it = loaded.iterations.spans.rbegin(); it != loaded.iterations.spans.rend(); ++it) {
    if (it->complete) {
      options.steady_iteration = std::pair(it->first_event, it->end_event);
      break;
    }
  }
  SimulationReport report;
  report.input = args.input;
  report.description = describe_input(loaded.summary);
  report.events = loaded.model.event_count();
  report.capacity = options.capacity;
  report.steady_iteration = options.steady_iteration;
  report.outcomes = simulate_trace(loaded.model, options);
  const std::string text = args.format == "json" ? render_simulation_json(report) : render_simulation_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

std::function<int()> setup_simulate(CLI::App& sub) {
  auto args = std::make_shared<SimulateArgs>();
  sub.add_option("input", args->input,
                 "memtool trace, PyTorch snapshot (.pickle) or snapshot JSON; or a swap problem a process wrote "
                 "(MEMTOOL_SWAP_DUMP): the swap what-if at its budget and link")
      ->required();
  std::string names;
  for (const auto& r : engine::simulated_resources()) names += fmt::format("\n  {}: {}", r.name, r.description);
  sub.add_option("--resource", args->resources, "resources to replay against, comma-separated (default: all):" + names)
      ->delimiter(',');
  sub.add_option("--capacity", args->capacity, "device memory, a size (1.5G, 512MiB, 55GB; default and 0: unlimited)");
  sub.add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_option("--device", args->device, "snapshots: which device's trace (default: the busiest)");
  sub.add_option(
      "--budget", args->budget,
      "swap what-if: the device budget, a size (1.5G, 512MiB) or a share of the iteration's plain peak (80%)");
  sub.add_option("--budgets", args->budgets,
                 "swap what-if at several budgets, comma-separated (90%,80%,...): the curve");
  sub.add_option(
      "--link", args->link,
      "swap: the link's bandwidth per direction, a size per second, e.g. 55GB/s or 51G/s (default: a problem file's "
      "link, else 55GB/s)");
  sub.add_option("--swap", args->swap,
                 "swap strategies, comma-separated (default: all): ours, paper-doa, paper-aoa, paper-wdoa, paper-vote, "
                 "save-on-cpu");
  sub.add_option("--compute", args->compute, "swap: kernel times from auto|gpu|host|bytes (docs/swapper.md)")
      ->capture_default_str();
  sub.add_option("--max-slowdown", args->max_slowdown, "swap: the slowdown ours may spend to meet a budget (e.g. 0.05)")
      ->check(memtool::cli::non_negative_number());
  sub.add_flag("--as-executor", args->as_executor,
               "swap: simulate stick-to-limit schedules as memtool's executor runs them (the budget held with its "
               "rule), with the rule alone (belady) and ours' runners-up: what the process's trial compares (always "
               "on for a problem file)");
  sub.add_option("--op-cost", args->op_cost_us,
                 "swap, as the executor runs it: the executor's host time per op, microseconds (default: a problem "
                 "file's, else 0; docs/swapper.md)")
      ->check(memtool::cli::non_negative_number());
  sub.add_option("--copy-cost", args->copy_cost_us,
                 "swap, as the executor runs it: the executor's host time per copy it issues, microseconds (default: a "
                 "problem file's, else 0)")
      ->check(memtool::cli::non_negative_number());
  sub.add_option("--sync-cost", args->sync_cost_us,
                 "swap: the host's time to come back from a wait for the GPU (after each of the program's "
                 "synchronisations and the executor's waits for room), microseconds (default: a problem file's, "
                 "else 0; docs/swapper.md)")
      ->check(memtool::cli::non_negative_number());
  sub.add_flag("--host-times", args->host_times,
               "swap, a problem file with them: the program's host times and synchronisations per op, the host on "
               "its own timeline ahead of the GPU (docs/swapper.md; default: the host issues each op as the one "
               "before ends)");
  sub.add_flag("--pool", args->pool,
               "swap: re-plan the pool for every schedule (swapped buffers' residencies), with and without the "
               "same-address rule");
  sub.add_option("--pool-time-limit", args->pool_time_limit, "swap: the planner's search budget per pool, seconds")
      ->check(memtool::cli::finite_number())
      ->capture_default_str();
  return [args] { return run_simulate(*args); };
}

MEMTOOL_COMMAND("simulate", setup_simulate);

}  // namespace
}  // namespace memtool::cli
