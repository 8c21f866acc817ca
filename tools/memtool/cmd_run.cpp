// `memtool run --strategy pool|swap|record|off [--budget B] [--summary FILE] [--trace FILE] --
// command args…`: says the strategy, runs the command under libmemtool.so with it
// (MEMTOOL_STRATEGY), passes its exit status through (always: a summary that cannot be read is
// said, not returned), and prints one line per outcome — the step found, what was served or
// moved, the device peak — from MEMTOOL_SUMMARY (a temporary file when --summary is not given).
#include <sys/types.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/preload_run.hpp"
#include "detail/rank_run.hpp"
#include "detail/size_arg.hpp"
#include "detail/text_format.hpp"
#include "memtool/interpose/options.hpp"
#include "memtool/interpose/rank.hpp"

namespace {

namespace fs = std::filesystem;

std::uint64_t field(const nlohmann::json& summary, const char* name) {
  const auto it = summary.find(name);
  return it != summary.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

std::string text_field(const nlohmann::json& summary, const char* name) {
  const auto it = summary.find(name);
  return it != summary.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The run's outcomes, one line each, from its summary (MEMTOOL_SUMMARY): what was found, what
// was served or moved, and the device peak. False when the file is missing or not a summary.
// Read whole first (a stream over a directory made the JSON parser throw past the exit status).
bool print_outcomes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json summary = nlohmann::json::parse(text.str(), nullptr, false);
  if (summary.is_discarded() || !summary.is_object()) return false;
  using memtool::cli::human_bytes;
  const std::string strategy = text_field(summary, "strategy");
  if (field(summary, "period_allocations") != 0) {
    fmt::print(stderr, "memtool: found: a training step of {} allocations ({} events, up to {} live in one step)\n",
               field(summary, "period_allocations"), field(summary, "period_events"),
               human_bytes(field(summary, "period_peak_bytes")));
  } else {
    fmt::print(stderr, "memtool: found: no repeating training step\n");
  }
  if (strategy == "pool") {
    fmt::print(stderr,
               "memtool: served: {} iterations from a plan; {} allocations from the pool, {} passed through, {} "
               "misses, {} re-plans; pool {} (lower bound {})\n",
               field(summary, "iterations_planned"), field(summary, "allocs_from_pool"),
               field(summary, "allocs_passed_through"), field(summary, "misses"), field(summary, "replans"),
               human_bytes(field(summary, "pool_bytes")), human_bytes(field(summary, "lower_bound_bytes")));
    fmt::print(stderr, "memtool: device peak {} with the pool, {} without (observed lifetimes)\n",
               human_bytes(field(summary, "peak_device_bytes_with_pool")),
               human_bytes(field(summary, "peak_device_bytes_without_pool")));
  } else if (strategy == "swap") {
    const std::string mode = text_field(summary, "swap_mode");
    const std::string schedule = text_field(summary, "swap_schedule");
    fmt::print(stderr,
               "memtool: moved ({} swap, {}): {} to the host, {} back ({} ahead of use, {} of them late, {} on "
               "demand); {} on the host at most; {:.1f} ms waiting for copies\n",
               mode.empty() ? "no" : mode, schedule.empty() ? "no schedule" : schedule,
               human_bytes(field(summary, "bytes_swapped_out")), human_bytes(field(summary, "bytes_swapped_in")),
               field(summary, "swap_ins_ahead"), field(summary, "swap_ins_late"), field(summary, "swap_ins_on_demand"),
               human_bytes(field(summary, "host_bytes")), static_cast<double>(field(summary, "stall_ns")) / 1e6);
    fmt::print(stderr, "memtool: device peak {} with memtool (budget {}), {} of live buffers at most\n",
               human_bytes(field(summary, "peak_device_bytes")), human_bytes(field(summary, "budget_bytes")),
               human_bytes(field(summary, "peak_device_bytes_without_pool")));
  } else {
    fmt::print(stderr, "memtool: device peak {} of live buffers (recorded; nothing served or moved)\n",
               human_bytes(field(summary, "peak_device_bytes_without_pool")));
  }
  if (field(summary, "allocation_failures") != 0) {
    fmt::print(stderr, "memtool: {} allocations failed for lack of device memory ({} refused by the budget)\n",
               field(summary, "allocation_failures"), field(summary, "budget_refusals"));
  }
  return true;
}

std::function<int()> setup_run(CLI::App& sub) {
  struct Args {
    std::string strategy = "pool";
    std::string summary;
    std::string trace;
    std::string budget;
    std::vector<std::string> command;
    bool no_framework_env = false;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("-s,--strategy", args->strategy,
                 "pool: serve iterations from a planned pool; swap: stay within "
                 "--budget by moving idle buffers to the host; record: observe "
                 "only; off: pass every call through")
      ->check(CLI::IsMember({"pool", "swap", "record", "off"}))
      ->capture_default_str();
  sub.add_option("--budget", args->budget,
                 "swap: device bytes to stay within, a size (1.5G, 40GiB) or a share of the device (60%)");
  sub.add_option("--summary", args->summary,
                 "keep the JSON summary in this file (%p: the command's pid, %r: the rank; pool, swap, record)");
  sub.add_option("--trace", args->trace, "Also write the trace to this file (%p: the command's pid, %r: rank)");
  sub.add_flag("--no-framework-env", args->no_framework_env,
               "leave PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_ALLOCATOR and TF_GPU_ALLOCATOR as they are");
  sub.add_option("command", args->command, "The program to run and its arguments (after --)")->required();
  return [args]() -> int {
    if (!args->budget.empty()) {  // libmemtool.so reads it with the same grammar: refused here, not in the program
      try {
        (void)memtool::cli::parse_size_arg("--budget", args->budget,
                                           {.share_of = "the device's memory", .zero = true, .rate = false});
      } catch (const std::invalid_argument& e) {
        fmt::print(stderr, "memtool: error: {}\n", e.what());
        return 2;
      }
    }
    const std::string library = memtool::cli::find_preload_library_or_say();
    if (library.empty()) return 1;
    const bool engine = args->strategy != "off";  // the strategies with a summary to show
    std::string summary = args->summary;
    const bool temporary = engine && summary.empty();
    if (temporary) {
      std::error_code error;
      fs::path dir = fs::temp_directory_path(error);
      if (error) dir = "/tmp";
      summary = (dir / fmt::format("memtool-run.{}.summary.json", static_cast<long>(getpid()))).string();
    }
    std::vector<std::pair<std::string, std::string>> variables{{"MEMTOOL_STRATEGY", args->strategy}};
    if (engine) variables.emplace_back("MEMTOOL_SUMMARY", summary);
    if (!args->trace.empty()) variables.emplace_back("MEMTOOL_TRACE", args->trace);
    if (!args->budget.empty()) variables.emplace_back("MEMTOOL_BUDGET", args->budget);
    if (!args->no_framework_env) memtool::cli::add_framework_environment(variables);

    const char* budget_variable = std::getenv("MEMTOOL_BUDGET");
    memtool::cli::say_strategy(args->strategy, library,
                               !args->budget.empty()        ? args->budget
                               : budget_variable != nullptr ? budget_variable
                                                            : "");
    pid_t child = 0;
    const auto start = fs::file_time_type::clock::now();
    const int status = memtool::cli::run_preloaded(args->command, library, variables, child);
    if (!engine && child > 0) {
      fmt::print(stderr,
                 "memtool: off: every call passed straight to the driver; nothing was recorded, served or moved\n");
    }
    if (engine && child > 0) {
      const std::string written = memtool::cli::path_for_child(summary, static_cast<long>(child));
      // In front of a launcher: each rank wrote its own summary (detail/rank_files.hpp).
      if (const auto ranks = memtool::cli::launched_rank_files(summary, start);
          ranks.size() > 1 || (ranks.size() == 1 && ranks.front().path != written)) {
        memtool::cli::say_rank_summaries(ranks, summary, !temporary, print_outcomes);
        if (!args->trace.empty()) {
          const std::string traces = memtool::interpose::rank_path_template(args->trace);
          fmt::print(stderr, "memtool: traces: {}\nmemtool: next: memtool report '{}'{}\n", traces, traces,
                     temporary ? "" : fmt::format(" --summary '{}'", memtool::interpose::rank_path_template(summary)));
        }
        std::error_code error;
        if (temporary)
          for (const auto& rank : ranks) fs::remove(rank.path, error);
        return status;  // the program's, always
      }
      std::error_code error;
      const fs::file_status file = fs::status(written, error);
      if (fs::exists(file) && !fs::is_regular_file(file)) {
        fmt::print(stderr, "memtool: no summary was written: {} is not a regular file\n", written);
      } else if (!print_outcomes(written)) {
        fmt::print(stderr, "memtool: no {} summary was written (did the program use the CUDA driver?)\n",
                   args->strategy);
      } else if (!temporary) {
        fmt::print(stderr, "memtool: summary written to {}\n", written);
      }
      if (temporary) fs::remove(written, error);
    }
    return status;  // the program's, always
  };
}

MEMTOOL_COMMAND("run", setup_run);

}  // namespace
