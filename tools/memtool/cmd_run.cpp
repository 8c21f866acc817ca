// `memtool run --strategy pool|record|off [--summary FILE] [--trace FILE] -- command args…`:
// runs the command under libmemtool.so with the chosen strategy (MEMTOOL_STRATEGY), passes its
// exit status through (always: a summary that cannot be read is said, not returned), and in
// pool mode prints what the pool did (from MEMTOOL_SUMMARY, a temporary file when --summary is
// not given).
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
#include "detail/size_arg.hpp"
#include "detail/text_format.hpp"
#include "memtool/interpose/options.hpp"

namespace {

namespace fs = std::filesystem;

std::uint64_t field(const nlohmann::json& summary, const char* name) {
  const auto it = summary.find(name);
  return it != summary.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

// The pool summary as two lines on stderr; false when the file is missing or not a summary.
// Read whole first (a stream over a directory made the JSON parser throw past the exit status).
bool print_pool_summary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json summary = nlohmann::json::parse(text.str(), nullptr, false);
  if (summary.is_discarded() || !summary.is_object()) return false;
  using memtool::cli::human_bytes;
  if (summary.value("strategy", "") == "swap") {
    const std::string mode = summary.value("swap_mode", "");
    fmt::print(stderr,
               "memtool: swap ({}): device peak {} (budget {}); {} swapped out, {} back in ({} ahead of use, {} of "
               "them late, {} on demand); {} on the host at most; {:.1f} ms waiting for copies\n",
               mode.empty() ? "off" : mode, human_bytes(field(summary, "peak_device_bytes")),
               human_bytes(field(summary, "budget_bytes")), human_bytes(field(summary, "bytes_swapped_out")),
               human_bytes(field(summary, "bytes_swapped_in")), field(summary, "swap_ins_ahead"),
               field(summary, "swap_ins_late"), field(summary, "swap_ins_on_demand"),
               human_bytes(field(summary, "host_bytes")), static_cast<double>(field(summary, "stall_ns")) / 1e6);
    return true;
  }
  fmt::print(stderr,
             "memtool: pool: {} iterations served from a plan; pool {} (lower bound {}); {} allocations from the "
             "pool, {} passed through, {} misses, {} re-plans\n",
             field(summary, "iterations_planned"), human_bytes(field(summary, "pool_bytes")),
             human_bytes(field(summary, "lower_bound_bytes")), field(summary, "allocs_from_pool"),
             field(summary, "allocs_passed_through"), field(summary, "misses"), field(summary, "replans"));
  fmt::print(stderr, "memtool: device peak {} with the pool, {} without (observed lifetimes)\n",
             human_bytes(field(summary, "peak_device_bytes_with_pool")),
             human_bytes(field(summary, "peak_device_bytes_without_pool")));
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
  sub.add_option("-s,--strategy", args->strategy, "pool: serve iterations from a planned pool; swap: stay within "
                                                 "--budget by moving idle buffers to the host; record: observe "
                                                 "only; off: pass every call through")
      ->check(CLI::IsMember({"pool", "swap", "record", "off"}))
      ->capture_default_str();
  sub.add_option("--budget", args->budget,
                 "swap: device bytes to stay within, a size (1.5G, 40GiB) or a share of the device (60%)");
  sub.add_option("--summary", args->summary, "pool: keep the JSON summary in this file (%p: the command's pid)");
  sub.add_option("--trace", args->trace, "Also write the trace to this file (%p: the command's pid, %r: rank)");
  sub.add_flag("--no-framework-env", args->no_framework_env,
               "leave PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_ALLOCATOR and TF_GPU_ALLOCATOR as they are");
  sub.add_option("command", args->command, "The program to run and its arguments (after --)")->required();
  sub.footer("Example: memtool run --strategy pool --summary pool.json -- python train.py");
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
    const std::string library = memtool::cli::find_preload_library();
    if (library.empty()) {
      fmt::print(stderr, "memtool: error: libmemtool.so not found next to memtool; set MEMTOOL_LIBRARY\n");
      return 1;
    }
    const bool pool = args->strategy == "pool" || args->strategy == "swap";  // the ones with a summary to show
    std::string summary = args->summary;
    const bool temporary = pool && summary.empty();
    if (temporary) {
      std::error_code error;
      fs::path dir = fs::temp_directory_path(error);
      if (error) dir = "/tmp";
      summary = (dir / fmt::format("memtool-run.{}.summary.json", static_cast<long>(getpid()))).string();
    }
    std::vector<std::pair<std::string, std::string>> variables{{"MEMTOOL_STRATEGY", args->strategy}};
    if (pool) variables.emplace_back("MEMTOOL_SUMMARY", summary);
    if (!args->trace.empty()) variables.emplace_back("MEMTOOL_TRACE", args->trace);
    if (!args->budget.empty()) variables.emplace_back("MEMTOOL_BUDGET", args->budget);
    if (!args->no_framework_env) memtool::cli::add_framework_environment(variables);

    pid_t child = 0;
    const int status = memtool::cli::run_preloaded(args->command, library, variables, child);
    if (pool && child > 0) {
      const std::string written = memtool::interpose::expand_path_template(
          summary, static_cast<long>(child), [](const char* name) -> const char* { return std::getenv(name); });
      std::error_code error;
      const fs::file_status file = fs::status(written, error);
      if (fs::exists(file) && !fs::is_regular_file(file)) {
        fmt::print(stderr, "memtool: no pool summary was written: {} is not a regular file\n", written);
      } else if (!print_pool_summary(written)) {
        fmt::print(stderr, "memtool: no pool summary was written (did the program use the CUDA driver?)\n");
      } else if (!temporary) {
        fmt::print(stderr, "memtool: pool summary written to {}\n", written);
      }
      if (temporary) fs::remove(written, error);
    }
    return status;  // the program's, always
  };
}

MEMTOOL_COMMAND("run", "Run a program under libmemtool.so with a strategy (pool, record, off)", setup_run);

}  // namespace
