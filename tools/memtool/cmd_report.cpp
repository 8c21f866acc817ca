// `memtool report`: what a recorded run did with GPU memory — iterations, peaks, persistent
// and leaked bytes, a live-bytes chart and the buffers that matter.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/report_data.hpp"

namespace memtool::cli {
namespace {

struct ReportArgs {
  std::string input;
  std::string format = "text";
  std::string iterations;  // "A:B", "A:", ":B" or "N"
  std::size_t rows = 10;
  std::optional<std::size_t> device;
  bool ignore_marks = false;
};

// Parses "A:B" / "A:" / ":B" / "N" into an inclusive range of iteration indices.
void parse_iteration_range(const std::string& text, ReportOptions& options) {
  if (text.empty()) return;
  auto number = [&](const std::string& part) -> std::size_t {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || part.empty() || part[0] == '-')
      throw CLI::ValidationError(fmt::format("'{}' is not an iteration range (A:B, A:, :B or N)", text));
    return static_cast<std::size_t>(value);
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    options.first_iteration = options.last_iteration = number(text);
    return;
  }
  const std::string a = text.substr(0, colon);
  const std::string b = text.substr(colon + 1);
  if (!a.empty()) options.first_iteration = number(a);
  if (!b.empty()) options.last_iteration = number(b);
  if (options.first_iteration && options.last_iteration && *options.last_iteration < *options.first_iteration)
    throw CLI::ValidationError(fmt::format("'{}': the range ends before it starts", text));
}

std::function<int()> setup_report(CLI::App& sub) {
  auto args = std::make_shared<ReportArgs>();
  sub.add_option("input", args->input, "memtool trace, PyTorch snapshot (.pickle) or snapshot JSON")
      ->required();
  sub.add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_option("--iterations", args->iterations,
                 "iterations to show: A:B (inclusive), A:, :B or N (default: all)")
      ->check([](const std::string& text) {
        ReportOptions probe;
        try {
          parse_iteration_range(text, probe);
        } catch (const CLI::ValidationError& e) {
          return std::string(e.what());
        }
        return std::string{};
      });
  sub.add_option("--rows", args->rows, "rows in each table")->check(CLI::Range(1, 100000))->capture_default_str();
  sub.add_option("--device", args->device, "snapshots: which device's trace (default: the busiest)");
  sub.add_flag("--ignore-marks", args->ignore_marks, "detect iterations even when the trace has marks");
  return [args] {
    ReportOptions options;
    options.rows = args->rows;
    parse_iteration_range(args->iterations, options);
    LoadModelOptions load_options;
    load_options.device = args->device;
    load_options.use_marks = !args->ignore_marks;
    const LoadedModel loaded = load_model(args->input, load_options);
    const ReportData data = build_report(loaded, options);
    const std::string text = args->format == "json" ? render_report_json(data) : render_report_text(data);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  };
}

MEMTOOL_COMMAND("report", "Summarise a trace or PyTorch snapshot: iterations, peaks, lifetimes", setup_report);

}  // namespace
}  // namespace memtool::cli
