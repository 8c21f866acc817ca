// `memtool plan <trace | snapshot | problem.csv>`: plan a pool for one iteration (or a CSV
// problem) with every planner algorithm, and set the result against the lower bound and against
// what today's allocators would reserve for the same buffers.
//
// Traces and snapshots: the iteration is chosen with --iteration (default: the first steady
// one) and becomes a problem in the cyclic (wrap) view, buffers aligned to --alignment;
// persistent buffers (weights, optimizer state) stay outside the pool unless
// --include-persistent. CSV problems are taken as they are.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/number_checks.hpp"
#include "detail/size_arg.hpp"
#include "detail/text_format.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/engine/baselines.hpp"
#include "memtool/trace/input.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/problem_csv.hpp"

namespace {

namespace mp = memtool::planner;
namespace mt = memtool::trace;

struct PlanArgs {
  std::string input;
  std::string algo;  // empty: all
  double time_limit = 1.0;
  std::uint64_t capacity = 0;  // 0: none
  std::optional<std::size_t> iteration;
  std::uint64_t alignment = 512;
  bool include_persistent = false;
  std::string format = "text";
  std::string output;
};

struct AlgorithmRun {
  const mp::Algorithm* algorithm = nullptr;
  mp::Placement placement;
  double seconds = 0;
  bool valid = false;
  std::string problem_message;
};

struct LoadedProblem {
  mt::Problem problem;
  std::string source;  // what the input was, for the header
  std::optional<std::size_t> iteration;
};

LoadedProblem load_problem(const PlanArgs& args) {
  LoadedProblem loaded;
  const mt::MappedFile input(args.input, mt::require_known_input(args.input));  // once: it may be a pipe
  const auto kind = mt::sniff_input(input);
  if (kind == mt::InputKind::problem_csv) {
    loaded.problem = mt::parse_problem_csv(input.text(), args.input);
    loaded.source = "planner problem (CSV)";
    if (args.iteration) throw std::invalid_argument("--iteration applies to traces and snapshots, not CSV problems");
    return loaded;
  }
  auto model = memtool::cli::load_model(input, args.input, {});
  const auto& its = model.iterations;
  if (!its.found() || its.spans.empty()) {
    throw mt::InputError(args.input, 0, "no training iteration found in this input: nothing to plan");
  }
  std::size_t index = its.first_steady();
  if (index >= its.spans.size()) index = its.spans.size() - 1;
  if (args.iteration) {
    if (*args.iteration >= its.spans.size()) {
      throw std::invalid_argument(
          fmt::format("--iteration {}: the input has iterations 0 to {}", *args.iteration, its.spans.size() - 1));
    }
    index = *args.iteration;
  }
  mt::ProblemOptions options;
  options.include_persistent = args.include_persistent;
  try {
    loaded.problem = mt::to_problem(model.model, its, index, args.alignment, options);
  } catch (const mt::EventRejected& rejected) {  // a problem beyond the planner's limits: say where
    throw mt::InputError(args.input, mt::InputError::Event{rejected.event()}, rejected.what());
  }
  loaded.source = memtool::cli::describe_input(model.summary);
  loaded.iteration = index;
  return loaded;
}

// Bytes saved against a baseline, in percent of the baseline (negative: the plan needs more).
std::string percent_saving(std::uint64_t pool, std::uint64_t baseline) {
  if (baseline == 0) return "-";
  const double saving =
      100.0 * (static_cast<double>(baseline) - static_cast<double>(pool)) / static_cast<double>(baseline);
  return fmt::format("{:.1f}%", saving);
}

void write_placement(const std::string& path, const mt::Problem& problem, const mp::Placement& placement) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
  out << "id,offset\n";
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    out << problem.buffers[i].id << ',' << placement.offsets[i] << '\n';
  }
  if (!out) throw std::runtime_error(fmt::format("error writing {}", path));
}

