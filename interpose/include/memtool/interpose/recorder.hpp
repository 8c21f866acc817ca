// The recorder: turns intercepted driver calls into what the engine observes and what the trace
// file gets.
//
// Each call becomes an event with a sequence number, a monotonic timestamp, the calling
// thread and the stream; events go to the sink (the trace file) and to the engine's Observer
// (memtool/engine/observer.hpp: the index of live buffers, the step of the training loop found
// on a worker thread, iteration windows), under one lock, so the two always agree. Launches are
// resolved to kernel names and to the live buffers their arguments point into (the kernel's
// parameter layout comes from the driver, once per kernel).
// Every public member is noexcept and fail-open: an internal failure disables recording, is
// logged once, and never reaches the program.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memtool/engine/observer.hpp"
#include "memtool/interpose/cuda_api.hpp"
#include "memtool/interpose/capture_tracker.hpp"
#include "memtool/interpose/graph_catalog.hpp"
#include "memtool/interpose/event_clock.hpp"
#include "memtool/interpose/event_sink.hpp"
#include "memtool/interpose/options.hpp"
#include "memtool/trace/event.hpp"

namespace memtool::interpose {

class KernelNameMatcher;

// The driver's introspection functions the recorder calls itself (never hooked). In the
// preload they come from the real driver; unit tests pass fakes.
struct DriverQueries {
  CUresult (*func_get_param_info)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*kernel_get_param_info)(CUkernel, size_t, size_t*, size_t*) = nullptr;
  CUresult (*func_get_name)(const char**, CUfunction) = nullptr;
  CUresult (*kernel_get_name)(const char**, CUkernel) = nullptr;
};

struct RecorderStats {
  std::uint64_t events = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t launches = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_buffers = 0;
  std::uint64_t peak_live_bytes = 0;
  std::optional<std::uint64_t> period;  // events per iteration, once the detector confirmed one
  std::optional<engine::Step> step;     // the training step the engine found
  std::uint64_t detection_cpu_ns = 0;   // CPU time of the detection thread (off the program's threads)
  // Stream capture and graphs (issue 32).
  std::uint64_t captured_work = 0;          // launches, copies, memsets and graph launches captured, not run
  std::uint64_t graph_launches = 0;         // cuGraphLaunch outside captures: work items
  std::uint64_t opaque_graph_launches = 0;  // of those, of graphs memtool could not read
  std::uint64_t graph_allocations = 0;      // allocations on capturing streams (graph memory)
  std::uint64_t graph_frees = 0;            // frees of graph memory, in a capture or outside
  GraphCatalog::Totals graphs;              // what is known now
};

// Launch arguments as the driver receives them.
struct LaunchArgs {
  void** kernel_params = nullptr;
  void** extra = nullptr;
};

// What a launch, copy or memset was found to do: the buffers it touches (bases, from the index;
// valid on this thread until its next call) and, for a launch, whether the kernel marks an
// iteration (MEMTOOL_ITERATION_KERNEL). The strategies order their streams from it. Under the
// swap strategy a launch also carries what pointer tables tell (pointer_tables.hpp): `touched`
// then includes what the tables among its arguments hold, `reached` what they may hold,
// `escaped` the buffers whose addresses went where memtool cannot follow since the last launch,
// and `reaches_all` that it may reach any buffer (engine::WorkItem).
struct LaunchSeen {
  std::span<const std::uint64_t> touched;
  bool marks_iteration = false;
  bool first_graph_launch = false;  // a graph launch that makes the driver take its graph memory
  std::span<const std::uint64_t> reached;
  std::span<const std::uint64_t> escaped;
  bool reaches_all = false;
  std::string_view kernel;  // a launch's kernel name
};

class PointerTables;

