// libmemtool.so's life in a process: lazy, thread-safe initialisation at the first hooked call
// (options, log, trace file, fork handlers), the summary at exit, and the memtool_* C API.
// Any problem in here leaves the library in pass-through: the program runs as without us.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "memtool/interpose/log.hpp"
#include "memtool/interpose/memtool.h"
#include "memtool/interpose/options.hpp"
#include "preload.hpp"

extern char** environ;

namespace memtool::interpose::preload {

std::atomic<State> g_state{State::uninitialised};
Recorder* g_recorder = nullptr;

namespace {

std::mutex g_init_mutex;
int g_log_fd = -1;

void* resolve_driver_query(const char* name) { return driver_symbol(name); }

void prepare_fork() { g_recorder->before_fork(); }
void parent_after_fork() { g_recorder->after_fork_in_parent(); }
void child_after_fork() {
  g_recorder->after_fork_in_child();
  g_state.store(State::pass_through, std::memory_order_release);
}

void at_exit() {
  const RecorderStats stats = g_recorder->stats();
  g_recorder->shutdown();
  Log::write(LogLevel::info, "recorded {} events: {} allocations, {} frees, {} launches, peak {} bytes live{}",
             stats.events, stats.allocations, stats.frees, stats.launches, stats.peak_live_bytes,
             stats.period ? fmt::format(", {} events per iteration", *stats.period) : std::string());
}

State decide() {
  const EnvLookup lookup = [](const char* name) -> const char* { return std::getenv(name); };
  ParsedOptions parsed = parse_options(lookup, environ);
  const Options& options = parsed.options;
  Log::set_level(parsed.errors.empty() ? options.log : LogLevel::warn);
  if (!options.log_file.empty()) {
    g_log_fd = ::open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (g_log_fd >= 0) Log::set_fd(g_log_fd);
  }
  for (const std::string& warning : parsed.warnings) Log::write(LogLevel::warn, "{}", warning);
  if (!parsed.errors.empty()) {
    // Always said, whatever MEMTOOL_LOG is: the user asked for something we will not do.
    Log::set_level(LogLevel::error);
    for (const std::string& error : parsed.errors) {
      Log::write(LogLevel::error, "{}; memtool stays out of the way (calls pass through)", error);
    }
    return State::pass_through;
  }
  if (options.disable || options.strategy == Strategy::off) return State::pass_through;

  std::unique_ptr<EventSink> sink;
  if (!options.trace.empty()) {
    const std::string path = expand_path_template(options.trace, static_cast<long>(getpid()), lookup);
    std::string error;
    sink = open_trace_sink(path, &error);
    if (!sink) {
      Log::write(LogLevel::error, "cannot write the trace to {}: {}; memtool stays out of the way", path, error);
      return State::pass_through;
    }
    sink->metadata("memtool_version", memtool_version());
    sink->metadata("pid", std::to_string(getpid()));
    sink->metadata("strategy", std::string(to_string(options.strategy)));
    sink->metadata("cuda_header_version", std::to_string(CUDA_VERSION));
    Log::write(LogLevel::info, "recording to {}", path);
  }
  g_recorder = new Recorder(options, std::move(sink));  // never deleted: hooks may run during exit
  g_recorder->set_driver_resolver(resolve_driver_query);
  pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  std::atexit(at_exit);
  return State::recording;
}

}  // namespace

Recorder* initialise() noexcept {
  {
    // Our own initialisation may reach hooked functions (and dlsym): they pass through.
    const HookScope scope;
    std::lock_guard lock(g_init_mutex);
    if (g_state.load(std::memory_order_acquire) == State::uninitialised) {
      State decided = State::pass_through;
      try {
        decided = decide();
      } catch (const std::exception& e) {
        Log::write(LogLevel::error, "initialisation failed ({}); memtool stays out of the way", e.what());
      } catch (...) {
        Log::write(LogLevel::error, "initialisation failed; memtool stays out of the way");
      }
      g_state.store(decided, std::memory_order_release);
    }
  }
  return active_recorder();
}

// Resolve our dlsym's real one before the program can call it from several threads.
__attribute__((constructor)) void bootstrap() { (void)real_dlsym(); }

}  // namespace memtool::interpose::preload

#define MEMTOOL_EXPORTED extern "C" __attribute__((visibility("default")))

MEMTOOL_EXPORTED void memtool_iteration_mark(void) {
  using namespace memtool::interpose;
  using namespace memtool::interpose::preload;
  if (Recorder* recorder = active_recorder(); recorder != nullptr) {
    const HookScope scope;
    recorder->on_iteration_mark();
  }
}

MEMTOOL_EXPORTED const char* memtool_version(void) { return MEMTOOL_VERSION; }
