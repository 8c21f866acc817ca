// `memtool record [-o FILE] -- command args…`: runs the command with libmemtool.so preloaded
// (after any LD_PRELOAD it already has), passes its exit status through — whatever happened to
// the trace — then summarises the trace and says what to run next. A run killed by a signal
// still leaves its trace up to the kill (the library flushes it), and that is summarised too.
#include <sys/types.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "detail/preload_run.hpp"
#include "detail/rank_run.hpp"
#include "detail/text_format.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/interpose/options.hpp"

namespace {

namespace fs = std::filesystem;

void summarise(const std::string& path) {
  memtool::cli::LoadModelOptions options;
  options.progress = false;
  const memtool::cli::LoadedModel loaded = memtool::cli::load_model(path, options);
  const auto& model = loaded.model;
  const auto& stats = model.stats();
  const auto curve = memtool::trace::live_bytes_curve(model);
  const auto peak = memtool::trace::peak_live_bytes(curve, 0, curve.size());
  fmt::print(stderr, "memtool: recorded {} events: {} allocations, {} frees, {} launches; peak {} live\n",
             model.event_count(), stats.allocs, stats.frees, stats.launches, memtool::cli::human_bytes(peak.bytes));
  const auto& iterations = loaded.iterations;
  if (iterations.found()) {
    fmt::print(stderr, "memtool: iterations: {} events each ({} allocations), steady from event {} ({})\n",
               iterations.period_events, iterations.period_allocs, iterations.steady_start,
               iterations.source == memtool::trace::IterationSource::marks ? "explicit marks" : "detected");
  } else {
    fmt::print(stderr, "memtool: no repeating iteration found\n");
  }
}

// The program the command runs: command[0] itself when it names a path, else the first match on
// PATH (as execvp finds it).
fs::path program_of(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return name;
}

// What the trace file would replace that the run needs: the program, or a file among its
// arguments. Empty when the output is none of them (or not fixed yet: a %p/%r template).
std::string clobbered_by(const std::string& output, const std::vector<std::string>& command) {
  if (output.find('%') != std::string::npos) return {};
  std::error_code error;
  if (!fs::exists(output, error)) return {};
  const auto same = [&](const fs::path& other) {
    std::error_code e;
    return fs::exists(other, e) && fs::equivalent(output, other, e);
  };
  if (same(program_of(command[0]))) return "the program " + command[0];
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (same(command[i])) return "the program's argument " + command[i];
  }
  return {};
}

std::function<int()> setup_record(CLI::App& sub) {
  struct Args {
    std::string output = "memtool.%p.trace";
    std::vector<std::string> command;
    bool no_framework_env = false;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("-o,--output", args->output,
                 "Trace file (%p: the command's pid, %r: the rank; under a launcher each rank writes its own, .rank%r "
                 "added when there is no %r)")
      ->capture_default_str();
  sub.add_flag("--no-framework-env", args->no_framework_env,
               "leave PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_ALLOCATOR and TF_GPU_ALLOCATOR as they are");
  sub.add_option("command", args->command, "The program to record and its arguments (after --)")->required();
  return [args]() -> int {
    if (const std::string what = clobbered_by(args->output, args->command); !what.empty()) {
      fmt::print(stderr, "memtool: error: -o {}: that is {}; the trace would replace it\n", args->output, what);
      return 2;
    }
    const std::string library = memtool::cli::find_preload_library_or_say();
    if (library.empty()) return 1;
    memtool::cli::say_strategy("record", library, "");
    pid_t child = 0;
    std::vector<std::pair<std::string, std::string>> variables{{"MEMTOOL_TRACE", args->output},
                                                               {"MEMTOOL_STRATEGY", "record"}};
    if (!args->no_framework_env) memtool::cli::add_framework_environment(variables);
    const auto start = fs::file_time_type::clock::now();
    const int status = memtool::cli::run_preloaded(args->command, library, variables, child);
    const std::string trace = memtool::cli::path_for_child(args->output, static_cast<long>(child));
    if (child <= 0) return status;
    // In front of a launcher: each rank wrote its own trace (detail/rank_files.hpp).
    if (const auto ranks = memtool::cli::launched_rank_files(args->output, start);
        ranks.size() > 1 || (ranks.size() == 1 && ranks.front().path != trace)) {
      memtool::cli::say_rank_traces(ranks, args->output);
      return status;  // the program's, always
    }
    std::error_code error;
    const fs::file_status file = fs::status(trace, error);
    if (fs::is_regular_file(file)) {
      try {
        summarise(trace);
        fmt::print(stderr, "memtool: trace written to {}\nmemtool: next: memtool report {}\n", trace, trace);
      } catch (const std::exception& e) {
        fmt::print(stderr, "memtool: the trace {} could not be read: {}\n", trace, e.what());
      }
    } else if (fs::exists(file)) {
      fmt::print(stderr, "memtool: no trace was written: {} is not a regular file\n", trace);
    } else {
      fmt::print(stderr, "memtool: no trace was written to {} (did the program use the CUDA driver?)\n", trace);
    }
    return status;  // the program's, always
  };
}

MEMTOOL_COMMAND("record", setup_record);

}  // namespace
