// libmemtool.so's life in a process: lazy, thread-safe initialisation at the first hooked call
// (options, log, trace file, fork handlers, pool mode), the summary at exit, and the memtool_*
// C API.
// Any problem in here leaves the library in pass-through: the program runs as without us.
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "memtool/interpose/log.hpp"
#include "memtool/interpose/memtool.h"
#include "memtool/interpose/options.hpp"
#include "preload.hpp"

extern char** environ;

namespace memtool::interpose::preload {

std::atomic<State> g_state{State::uninitialised};
Recorder* g_recorder = nullptr;
PoolMode* g_pool = nullptr;

namespace {

std::mutex g_init_mutex;
int g_log_fd = -1;
std::string* g_summary_path = nullptr;  // MEMTOOL_SUMMARY, expanded; never deleted

void* resolve_driver_query(const char* name) { return driver_symbol(name); }

void prepare_fork() { g_recorder->before_fork(); }
void parent_after_fork() { g_recorder->after_fork_in_parent(); }
void child_after_fork() {
  trace_flushing_after_fork_in_child();
  g_recorder->after_fork_in_child();
  g_state.store(State::pass_through, std::memory_order_release);
}

// Pool mode at exit: the one-line summary and the JSON file. No driver call (see
// PoolMode::finish): pools go back at the program's context teardown, or with the process.
void finish_pool() {
  const pool::Summary summary = g_pool->finish();
  Log::write(LogLevel::info, "{}", pool::summary_line(summary));
  if (g_summary_path == nullptr) return;
  struct stat st {};
  if (::stat(g_summary_path->c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {  // a FIFO would block the exit
    Log::write(LogLevel::error, "cannot write the pool summary to {}: not a regular file", *g_summary_path);
    return;
  }
  errno = 0;
  if (!pool::write_summary_file(summary, *g_summary_path)) {
    Log::write(LogLevel::error, "cannot write the pool summary to {}: {}", *g_summary_path,
               errno != 0 ? std::strerror(errno) : "write failed");
  }
}

// Whether two paths name one file (the same path, or the same inode once both exist).
bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void at_exit() {
  const HookScope scope;  // whatever the exit path reaches is not the program's to record
  if (g_pool != nullptr) finish_pool();
  const RecorderStats stats = g_recorder->stats();
  g_recorder->shutdown();
  Log::write(LogLevel::info,
             "recorded {} events: {} allocations, {} frees, {} launches, peak {} bytes live{}; detection thread {:.1f} ms CPU",
             stats.events, stats.allocations, stats.frees, stats.launches, stats.peak_live_bytes,
             stats.period ? fmt::format(", {} events per iteration", *stats.period) : std::string(),
             static_cast<double>(stats.detection_cpu_ns) / 1e6);
}

// The real driver functions pool mode calls (never our wrappers: they would record the pool's
// own allocation and re-enter the engine).
DriverFunctions real_driver_functions() {
  DriverFunctions f;
  f.mem_alloc = reinterpret_cast<fn::cuMemAlloc_v2>(real_function(HookId::cuMemAlloc_v2));
  f.mem_free = reinterpret_cast<fn::cuMemFree_v2>(real_function(HookId::cuMemFree_v2));
  f.mem_alloc_async = reinterpret_cast<fn::cuMemAllocAsync>(real_function(HookId::cuMemAllocAsync));
  f.mem_free_async = reinterpret_cast<fn::cuMemFreeAsync>(real_function(HookId::cuMemFreeAsync));
  f.stream_wait_event = reinterpret_cast<fn::cuStreamWaitEvent>(real_function(HookId::cuStreamWaitEvent));
  f.event_create = reinterpret_cast<decltype(f.event_create)>(driver_symbol("cuEventCreate"));
  f.event_record = reinterpret_cast<decltype(f.event_record)>(driver_symbol("cuEventRecord"));
  f.event_query = reinterpret_cast<decltype(f.event_query)>(driver_symbol("cuEventQuery"));
  f.event_destroy = reinterpret_cast<decltype(f.event_destroy)>(driver_symbol("cuEventDestroy_v2"));
  return f;
}

// nullptr (logged) when the driver lacks what the pool needs: memtool then stays out of the way.
PoolMode* make_pool_mode(const Options& options) {
  const DriverFunctions functions = real_driver_functions();
  if (!functions.complete()) {
    Log::write(LogLevel::error, "MEMTOOL_STRATEGY=pool: the driver lacks functions the pool needs "
                                "(cuMemAlloc_v2, cuMemFree_v2, cuEvent*, cuStreamWaitEvent); memtool stays out of the way");
    return nullptr;
  }
  PoolModeSettings settings;
  settings.synchronous_planning = options.pool_sync_planning;
  Log::write(LogLevel::info, "pool mode: observing until the iteration is found, then planning ({})",
             options.pool_sync_planning ? "on the calling thread" : "on a worker thread");
  return new PoolMode(functions, std::move(settings));  // never deleted: hooks may run during exit
}

State decide() {
  const EnvLookup lookup = [](const char* name) -> const char* { return std::getenv(name); };
  ParsedOptions parsed = parse_options(lookup, environ);
  const Options& options = parsed.options;
  Log::set_level(parsed.errors.empty() ? options.log : LogLevel::warn);
  if (!options.log_file.empty()) {
    std::string problem;
    g_log_fd = Log::open_file(options.log_file, &problem);
    if (g_log_fd >= 0) {
      Log::set_fd(g_log_fd);
    } else {
      Log::write(LogLevel::error, "MEMTOOL_LOG_FILE={}: {}; memtool's messages go to stderr", options.log_file,
                 problem);
    }
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

  PoolMode* pool = nullptr;
  if (options.strategy == Strategy::pool) {
    pool = make_pool_mode(options);
    if (pool == nullptr) return State::pass_through;
    if (!options.summary.empty()) {
      g_summary_path = new std::string(expand_path_template(options.summary, static_cast<long>(getpid()), lookup));
    }
  } else if (!options.summary.empty()) {
    Log::write(LogLevel::warn, "MEMTOOL_SUMMARY is written in pool mode only (MEMTOOL_STRATEGY=pool): ignored in {} mode",
               to_string(options.strategy));
  }

  std::unique_ptr<EventSink> sink;
  if (!options.trace.empty()) {
    const std::string path = expand_path_template(options.trace, static_cast<long>(getpid()), lookup);
    std::string error;
    sink = open_trace_sink(path, options.trace_limit, &error);
    if (!sink) {
      Log::write(LogLevel::error, "cannot write the trace to {}: {}; memtool stays out of the way", path, error);
      return State::pass_through;
    }
    sink->metadata("memtool_version", memtool_version());
    sink->metadata("pid", std::to_string(getpid()));
    sink->metadata("strategy", std::string(to_string(options.strategy)));
    sink->metadata("cuda_header_version", std::to_string(CUDA_VERSION));
    Log::write(LogLevel::info, "recording to {}", path);
    if (g_summary_path != nullptr && same_file(*g_summary_path, path)) {
      Log::write(LogLevel::error, "MEMTOOL_SUMMARY and MEMTOOL_TRACE name the same file {}: it holds the trace; "
                                  "the pool summary is not written", path);
      g_summary_path = nullptr;
    }
  }
  const bool tracing = sink != nullptr;
  g_recorder = new Recorder(options, std::move(sink));  // never deleted: hooks may run during exit
  if (tracing) start_trace_flushing(g_recorder);  // a killed run keeps its trace
  g_recorder->set_driver_resolver(resolve_driver_query);
  g_pool = pool;
  pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  std::atexit(at_exit);
  return pool != nullptr ? State::pooling : State::recording;
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
    if (g_pool != nullptr) g_pool->mark_iteration();
  }
}

MEMTOOL_EXPORTED const char* memtool_version(void) { return MEMTOOL_VERSION; }
