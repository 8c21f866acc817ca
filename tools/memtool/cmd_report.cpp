// `memtool report`: what a recorded run did with GPU memory — iterations, peaks, persistent
// and leaked bytes, a live-bytes chart and the buffers that matter.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/iteration_range.hpp"
#include "detail/load_model.hpp"
#include "detail/rank_report.hpp"
#include "detail/report_data.hpp"
#include "detail/size_arg.hpp"

namespace memtool::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> inputs;  // one file; several (a job's ranks) or a %r pattern: rank_report.hpp
  std::string format = "text";
  std::string iterations;  // "A:B", "A:", ":B" or "N"
  std::size_t rows = 10;
  std::optional<std::size_t> device;
  bool ignore_marks = false;
  std::string summary_pattern;  // ranks: --summary
  std::string capacity;         // ranks: --capacity
};

// A job's ranks side by side (detail/rank_report.hpp).
int report_ranks(const ReportArgs& args) {
  RankReportOptions options;
  options.inputs = args.inputs;
  options.summary_pattern = args.summary_pattern;
  options.use_marks = !args.ignore_marks;
  try {
    if (!args.capacity.empty()) options.capacity_bytes = parse_size_arg("--capacity", args.capacity).bytes;
    const RankReport report = build_rank_report(options);
    const std::string text = args.format == "json" ? render_rank_report_json(report) : render_rank_report_text(report);
    std::fwrite(text.data(), 1, text.size(), stdout);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "memtool: error: {}\n", e.what());
    return 2;
  }
  return 0;
}

std::function<int()> setup_report(CLI::App& sub) {
  auto args = std::make_shared<ReportArgs>();
  sub.add_option("input", args->inputs,
                 "memtool trace, PyTorch snapshot (.pickle) or snapshot JSON; a job's ranks: several traces or "
                 "summaries, or one pattern with %r (train.rank%r.trace): one row per rank")
      ->required();
  sub.add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_option("--iterations", args->iterations, "iterations to show: A:B (inclusive), A:, :B or N (default: all)")
      ->check(iteration_range_problem);
  sub.add_option("--rows", args->rows, "rows in each table")->check(CLI::Range(1, 100000))->capture_default_str();
  sub.add_option("--device", args->device, "snapshots: which device's trace (default: the busiest)");
  sub.add_flag("--ignore-marks", args->ignore_marks, "detect iterations even when the trace has marks");
  sub.add_option("--summary", args->summary_pattern, "ranks: the ranks' MEMTOOL_SUMMARY files, a pattern with %r");
  sub.add_option("--capacity", args->capacity, "ranks: each rank's device memory (a size), for the headroom");
  return [args] {
    if (is_rank_report(args->inputs, args->summary_pattern)) return report_ranks(*args);
    ReportOptions options;
    options.rows = args->rows;
    const IterationRange range = parse_iteration_range(args->iterations);
    options.first_iteration = range.first;
    options.last_iteration = range.last;
    LoadModelOptions load_options;
    load_options.device = args->device;
    load_options.use_marks = !args->ignore_marks;
    const LoadedModel loaded = load_model(args->inputs.front(), load_options);
    if (range.first && *range.first >= loaded.iterations.spans.size()) {
      fmt::print(stderr, "memtool: error: --iterations {}: the input has {}\n", args->iterations,
                 loaded.iterations.spans.empty()
                     ? std::string("no iterations")
                     : fmt::format("iterations 0 to {}", loaded.iterations.spans.size() - 1));
      return 2;
    }
    const ReportData data = build_report(loaded, options);
    if (data.caching_allocator_warning) fmt::print(stderr, "memtool: warning: {}\n", *data.caching_allocator_warning);
    const std::string text = args->format == "json" ? render_report_json(data) : render_report_text(data);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  };
}

MEMTOOL_COMMAND("report", setup_report);

}  // namespace
}  // namespace memtool::cli
