// libmemtool.so's life in a process: lazy, thread-safe initialisation at the first hooked call
// (options, log, trace file, fork handlers, the engine: observer, device and the strategy's
// runtimes), the summary at exit, and the memtool_* C API.
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

#include "memtool/engine/log.hpp"
#include "memtool/engine/strategy.hpp"
#include "memtool/interpose/driver_device.hpp"
#include "memtool/interpose/ipc_bridge.hpp"
#include "memtool/interpose/log.hpp"
#include "memtool/interpose/memtool.h"
#include "memtool/interpose/options.hpp"
#include "memtool/interpose/rank.hpp"
#include "preload.hpp"
#ifdef MEMTOOL_HAVE_CUPTI
#include "memtool/cupti/correlation.hpp"
#include "memtool/cupti/tracer.hpp"
#endif

extern char** environ;

namespace memtool::interpose::preload {

std::atomic<State> g_state{State::uninitialised};
Recorder* g_recorder = nullptr;
ContextRuntimes* g_runtimes = nullptr;
CaptureTracker* g_captures = nullptr;  // never deleted, like the recorder
DriverDevice* g_device = nullptr;
IpcBridge* g_ipc_bridge = nullptr;  // never deleted; its registry files are removed at exit
cupti::GpuTimeStore* g_gpu_times = nullptr;

namespace {

std::mutex g_init_mutex;
const Options* g_tracer_options = nullptr;  // set by decide() when recording; never deleted
int g_log_fd = -1;
std::string* g_summary_path = nullptr;  // MEMTOOL_SUMMARY, expanded; never deleted

void* resolve_driver_query(const char* name) { return driver_symbol(name); }

// --- the CUPTI tracer (MEMTOOL_CUPTI): GPU times into the trace and the engine's store ---
#ifdef MEMTOOL_HAVE_CUPTI
cupti::Tracer* g_tracer = nullptr;  // never deleted: CUPTI may call back during exit

class RecorderGpuTimeSink final : public cupti::GpuTimeSink {
 public:
  void deliver(std::span<const trace::GpuTimeRecord> records,
               std::span<const std::string_view> kernel_names) noexcept override {
    g_recorder->on_gpu_times(records, kernel_names);
  }
};

void tracer_log(cupti::TracerLogLevel level, std::string_view message) {
  Log::write(level == cupti::TracerLogLevel::warn ? LogLevel::warn : LogLevel::info, "{}", message);
}

void flush_gpu_times(void*) noexcept { g_tracer->request_flush(); }

void stop_tracer() {
  if (g_tracer != nullptr) g_tracer->stop();
}

// auto: GPU times when a trace is written (the swapper, when it comes, will want them too).
// Started once the library is initialised (outside the init lock: CUPTI's own threads may
// call hooked functions while it starts). Its exit handler is registered after libcupti was
// loaded, so it runs before CUPTI's own teardown and before ours (which closes the trace).
void start_tracer(const Options& options) {
  if (options.cupti == Toggle::off || (options.cupti == Toggle::automatic && options.trace.empty())) return;
  cupti::TracerSettings settings;
  settings.library = options.cupti_library;
  settings.required = options.cupti == Toggle::on;
  settings.buffer_bytes = static_cast<std::size_t>(options.cupti_buffer_bytes);
  settings.max_buffers = options.cupti_buffers;
  settings.log = tracer_log;
  for (std::size_t i = 0; i < kHookCount; ++i) {
    const std::string_view symbol = kHooks[i].symbol;
    if (cupti::is_gpu_work_symbol(symbol)) settings.driver_apis.emplace_back(symbol);
  }
  if (auto version = reinterpret_cast<CUresult (*)(int*)>(driver_symbol("cuDriverGetVersion")); version != nullptr) {
    int driver = 0;
    if (version(&driver) == CUDA_SUCCESS) settings.driver_version = driver;
  }
  auto store = std::make_unique<cupti::GpuTimeStore>();
  auto sink = std::make_unique<RecorderGpuTimeSink>();
  std::unique_ptr<cupti::Tracer> tracer = cupti::Tracer::start(std::move(settings), sink.get(), store.get());
  if (tracer == nullptr) return;
  // Never deleted, like the tracer that delivers into them.
  (void)sink.release();
  g_gpu_times = store.release();
  g_tracer = tracer.release();
  g_recorder->set_iteration_listener(flush_gpu_times, nullptr);
  std::atexit([] {
    const HookScope scope;
    stop_tracer();
  });
}
void tracer_after_fork_in_child() {
  if (g_tracer != nullptr) g_tracer->after_fork_in_child();
}
#else
void start_tracer(const Options& options) {
  if (options.cupti == Toggle::on)
    Log::write(LogLevel::warn, "MEMTOOL_CUPTI=on: this libmemtool.so was built without CUPTI");
}
void stop_tracer() {}
void tracer_after_fork_in_child() {}
#endif

void prepare_fork() { g_recorder->before_fork(); }
void parent_after_fork() { g_recorder->after_fork_in_parent(); }
void child_after_fork() {
  tracer_after_fork_in_child();
  trace_flushing_after_fork_in_child();
  g_recorder->after_fork_in_child();
  g_state.store(State::pass_through, std::memory_order_release);
}

// The engine's messages go to memtool's log (the engine has no logging of its own).
void engine_log(engine::LogLevel level, std::string_view line) {
  Log::write(static_cast<LogLevel>(static_cast<int>(level)), "{}", line);
}

// Whether two paths name one file (the same path, or the same inode once both exist).
// MEMTOOL_HOST_LIMIT's default: swapped-out bytes may take half of the host's memory.
std::uint64_t half_of_host_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2;
}

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Whether `path` names the file open as `fd` (opened from `fd_path`): the same path, or the same
// inode once `path` exists.
bool names_open_file(const std::string& path, const std::string& fd_path, int fd) {
  if (path == fd_path) return true;
  struct stat sp {};
  struct stat sf {};
  return ::stat(path.c_str(), &sp) == 0 && ::fstat(fd, &sf) == 0 && sp.st_dev == sf.st_dev && sp.st_ino == sf.st_ino;
}

// At exit: the strategies stop (no driver call: by the time exit handlers run, the calling
// thread's thread_local objects are gone — glibc destroys them first — and with them, in
// fakecuda at least, its current context; memory goes back with the process or went back at
// the program's context teardown), then the summary line and MEMTOOL_SUMMARY.
void at_exit() {
  const HookScope scope;  // whatever the exit path reaches is not the program's to record
  stop_tracer();          // its last GPU times go into the trace before it closes
  g_runtimes->shutdown_all(false);
  if (g_ipc_bridge != nullptr) g_ipc_bridge->remove_files();
  const RecorderStats stats = g_recorder->stats();
  g_recorder->shutdown();
  engine::Summary summary = g_runtimes->summary();
  if (stats.step) {
    summary.period_events = stats.step->period;
    summary.period_peak_bytes = stats.step->peak_bytes;
    if (summary.period_allocations == 0) summary.period_allocations = stats.step->allocations;
    summary.period_graph_launches = stats.step->graph_launches;
  }
  summary.captures = g_captures->captures_begun();
  summary.captured_work = stats.captured_work;
  summary.graph_launches = stats.graph_launches;
  summary.opaque_graph_launches = stats.opaque_graph_launches;
  summary.graph_memory_allocations = stats.graph_allocations;
  summary.graph_memory_bytes = g_recorder->graph_memory_bytes(false);
  summary.capture_detours = g_device->detours();
  summary.periods_rejected = g_recorder->observer().periods_rejected();
  summary.peak_device_bytes_without_pool = std::max(summary.peak_device_bytes_without_pool, stats.peak_live_bytes);
  Log::write(
      LogLevel::info,
      "recorded {} events: {} allocations, {} frees, {} launches, peak {} bytes live{}; detection thread {:.1f} ms CPU",
      stats.events, stats.allocations, stats.frees, stats.launches, stats.peak_live_bytes,
      stats.period ? fmt::format(", {} events per iteration", *stats.period) : std::string(),
      static_cast<double>(stats.detection_cpu_ns) / 1e6);
  Log::write(LogLevel::info, "{}", engine::summary_line(summary));
  if (g_summary_path == nullptr) return;
  // A process that did nothing on the GPU (a launcher's own process loading the driver) writes
  // no summary: under `memtool run -- torchrun ...` it would overwrite a rank's.
  if (stats.events == 0) return;
  struct stat st {};
  if (::stat(g_summary_path->c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {  // a FIFO would block the exit
    Log::write(LogLevel::error, "cannot write the summary to {}: not a regular file", *g_summary_path);
    return;
  }
  errno = 0;
  if (!engine::write_summary_file(summary, *g_summary_path)) {
    Log::write(LogLevel::error, "cannot write the summary to {}: {}", *g_summary_path,
               errno != 0 ? std::strerror(errno) : "write failed");
  }
}

// The real driver functions the engine calls (never our wrappers: they would record the
// engine's own allocations and re-enter it).
DriverFunctions real_driver_functions() {
  DriverFunctions f;
#define MEMTOOL_REAL_hook(symbol) real_function(HookId::symbol)
#define MEMTOOL_REAL_driver(symbol) driver_symbol(#symbol)
#define MEMTOOL_REAL_DRIVER_FUNCTION(field, symbol, route) \
  f.field = reinterpret_cast<decltype(f.field)>(MEMTOOL_REAL_##route(symbol));
  MEMTOOL_DRIVER_FUNCTIONS(MEMTOOL_REAL_DRIVER_FUNCTION)
#undef MEMTOOL_REAL_DRIVER_FUNCTION
#undef MEMTOOL_REAL_driver
#undef MEMTOOL_REAL_hook
  return f;
}

// The driver functions the capture tracker calls (never hooked).
CaptureFunctions real_capture_functions() {
  CaptureFunctions f;
  f.stream_is_capturing = reinterpret_cast<decltype(f.stream_is_capturing)>(driver_symbol("cuStreamIsCapturing"));
  f.exchange_capture_mode =
      reinterpret_cast<decltype(f.exchange_capture_mode)>(driver_symbol("cuThreadExchangeStreamCaptureMode"));
  f.stream_get_flags = reinterpret_cast<decltype(f.stream_get_flags)>(driver_symbol("cuStreamGetFlags"));
  f.event_create = reinterpret_cast<decltype(f.event_create)>(driver_symbol("cuEventCreate"));
  f.event_record = reinterpret_cast<decltype(f.event_record)>(driver_symbol("cuEventRecord"));
  f.event_destroy = reinterpret_cast<decltype(f.event_destroy)>(driver_symbol("cuEventDestroy_v2"));
  return f;
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

  if (options.disable || options.strategy == "off") return State::pass_through;
  const engine::StrategyInfo* strategy = engine::find_strategy(options.strategy);
  if (strategy == nullptr) return State::pass_through;  // options.cpp validated the name
  const DriverFunctions functions = real_driver_functions();
  if (strategy->plans && !functions.complete()) {
    Log::write(LogLevel::error,
               "MEMTOOL_STRATEGY={}: the driver lacks functions memtool needs (cuMemAlloc_v2, "
               "cuMemFree_v2, cuEvent*, cuStreamWaitEvent); memtool stays out of the way",
               options.strategy);
    return State::pass_through;
  }
  if (!options.summary.empty()) {
    g_summary_path = new std::string(
        expand_path_template(path_template_for_process(options.summary, lookup), static_cast<long>(getpid()), lookup));
  }
  engine::set_log_sink(engine_log);
  engine::StrategyOptions strategy_options;
  strategy_options.name = options.strategy;
  strategy_options.pool.synchronous_planning = options.pool_sync_planning;
  strategy_options.pool.plan_time_limit_seconds = static_cast<double>(options.plan_seconds);
  strategy_options.pool.plan_wait_seconds = static_cast<double>(options.pool_plan_wait);
  strategy_options.budget_bytes = options.budget.bytes;
  strategy_options.budget_percent = options.budget.percent;
  strategy_options.swap.min_bytes = options.swap_min_bytes;
  strategy_options.swap.policy = options.swap_policy;
  strategy_options.swap.link_bytes_per_second = options.swap_link;
  if (!options.swap_dump.empty()) {
    strategy_options.swap.problem_path =
        expand_path_template(path_template_for_process(options.swap_dump, lookup), static_cast<long>(getpid()), lookup);
  }
  strategy_options.swap.mode =
      options.swap_mode == SwapMode::uvm ? engine::SwapMechanism::uvm : engine::SwapMechanism::explicit_copies;
  strategy_options.swap.host_limit_bytes = options.host_limit != 0 ? options.host_limit : half_of_host_memory();
  strategy_options.swap.verify = options.swap_verify;
  strategy_options.swap.selector_margin = options.swap_margin / 100.0;
  strategy_options.swap.selector_window = options.swap_window;
  strategy_options.swap.host_times = options.swap_host_times;
  strategy_options.swap.reserve_bytes = options.swap_reserve;  // the budget without MEMTOOL_BUDGET
  engine::ObserverOptions observer;
  observer.keep_windows = strategy->plans;
  observer.synchronous_detection = options.pool_sync_planning;
  if (strategy->plans) {
    Log::write(LogLevel::info, "{}: observing until the training step is found, then planning ({})", options.strategy,
               options.pool_sync_planning ? "on the calling thread" : "on a worker thread");
    engine::prepare_planner(strategy_options.pool);
  }

  std::unique_ptr<EventSink> sink;
  if (!options.trace.empty()) {
    // One file per rank of a job (rank.hpp), created at the first allocation or launch: a
    // launcher's process that only loads the driver writes none.
    const std::string path =
        expand_path_template(path_template_for_process(options.trace, lookup), static_cast<long>(getpid()), lookup);
    std::string error;
    if (g_log_fd >= 0 && names_open_file(path, options.log_file, g_log_fd)) {
      // The log would go into the trace (after its end record): the trace keeps the file.
      Log::set_fd(STDERR_FILENO);
      ::close(g_log_fd);
      g_log_fd = -1;
      Log::write(LogLevel::error,
                 "MEMTOOL_LOG_FILE and MEMTOOL_TRACE name the same file {}: it holds the trace; "
                 "memtool's messages go to stderr",
                 path);
    }
    sink = open_deferred_trace_sink(path, options.trace_limit, &error);
    if (!sink) {
      Log::write(LogLevel::error, "cannot write the trace to {}: {}; memtool stays out of the way", path, error);
      return State::pass_through;
    }
    sink->metadata("memtool_version", memtool_version());
    sink->metadata("pid", std::to_string(getpid()));
    sink->metadata("strategy", options.strategy);
    sink->metadata("cuda_header_version", std::to_string(CUDA_VERSION));
    if (const auto rank = rank_from_environment(lookup)) {  // memtool report reads a job's ranks by these
      sink->metadata("rank", std::to_string(rank->rank));
      sink->metadata("rank_source", rank->source);
      if (rank->world_size) sink->metadata("world_size", std::to_string(*rank->world_size));
      if (rank->local_rank) sink->metadata("local_rank", std::to_string(*rank->local_rank));
    }
    Log::write(LogLevel::info, "recording to {}", path);
    if (g_summary_path != nullptr && same_file(*g_summary_path, path)) {
      Log::write(LogLevel::error,
                 "MEMTOOL_SUMMARY and MEMTOOL_TRACE name the same file {}: it holds the trace; "
                 "the summary is not written",
                 path);
      g_summary_path = nullptr;
    }
    if (!strategy_options.swap.problem_path.empty() && same_file(strategy_options.swap.problem_path, path)) {
      Log::write(LogLevel::error,
                 "MEMTOOL_SWAP_DUMP and MEMTOOL_TRACE name the same file {}: it holds the trace; "
                 "the swap problem is not written",
                 path);
      strategy_options.swap.problem_path.clear();
    }
  }
  // Never deleted: hooks may run during exit.
  const bool tracing = sink != nullptr;
  g_recorder = new Recorder(options, std::move(sink), observer);
  if (tracing) start_trace_flushing(g_recorder);  // a killed run keeps its trace
  g_recorder->set_driver_resolver(resolve_driver_query);
  g_captures = new CaptureTracker(real_capture_functions());
  g_recorder->set_capture_tracker(g_captures);
  auto* device = new DriverDevice(functions, g_captures);
  g_device = device;
  g_runtimes = new ContextRuntimes(strategy_options, *device, g_recorder->observer(),
                                   reinterpret_cast<ContextRuntimes::CurrentContext>(driver_symbol("cuCtxGetCurrent")));
  g_runtimes->set_context_switch(reinterpret_cast<ContextRuntimes::PushContext>(driver_symbol("cuCtxPushCurrent_v2")),
                                 reinterpret_cast<ContextRuntimes::PopContext>(driver_symbol("cuCtxPopCurrent_v2")));
  g_runtimes->set_context_device(functions.ctx_get_device);
  g_ipc_bridge = new IpcBridge(functions);
  g_runtimes->set_ipc_bridge(g_ipc_bridge);
  g_runtimes->set_driver(device);
  g_tracer_options = new Options(options);  // start_tracer's, once initialise() is done
  pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  std::atexit(at_exit);
  return strategy->plans ? State::serving : State::recording;
}

}  // namespace

Recorder* initialise() noexcept {
  bool start_gpu_times = false;  // this thread decided: it starts the tracer, after the lock
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
      start_gpu_times = g_tracer_options != nullptr;
    }
  }
  if (start_gpu_times) {
    const HookScope scope;
    try {
      start_tracer(*g_tracer_options);
    } catch (...) {
      Log::write(LogLevel::warn, "CUPTI: the tracer failed to start; no GPU times");
    }
  }
  return active_recorder();
}

// Resolve our dlsym's real one before the program can call it from several threads.
__attribute__((constructor)) void bootstrap() { (void)real_dlsym(); }

}  // namespace memtool::interpose::preload

MEMTOOL_EXPORTED void memtool_iteration_mark(void) {
  using namespace memtool::interpose;
  using namespace memtool::interpose::preload;
  if (Recorder* recorder = active_recorder(); recorder != nullptr) {
    const HookScope scope;
    recorder->on_iteration_mark();
  }
}

MEMTOOL_EXPORTED const char* memtool_version(void) { return MEMTOOL_VERSION; }
