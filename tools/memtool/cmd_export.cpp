// `memtool export --format memory-viz|perfetto|chrome-json|html -o FILE <trace | snapshot>`:
// the run in the tools people already use (trace/export does the writing). For Perfetto and
// HTML the first steady iteration of the window (or --plan-iteration) is planned with the
// default algorithm and simulated against the baselines, so both show the plan beside what
// today's allocators would reserve. A memory-viz export of the whole run streams from the reader
// without loading a model (the big-trace case). The file is written under FILE.partial and
// renamed when complete, so a failed export never leaves a truncated file behind.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/iteration_range.hpp"
#include "detail/load_model.hpp"
#include "detail/rank_export.hpp"
#include "detail/number_checks.hpp"
#include "detail/symbolizer.hpp"
#include "detail/text_format.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/engine/baselines.hpp"
#include "memtool/trace/export.hpp"
#include "memtool/trace/input.hpp"
#include "memtool/trace/lifetimes.hpp"

namespace memtool::cli {
namespace {

namespace mt = memtool::trace;
namespace mp = memtool::planner;

struct ExportArgs {
  std::string input;
  std::vector<std::string> inputs;  // several (a job's ranks) or a %r pattern: detail/rank_export.hpp
  std::string format;
  std::string output;
  std::string iterations;
  std::optional<std::size_t> device;
  std::optional<std::size_t> plan_iteration;
  bool ignore_marks = false;
  bool no_plan = false;
  double time_limit = 1.0;
  int pickle_protocol = 4;
  std::size_t rows = 20;
};

// The iteration to plan: the one asked for, else the first steady one in the window, else the
// window's first; nullopt when there is none.
std::optional<std::size_t> iteration_to_plan(const mt::Iterations& its, const IterationRange& range,
                                             const std::optional<std::size_t>& asked) {
  if (its.spans.empty()) return std::nullopt;
  if (asked) {
    if (*asked >= its.spans.size())
      throw std::invalid_argument(
          fmt::format("--plan-iteration {}: the input has iterations 0 to {}", *asked, its.spans.size() - 1));
    return asked;
  }
  const std::size_t first = std::min(range.first.value_or(0), its.spans.size() - 1);
  const std::size_t last = std::min(range.last.value_or(its.spans.size() - 1), its.spans.size() - 1);
  for (std::size_t k = first; k <= last; ++k) {
    if (!its.spans[k].warm_up && its.spans[k].complete) return k;
  }
  return first;
}

std::optional<mt::PoolPlanView> make_plan(const LoadedModel& loaded, std::size_t index, double time_limit) {
  mt::PoolPlanView view;
  view.iteration = index;
  mt::ProblemOptions options;
  options.time = mt::TimeAxis::events;  // times line up with the trace's events
  view.problem = mt::to_problem(loaded.model, loaded.iterations, index, 512, options);
  if (view.problem.buffers.empty()) return std::nullopt;
  const mp::Algorithm* algorithm = mp::find_algorithm(mp::default_algorithm());
  mp::PlanOptions plan_options;
  plan_options.time_limit_seconds = time_limit;
  mp::Placement placement = algorithm->plan(view.problem, plan_options);
  view.algorithm = std::string(algorithm->name());
  view.offsets = std::move(placement.offsets);
  view.pool_bytes = placement.pool_size;
  view.lower_bound_bytes = mp::lower_bound(view.problem);
  for (const auto& b : memtool::engine::simulate_baselines(view.problem))
    view.baselines.push_back({b.name, b.peak_reserved_bytes});
  return view;
}

// Frames as the viewers show them: symbolic frames as they are, raw IPs symbolised from the
// objects the trace names.
mt::FrameResolver symbolising_resolver(const mt::TraceModel& model, Symbolizer& symbolizer) {
  return [&model, &symbolizer](const mt::StackFrame& frame) {
    mt::ExportFrame out;
    out.filename = std::string(model.string(frame.file));
    out.line = frame.line;
    out.name = std::string(model.string(frame.function));
    if (out.name.empty() && out.filename.empty()) {
      out.name = symbolizer.describe(frame.ip, model.modules(), [&](mt::StringId id) { return model.string(id); });
    }
    return out;
  };
}

// Writes under OUTPUT.partial with `write`, then renames: a failed export leaves no file behind.
template <class Write>
mt::ExportStats write_file(const std::string& output, const Write& write) {
  const std::string partial = output + ".partial";
  try {
    mt::FileSink sink(partial);
    mt::ExportStats stats = write(sink);
    sink.close();
    std::filesystem::rename(partial, output);
    return stats;
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
}

// "memtool: writing FILE: 40%" at each tenth, for inputs of 64 MiB or windows of a million events.
std::function<void(std::uint64_t, std::uint64_t)> tenths(const std::string& output) {
  auto shown = std::make_shared<int>(0);
  return [output, shown](std::uint64_t done, std::uint64_t total) {
    const int tenth = total == 0 ? 10 : static_cast<int>(done * 10 / total);
    if (tenth <= *shown) return;
    *shown = tenth;
    fmt::print(stderr, "memtool: writing {}: {}%\n", output, tenth * 10);
  };
}

// memory-viz of a whole run: straight from the reader, without a TraceModel (see MemoryVizStream).
int stream_memory_viz(const ExportArgs& args) {
  Symbolizer symbolizer;
  std::uint64_t unknown_frees = 0;
  const mt::ExportStats stats = write_file(args.output, [&](mt::FileSink& sink) {
    mt::MemoryVizStream stream(sink, args.pickle_protocol, [&symbolizer](const mt::TraceModel& definitions) {
      return symbolising_resolver(definitions, symbolizer);
    });
    mt::LoadOptions load;
    load.snapshot.device = args.device;
    std::error_code ec;
    if (std::filesystem::file_size(args.input, ec) >= (std::uint64_t{64} << 20) && !ec)
      load.trace.progress = tenths(args.output);
    const mt::LoadSummary summary = mt::load_events(args.input, stream, load);
    if (summary.truncated) {
      fmt::print(stderr,
                 "memtool: warning: {}: the trace ends inside a record at byte {}; exported its {} complete records\n",
                 args.input, summary.trace->bytes_read, summary.trace->records);
    }
    unknown_frees = stream.unknown_frees();
    return stream.finish();
  });
  fmt::print(stderr, "memtool: wrote {} (memory-viz, streamed): {} buffers, {}\n", args.output, stats.buffers,
             human_bytes(stats.bytes_written));
  if (stats.overlapped_ends + unknown_frees != 0) {
    fmt::print(stderr,
               "memtool: note: {} buffers were ended by an overlapping allocation, {} frees matched no live buffer\n",
               stats.overlapped_ends, unknown_frees);
  }
  return 0;
}

int run_export(const ExportArgs& args) {
  const auto format = mt::parse_export_format(args.format);
  if (!format) throw std::invalid_argument(fmt::format("unknown format '{}'", args.format));
  const IterationRange range = parse_iteration_range(args.iterations);
  if (*format == mt::ExportFormat::memory_viz && !range.first && !range.last) return stream_memory_viz(args);
  LoadModelOptions load_options;
  load_options.device = args.device;
  load_options.use_marks = !args.ignore_marks;
  const LoadedModel loaded = load_model(args.input, load_options);

  mt::ExportSource source{loaded.model, loaded.iterations, args.input};
  mt::ExportOptions options;
  options.first_iteration = range.first;
  options.last_iteration = range.last;
  options.pickle_protocol = args.pickle_protocol;
  options.rows = args.rows;
  const mt::EventWindow window = mt::export_window(source, options);  // checks the range first
  Symbolizer symbolizer;
  options.frames = symbolising_resolver(loaded.model, symbolizer);

  std::optional<mt::PoolPlanView> plan;
  if (!args.no_plan && (*format == mt::ExportFormat::html || *format == mt::ExportFormat::perfetto)) {
    if (const auto index = iteration_to_plan(loaded.iterations, range, args.plan_iteration)) {
      plan = make_plan(loaded, *index, args.time_limit);
    }
    if (plan) options.plan = &*plan;
  }

  if (window.end - window.first >= (std::uint64_t{1} << 20)) options.progress = tenths(args.output);
  const mt::ExportStats stats =
      write_file(args.output, [&](mt::FileSink& sink) { return mt::export_trace(*format, source, options, sink); });
  fmt::print(stderr, "memtool: wrote {} ({}): events {} to {}, {} buffers, {}{}\n", args.output, args.format,
             stats.first_event, stats.end_event, stats.buffers, human_bytes(stats.bytes_written),
             plan ? fmt::format("; plan of iteration {}: pool {} (lower bound {})", plan->iteration,
                                human_bytes(plan->pool_bytes), human_bytes(plan->lower_bound_bytes))
                  : "");
  if (stats.overlapped_ends != 0) {
    fmt::print(stderr,
               "memtool: warning: {} buffers overlapped a newer allocation and were ended there (a free missing from "
               "the trace)\n",
               stats.overlapped_ends);
  }
  return 0;
}

// A job's ranks into one file (detail/rank_export.hpp), each rank's plan as for one run.
int run_rank_export(const ExportArgs& args) {
  const auto format = mt::parse_export_format(args.format);
  if (!format) throw std::invalid_argument(fmt::format("unknown format '{}'", args.format));
  if (!args.iterations.empty()) throw std::invalid_argument("--iterations: a job's ranks are exported whole");
  RankExportOptions options;
  options.inputs = args.inputs;
  options.format = *format;
  options.output = args.output;
  options.use_marks = !args.ignore_marks;
  if (!args.no_plan) {
    options.plan = [&args](const LoadedModel& loaded) -> std::optional<mt::PoolPlanView> {
      const auto index = iteration_to_plan(loaded.iterations, IterationRange{}, args.plan_iteration);
      return index ? make_plan(loaded, *index, args.time_limit) : std::nullopt;
    };
  }
  export_ranks(options);
  return 0;
}

std::function<int()> setup_export(CLI::App& sub) {
  auto args = std::make_shared<ExportArgs>();
  sub.add_option("input", args->inputs,
                 "memtool trace, PyTorch snapshot (.pickle) or snapshot JSON; a job's ranks (perfetto, html): several "
                 "traces or one pattern with %r, into one file")
      ->required();
  sub.add_option("--format", args->format,
                 "memory-viz (PyTorch memory_viz pickle), perfetto (protobuf trace), chrome-json (older viewers), html")
      ->required()
      ->check(CLI::IsMember({"memory-viz", "perfetto", "chrome-json", "html"}));
  sub.add_option("-o,--output", args->output, "file to write")->required();
  sub.add_option("--iterations", args->iterations, "export only iterations A:B (inclusive), A:, :B or N")
      ->check(iteration_range_problem);
  sub.add_option("--device", args->device, "snapshots: which device's trace (default: the busiest)");
  sub.add_flag("--ignore-marks", args->ignore_marks, "detect iterations even when the trace has marks");
  sub.add_option("--plan-iteration", args->plan_iteration,
                 "perfetto, html: the iteration to plan (default: first steady one)");
  sub.add_flag("--no-plan", args->no_plan, "perfetto, html: leave the pool plan out");
  sub.add_option("--time-limit", args->time_limit, "search budget of the plan, seconds (default 1)")
      ->check(memtool::cli::finite_number())
      ->check(CLI::Range(0.0, 3600.0));
  sub.add_option("--pickle-protocol", args->pickle_protocol, "memory-viz: pickle protocol 2, 3 or 4 (default 4)")
      ->check(CLI::Range(2, 4));
  sub.add_option("--rows", args->rows, "html: rows of the largest-buffers table (default 20)")
      ->check(CLI::Range(1, 100000));
  return [args] {
    try {
      if (is_rank_export(args->inputs)) return run_rank_export(*args);
      args->input = args->inputs.front();
      return run_export(*args);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "memtool: error: {}\n", e.what());
      return 2;
    }
  };
}

MEMTOOL_COMMAND("export", setup_export);

}  // namespace
}  // namespace memtool::cli
