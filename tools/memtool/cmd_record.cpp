// `memtool record [-o FILE] -- command args…`: runs the command with libmemtool.so preloaded
// (after any LD_PRELOAD it already has), passes its exit status through, then summarises the
// trace and says what to run next.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "command.hpp"
#include "detail/load_model.hpp"
#include "memtool/interpose/options.hpp"

namespace {

namespace fs = std::filesystem;

// libmemtool.so: $MEMTOOL_LIBRARY, else next to this binary in the build tree
// (build/tools/memtool/memtool → build/interpose/libmemtool.so) or an install tree
// (bin/memtool → lib/libmemtool.so).
std::string find_library() {
  if (const char* configured = std::getenv("MEMTOOL_LIBRARY"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  const fs::path dir = self.parent_path();
  for (const fs::path& candidate : {dir / "../../interpose/libmemtool.so", dir / "../lib/libmemtool.so",
                                    dir / "../lib64/libmemtool.so", dir / "libmemtool.so"}) {
    if (fs::exists(candidate, error)) return fs::weakly_canonical(candidate, error).string();
  }
  return {};
}

// The exit status a shell would report for the child.
int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int run_preloaded(const std::vector<std::string>& command, const std::string& library, const std::string& trace,
                  pid_t& child) {
  std::string preload = library;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
    preload = std::string(existing) + ":" + library;  // keep the user's preloads first
  }
  // Like system(): the command gets Ctrl-C, we wait for it and report.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_int {};
  struct sigaction old_quit {};
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);

  child = fork();
  if (child < 0) {
    fmt::print(stderr, "memtool: error: fork failed: {}\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("MEMTOOL_TRACE", trace.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fmt::print(stderr, "memtool: error: cannot run {}: {}\n", command[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  return exit_status_of(status);
}

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
    const std::string library = find_library();
    if (library.empty()) {
      fmt::print(stderr, "memtool: error: libmemtool.so not found next to memtool; set MEMTOOL_LIBRARY\n");
      return 1;
    }
    pid_t child = 0;
    const int status = run_preloaded(args->command, library, args->output, child);
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
