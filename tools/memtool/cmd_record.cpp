// `memtool record [-o FILE] -- command args…`: runs the command with libmemtool.so preloaded
// (after any LD_PRELOAD it already has), passes its exit status through, then summarises the
// trace and says what to run next.
#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/preload_run.hpp"
#include "memtool/interpose/options.hpp"

namespace {

namespace fs = std::filesystem;

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

void summarise(const std::string& path) {
  memtool::cli::LoadModelOptions options;
  options.progress = false;
  const memtool::cli::LoadedModel loaded = memtool::cli::load_model(path, options);
  const auto& model = loaded.model;
  const auto& stats = model.stats();
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  for (const auto& event : model.events()) {
    if (event.kind == memtool::trace::EventKind::alloc) {
      live += event.bytes;
      peak = std::max(peak, live);
    } else if (event.kind == memtool::trace::EventKind::free) {
      live -= std::min(live, event.bytes);
    }
  }
  fmt::print(stderr, "memtool: recorded {} events: {} allocations, {} frees, {} launches; peak {} live\n",
             model.event_count(), stats.allocs, stats.frees, stats.launches, human_bytes(peak));
  const auto& iterations = loaded.iterations;
  if (iterations.found()) {
    fmt::print(stderr, "memtool: iterations: {} events each ({} allocations), steady from event {} ({})\n",
               iterations.period_events, iterations.period_allocs, iterations.steady_start,
               iterations.source == memtool::trace::IterationSource::marks ? "explicit marks" : "detected");
  } else {
    fmt::print(stderr, "memtool: no repeating iteration found\n");
  }
}

std::function<int()> setup_record(CLI::App& sub) {
  struct Args {
    std::string output = "memtool.%p.trace";
    std::vector<std::string> command;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("-o,--output", args->output,
                 "Trace file (%p: the command's pid, %r: RANK or LOCAL_RANK)")
      ->capture_default_str();
  sub.add_option("command", args->command, "The program to record and its arguments (after --)")->required();
  sub.footer("Example: memtool record -o train.trace -- python train.py --epochs 1");
  return [args]() -> int {
    const std::string library = memtool::cli::find_preload_library();
    if (library.empty()) {
      fmt::print(stderr, "memtool: error: libmemtool.so not found next to memtool; set MEMTOOL_LIBRARY\n");
      return 1;
    }
    pid_t child = 0;
    const int status = memtool::cli::run_preloaded(args->command, library, {{"MEMTOOL_TRACE", args->output}}, child);
    const std::string trace = memtool::interpose::expand_path_template(
        args->output, static_cast<long>(child), [](const char* name) -> const char* { return std::getenv(name); });
    std::error_code error;
    if (child > 0 && fs::exists(trace, error)) {
      try {
        summarise(trace);
      } catch (const std::exception& e) {
        fmt::print(stderr, "memtool: the trace could not be summarised: {}\n", e.what());
      }
      fmt::print(stderr, "memtool: trace written to {}\nmemtool: next: memtool report {}\n", trace, trace);
    } else if (child > 0) {
      fmt::print(stderr, "memtool: no trace was written to {} (did the program use the CUDA driver?)\n", trace);
    }
    return status;
  };
}

MEMTOOL_COMMAND("record", "Run a program with libmemtool.so preloaded and record its GPU memory trace", setup_record);

}  // namespace