int run_plan(const PlanArgs& args) {
  const LoadedProblem loaded = load_problem(args);
  const mt::Problem& problem = loaded.problem;
  const std::uint64_t lb = mp::lower_bound(problem);
  const auto baselines = memtool::engine::simulate_baselines(problem);

  std::vector<const mp::Algorithm*> chosen;
  if (args.algo.empty()) {
    for (const auto* a : mp::algorithms()) chosen.push_back(a);
  } else {
    chosen.push_back(mp::find_algorithm(args.algo));
  }
  mp::PlanOptions options;
  options.time_limit_seconds = args.time_limit;
  options.capacity_bytes = args.capacity;
  std::vector<AlgorithmRun> runs;
  for (const auto* algorithm : chosen) {
    AlgorithmRun run;
    run.algorithm = algorithm;
    const auto start = std::chrono::steady_clock::now();
    run.placement = algorithm->plan(problem, options);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto verdict = mp::validate(problem, run.placement);
    run.valid = verdict.valid;
    run.problem_message = verdict.message;
    runs.push_back(std::move(run));
  }
  // The placement written out: the one asked for, else the default algorithm's.
  const AlgorithmRun* written = &runs.front();
  for (const auto& run : runs) {
    if (run.algorithm->name() == (args.algo.empty() ? mp::default_algorithm() : args.algo)) written = &run;
  }
  if (!args.output.empty()) write_placement(args.output, problem, written->placement);

  if (args.format == "json") {
    nlohmann::json j;
    j["input"] = args.input;
    j["source"] = loaded.source;
    if (loaded.iteration) j["iteration"] = *loaded.iteration;
    j["buffers"] = problem.buffers.size();
    j["lower_bound_bytes"] = lb;
    j["time_limit_seconds"] = args.time_limit;
    if (args.capacity != 0) j["capacity_bytes"] = args.capacity;
    j["algorithms"] = nlohmann::json::array();
    for (const auto& run : runs) {
      nlohmann::json a;
      a["name"] = run.algorithm->name();
      a["pool_bytes"] = run.placement.pool_size;
      a["ratio_to_lower_bound"] =
          lb == 0 ? 1.0 : static_cast<double>(run.placement.pool_size) / static_cast<double>(lb);
      a["seconds"] = run.seconds;
      a["valid"] = run.valid;
      if (args.capacity != 0) a["within_capacity"] = run.placement.pool_size <= args.capacity;
      if (!run.valid) a["error"] = run.problem_message;
      j["algorithms"].push_back(std::move(a));
    }
    j["baselines"] = nlohmann::json::array();
    for (const auto& b : baselines) j["baselines"].push_back({{"name", b.name}, {"peak_bytes", b.peak_reserved_bytes}});
    if (!args.output.empty())
      j["placement_written"] = {{"file", args.output}, {"algorithm", written->algorithm->name()}};
    fmt::print("{}\n", j.dump(2));
  } else {
    using memtool::cli::human_bytes;
    using memtool::cli::human_bytes_exact;
    fmt::print("memtool plan: {} ({})\n", args.input, loaded.source);
    if (loaded.iteration) fmt::print("  iteration {}\n", *loaded.iteration);
    fmt::print("  buffers: {}\n", problem.buffers.size());
    fmt::print("  lower bound (peak live bytes, aligned): {}\n", human_bytes_exact(lb));
    if (args.capacity != 0) fmt::print("  capacity: {}\n", human_bytes_exact(args.capacity));
    fmt::print("\n");
    memtool::cli::TextTable base({"baseline", "peak reserved", "vs LB"}, {true});
    for (const auto& b : baselines) {
      base.add_row(
          {b.name, human_bytes(b.peak_reserved_bytes),
           lb == 0 ? "-"
                   : fmt::format("{:.4f}x", static_cast<double>(b.peak_reserved_bytes) / static_cast<double>(lb))});
    }
    fmt::print("{}\n", base.render());
    std::vector<std::string> header{"algorithm", "pool", "vs LB"};
    for (const auto& b : baselines) header.push_back("saves vs " + b.name);
    header.push_back("time");
    header.push_back("valid");
    memtool::cli::TextTable table(header, {true});
    for (const auto& run : runs) {
      std::vector<std::string> row{
          std::string(run.algorithm->name()), human_bytes(run.placement.pool_size),
          lb == 0 ? "-"
                  : fmt::format("{:.4f}x", static_cast<double>(run.placement.pool_size) / static_cast<double>(lb))};
      for (const auto& b : baselines) row.push_back(percent_saving(run.placement.pool_size, b.peak_reserved_bytes));
      row.push_back(fmt::format("{:.3f} s", run.seconds));
      row.push_back(run.valid ? "yes" : "NO");
      table.add_row(std::move(row));
    }
    fmt::print("{}", table.render());
    if (!args.output.empty()) fmt::print("\nplacement of {} written to {}\n", written->algorithm->name(), args.output);
  }
  for (const auto& run : runs) {
    if (!run.valid) {
      fmt::print(stderr, "memtool: {} produced an invalid placement: {}\n", run.algorithm->name(), run.problem_message);
      return 1;
    }
  }
  if (args.capacity != 0 && written->placement.pool_size > args.capacity) {
    fmt::print(stderr, "memtool: {} found no plan within the capacity of {} bytes: its smallest pool is {} bytes\n",
               written->algorithm->name(), args.capacity, written->placement.pool_size);
    return 3;
  }
  return 0;
}