class alignas(64) Recorder {  // aligned: its hot fields start a cache line
 public:
  // `sink` may be null (no trace file: detection and logging only).
  Recorder(const Options& options, std::unique_ptr<EventSink> sink, const engine::ObserverOptions& observer = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Installs the driver's introspection functions; `resolve` is called once, at the first
  // launch, when the driver is surely loaded.
  using Resolver = void* (*)(const char* name);
  void set_driver_resolver(Resolver resolve) noexcept { resolver_ = resolve; }
  void set_driver_queries(const DriverQueries& queries) noexcept;

  [[nodiscard]] bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  // Record a free *before* the real free (the address may be reused at once), an allocation
  // only *after* it succeeded.
  // `owner`: the runtime (context) that served it. on_free returns the owner of the freed
  // buffer (0 when unknown).
  void on_alloc(std::uint64_t address, std::uint64_t size, trace::MemoryKind kind, std::uint64_t stream,
                std::uint32_t owner = 0) noexcept;
  std::uint32_t on_free(std::uint64_t address, trace::MemoryKind kind, std::uint64_t stream) noexcept;
  void on_unmap(std::uint64_t address, std::uint64_t size) noexcept;  // VMM: frees what was mapped there
  LaunchSeen on_launch(CUfunction function, std::uint64_t stream, const LaunchArgs& args) noexcept;
  // A launch of an executable graph outside a capture: one work item, its buffers read from its
  // nodes (every live buffer when memtool could not read them all).
  LaunchSeen on_graph_launch(std::uint64_t graph_exec, std::uint64_t stream) noexcept;
  // `kind` unknown: classified from the index (an address in a device buffer is device).
  LaunchSeen on_copy(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, trace::CopyKind kind,
                     std::uint64_t stream, bool async) noexcept;
  LaunchSeen on_memset(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream, bool async) noexcept;
  // Stream work that reads memory at `address` and has no trace event of its own (a wait on a
  // value, a prefetch): an access for the observer and the strategies, not written to the trace.
  LaunchSeen on_touch(std::uint64_t address, std::uint64_t bytes, std::uint64_t stream) noexcept;
  // The kind of the live buffer holding `address`, as the program allocated it; nullopt when
  // memtool tracks none there (or recording stopped).
  [[nodiscard]] std::optional<trace::MemoryKind> buffer_kind(std::uint64_t address) noexcept;
  // After a copy from host memory `src` succeeded (the driver accepted the pointer): the
  // addresses its bytes held are what `dst` holds now (swap strategy only; pointer_tables.hpp).
  // `dst_on_device`: an HtoD copy, whose source is host memory by its contract (else a unified
  // copy: an upload only into a tracked device buffer, its source read only if it is pinned
  // memory memtool tracks); `readable`: the `bytes` bytes at `src` are contiguous (not a pitched
  // 2D/3D copy).
  void on_upload(std::uint64_t dst, const void* src, std::uint64_t bytes, bool dst_on_device, bool readable) noexcept;
  void on_sync(trace::SyncKind kind, std::uint64_t stream) noexcept;
  void on_stream_create(std::uint64_t stream, std::uint32_t flags, std::int32_t priority) noexcept;
  void on_iteration_mark() noexcept;

  // --- stream capture and CUDA graphs (issue 32; recorder_graphs.cpp) ---
  // The process's capture tracker: the recorder's own driver queries run as its internal calls.
  void set_capture_tracker(CaptureTracker* captures) noexcept { captures_ = captures; }
  [[nodiscard]] CaptureTracker* captures() const noexcept { return captures_; }
  // The graph queries (unit tests; the preload resolves them at the first instantiation).
  void set_graph_queries(const GraphQueries& queries) noexcept;
  // A capture begun on `stream` (in `mode`), or ended there with `result`: trace notes.
  void on_capture_begin(std::uint64_t stream, int mode) noexcept;
  void on_capture_end(std::uint64_t stream, int result) noexcept;
  // Work queued on a capturing stream is recorded into the graph, not run: it touches nothing
  // now, so the observer never sees it (no tick, no access, no time). `kind`: 0 a launch, 1 a
  // copy, 2 a memset, 3 a graph launch (trace::GraphNoteKind::captured_work).
  void on_captured_work(std::uint8_t kind, std::uint64_t stream) noexcept;
  // Graph memory: an allocation on a capturing stream (after it succeeded); a free of graph
  // memory, in a capture or outside one. on_graph_free says whether `address` is graph memory
  // (then the free is the driver's alone: the caller passes it straight through).
  void on_graph_alloc(std::uint64_t address, std::uint64_t size, std::uint64_t stream) noexcept;
  bool on_graph_free(std::uint64_t address, std::uint64_t stream, bool in_capture) noexcept;
  [[nodiscard]] bool has_graph_memory() const noexcept { return graphs_.any_graph_memory(); }
  // An executable graph instantiated, or updated as a whole, from `graph`: its nodes are read.
  void on_graph_exec(std::uint64_t graph_exec, CUgraph graph) noexcept;
  // One node of an executable graph got new parameters.
  void on_graph_exec_kernel(std::uint64_t graph_exec, CUgraphNode node, CUfunction function, void** kernel_params,
                            void** extra) noexcept;
  void on_graph_exec_memcpy(std::uint64_t graph_exec, CUgraphNode node, const CUDA_MEMCPY3D& copy) noexcept;
  void on_graph_exec_memset(std::uint64_t graph_exec, CUgraphNode node, CUdeviceptr dst) noexcept;
  void on_graph_exec_child(std::uint64_t graph_exec, CUgraphNode node, CUgraph child) noexcept;
  void on_graph_exec_opaque_node(std::uint64_t graph_exec, CUgraphNode node) noexcept;
  void on_graph_exec_destroy(std::uint64_t graph_exec) noexcept;
  // cuGraphUpload of an executable graph: true the first time (the driver takes its memory).
  bool on_graph_upload(std::uint64_t graph_exec) noexcept;
  // The device bytes of graph memory the driver holds (its graph pool's reserve, asked anew
  // when `refresh`), plus what executable graphs never launched or uploaded will take: what
  // the strategies count against a budget (Resource::set_graph_memory).
  [[nodiscard]] std::uint64_t graph_memory_bytes(bool refresh) noexcept;

  // --- GPU times (cupti_tracer/) ---
  // The seq of the launch, copy or memset event this thread recorded last, taken once (the
  // preload pushes it as CUPTI's external correlation id around the real call); kNoGpuWork
  // when none was recorded since the last take.
  static constexpr std::uint64_t kNoGpuWork = ~std::uint64_t{0};
  [[nodiscard]] static std::uint64_t take_gpu_work_seq() noexcept;
  // GPU times into the trace. `kernel_names[i]`: CUPTI's name of records[i], interned for
  // kernels that name no event.
  void on_gpu_times(std::span<const trace::GpuTimeRecord> records,
                    std::span<const std::string_view> kernel_names) noexcept;
  // Told of every iteration mark (explicit or MEMTOOL_ITERATION_KERNEL), under the recorder's
  // lock: it must return at once (the tracer's flush request).
  using IterationListener = void (*)(void* context) noexcept;
  void set_iteration_listener(IterationListener listener, void* context) noexcept;

  // Fail-open: stop recording for good (logged once with `reason`).
  void disable(std::string_view reason) noexcept;
  // Pushes the trace's buffered records to its file, under the lock every sink call takes (the
  // preload's flush thread: once a second and on SIGTERM/SIGINT/SIGHUP, so a killed run keeps
  // its trace). A no-op without a trace or once it is closed.
  void flush_trace() noexcept;
  // Ends the trace: no more events, the file is closed. Idempotent.
  void shutdown() noexcept;
  // fork(): hold the recorder still around the fork; the child then forgets the trace.
  void before_fork() noexcept;
  void after_fork_in_parent() noexcept;
  void after_fork_in_child() noexcept;

  // Exact as of this call: iteration detection catches up with every event recorded so far.
  [[nodiscard]] RecorderStats stats() noexcept;

  // The engine's observer, for the runtimes: its boundary feed and period feedback are
  // thread-safe; nothing else of it may be used outside the recorder.
  [[nodiscard]] engine::Observer& observer() noexcept { return observer_; }

 private:
  struct KernelInfo;

  const KernelInfo* kernel_info(CUfunction function);  // this thread's kernel cache, or the slow path
  // The words of a launch's parameters (kernelParams with the kernel's layout, else `extra`'s
  // packed buffer) appended to `words`; false when neither can be read.
  bool kernel_words(const KernelInfo& kernel, void** kernel_params, void** extra, std::vector<std::uint64_t>& words);
  KernelWords graph_kernel_words();
  void ensure_graph_queries();
  const KernelInfo* kernel_info_slow(CUfunction function);
  std::unique_ptr<KernelInfo> describe_kernel(CUfunction function);
  void ensure_driver_queries();
  trace::StackId capture_stack_locked(std::span<const std::uint64_t> ips);
  void write_new_modules_locked();
  void stamp_locked(trace::EventHeader& header);
  void emit_mark_locked();
  trace::StringId intern_locked(std::string_view text);
  template <class Event>
  void emit_locked(Event& event);
  void note_locked(trace::GraphNoteKind kind, std::uint64_t value, std::uint64_t size, std::uint64_t stream);
  template <class Event>
  void record_event(const char* step, Event event) noexcept;

  // The hot path's state first, packed into the first cache lines: after the driver's own
  // work (system calls) a recorded call finds little in cache, and each further line it
  // touches costs about as much as all its arithmetic.
  mutable std::mutex emit_mutex_;  // guards everything down to the cold part, and the sink
  std::atomic<bool> active_{true};
  std::atomic<bool> closed_{false};
  const bool stacks_;  // MEMTOOL_STACKS and a trace file
  std::uint64_t seq_ = 0;
  std::unique_ptr<EventSink> sink_;
  EventClock clock_;  // timestamps, read under emit_mutex_ (one cache line)
  std::uint64_t allocations_ = 0;
  std::uint64_t frees_ = 0;
  std::uint64_t launches_ = 0;
  std::uint64_t peak_live_bytes_ = 0;
  engine::Observer observer_;  // its index's bounds and counts come first
  std::uint64_t captured_work_ = 0;
  std::uint64_t graph_launches_ = 0;
  std::uint64_t opaque_graph_launches_ = 0;
  std::uint64_t graph_allocations_ = 0;
  std::uint64_t graph_frees_ = 0;
  std::unordered_set<std::uint64_t> launched_graph_shapes_;

  // The cold part: set up once, or touched by the slow paths only.
  const Options options_;
  const std::uint64_t id_;  // unique per recorder: keys the per-thread kernel cache
  std::uint64_t marks_ = 0;
  unsigned long long modules_seen_ = 0;  // dl_iterate_phdr's load count at the last module dump
  std::vector<std::uint64_t> written_module_starts_;
  std::unordered_map<std::string, std::uint32_t> names_;  // kernel names when there is no sink

  // Kernel layouts and names, one entry per CUfunction, built at its first launch.
  mutable std::shared_mutex kernels_mutex_;
  std::unordered_map<CUfunction, std::unique_ptr<KernelInfo>> kernels_;
  std::unique_ptr<const KernelNameMatcher> iteration_kernel_;  // MEMTOOL_ITERATION_KERNEL (linear time)

  std::atomic<IterationListener> iteration_listener_{nullptr};
  void* iteration_listener_context_ = nullptr;

  Resolver resolver_ = nullptr;
  std::once_flag queries_once_;
  DriverQueries queries_;

  CaptureTracker* captures_ = nullptr;
  GraphCatalog graphs_;
  std::atomic<std::uint64_t> graph_pool_reserved_{0};  // the driver's, as last asked
  std::once_flag graph_queries_once_;
  GraphQueries graph_queries_;
  // Swap strategy: which buffers hold the addresses of which (under emit_mutex_); null otherwise.
  std::unique_ptr<PointerTables> tables_;
};

}  // namespace memtool::interpose