std::function<int()> setup_plan(CLI::App& sub) {
  auto args = std::make_shared<PlanArgs>();
  sub.add_option("input", args->input, "memtool trace, PyTorch memory snapshot, or planner CSV (id,lower,upper,size)")
      ->required();
  std::vector<std::string> names;
  for (const auto* a : mp::algorithms()) names.emplace_back(a->name());
  sub.add_option("--algo", args->algo, "run only this algorithm (default: all; best is the default plan)")
      ->check(CLI::IsMember(names));
  sub.add_option("--time-limit", args->time_limit, "search budget of `best`, seconds (default 1)")
      ->check(memtool::cli::finite_number())
      ->check(CLI::Range(0.0, 3600.0));
  auto sizes = std::make_shared<std::pair<std::string, std::string>>();  // --capacity, --alignment as given
  sub.add_option("--capacity", sizes->first,
                 "most bytes the pool may take, a size (1.5G, 512MiB; 0: none): best plans within it first, then "
                 "smaller (exit 3 when none fits)");
  sub.add_option("--iteration", args->iteration, "which iteration of a trace to plan (default: first steady one)")
      ->check(memtool::cli::non_negative_number());
  sub.add_option("--alignment", sizes->second,
                 "alignment of buffers from traces, a power of two up to 1 GiB (default 512)");
  sub.add_flag("--include-persistent", args->include_persistent, "plan persistent buffers (weights) into the pool too");
  sub.add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  sub.add_option("--output", args->output, "write the placement as CSV id,offset");
  return [args, sizes] {
    try {
      using memtool::cli::parse_size_arg;
      if (!sizes->first.empty()) args->capacity = parse_size_arg("--capacity", sizes->first).bytes;
      if (!sizes->second.empty()) {
        const std::uint64_t a =
            parse_size_arg("--alignment", sizes->second, {.share_of = {}, .zero = false, .rate = false}).bytes;
        if ((a & (a - 1)) != 0 || a > (std::uint64_t{1} << 30)) {
          throw std::invalid_argument(
              fmt::format("--alignment '{}': must be a power of two up to 1 GiB", sizes->second));
        }
        args->alignment = a;
      }
      return run_plan(*args);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "memtool: error: {}\n", e.what());
      return 2;
    }
  };
}

MEMTOOL_COMMAND("plan", setup_plan);

}  // namespace
