// Recorder: intercepted driver calls → trace events (see recorder.hpp).
#include "memtool/interpose/recorder.hpp"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <type_traits>

#include "kernel_name_matcher.hpp"
#include "memtool/interpose/event_clock.hpp"
#include "memtool/interpose/log.hpp"
#include "memtool/trace/signature.hpp"
#include "pointer_tables.hpp"
#include "stacks.hpp"

namespace memtool::interpose {

// A kernel as the recorder knows it after its first launch.
struct Recorder::KernelInfo {
  struct Param {
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
  };
  std::vector<Param> params;
  bool layout_known = false;
  std::string name;
  trace::StringId name_id;  // interned in the sink (or by the recorder when there is none)
  bool marks_iteration = false;
};

namespace {

constexpr std::size_t kMaxParams = 4096;       // a kernel has at most 32 KiB of parameters
constexpr std::size_t kMaxExtraBytes = 32768;  // bound on an `extra` packed buffer we scan

// Per-thread state uses the initial-exec TLS model: libmemtool.so is loaded at start-up
// (LD_PRELOAD), so its TLS is in the static block, and each access is one %fs-relative load
// instead of a __tls_get_addr call (measurable on the launch path).
#define MEMTOOL_TLS thread_local __attribute__((tls_model("initial-exec")))

std::uint32_t current_thread() {
  static MEMTOOL_TLS std::uint32_t tid = 0;  // 0: not asked yet (no thread has id 0)
  if (tid == 0) tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  return tid;
}

// The words of every argument that could hold a pointer (8-byte aligned in its parameter),
// gathered into `words`.
void append_param_words(const void* value, std::uint32_t size, std::vector<std::uint64_t>& words) {
  for (std::uint32_t offset = 0; offset + sizeof(std::uint64_t) <= size; offset += sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, static_cast<const unsigned char*>(value) + offset, sizeof(word));
    words.push_back(word);
  }
}

// `extra` = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END}.
bool extra_buffer(void** extra, const void*& buffer, std::size_t& size) {
  buffer = nullptr;
  size = 0;
  bool have_size = false;
  for (std::size_t i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
      std::memcpy(&size, extra[i + 1], sizeof(size));
      have_size = true;
    }
  }
  return buffer != nullptr && have_size;
}

// Recorders are numbered so that a thread's cached kernel can never belong to a recorder that
// was destroyed and whose address was reused (unit tests make many).
std::atomic<std::uint64_t> g_next_recorder_id{1};

// One thread's launch state, in one thread_local: the argument words of the launch in
// progress, the buffers they point into, and the kernels this thread launched lately. A
// training step cycles through tens to hundreds of kernels, launching a different one almost
// every time, so the kernel cache is a small direct-mapped table rather than "the last one".
// KernelInfo entries are never freed while their recorder lives (entries are keyed by the
// recorder's id as well), so the cache needs no lock.
struct KernelCacheEntry {
  CUfunction function = nullptr;
  std::uint64_t recorder = 0;
  const void* kernel = nullptr;  // const Recorder::KernelInfo*
};
constexpr std::size_t kKernelCacheSlots = 256;  // 6 KiB per launching thread, on the heap

struct LaunchScratch {
  std::vector<std::uint64_t> words;
  std::vector<std::uint64_t> touched;
  // Swap strategy: touched with what its pointer tables hold, what they may hold, what escaped.
  std::vector<std::uint64_t> expanded;
  std::vector<std::uint64_t> reached;
  std::vector<std::uint64_t> escaped;
  std::vector<KernelCacheEntry> kernels;  // kKernelCacheSlots entries once used

  KernelCacheEntry& slot(CUfunction function) {
    if (kernels.empty()) kernels.resize(kKernelCacheSlots);
    const auto key = reinterpret_cast<std::uintptr_t>(function);
    return kernels[((key >> 4) ^ (key >> 12)) & (kKernelCacheSlots - 1)];
  }
};
MEMTOOL_TLS LaunchScratch t_launch;

// The last launch/copy/memset event this thread recorded (Recorder::take_gpu_work_seq).
MEMTOOL_TLS std::uint64_t t_gpu_work_seq = Recorder::kNoGpuWork;

}  // namespace

Recorder::Recorder(const Options& options, std::unique_ptr<EventSink> sink, const engine::ObserverOptions& observer)
    : stacks_(options.stacks && sink != nullptr),
      sink_(std::move(sink)),
      observer_(observer),
      options_(options),
      id_(g_next_recorder_id.fetch_add(1, std::memory_order_relaxed)) {
  if (options_.strategy == "swap") tables_ = std::make_unique<PointerTables>(options_.swap_table_bytes);
  if (!options_.iteration_kernel.empty()) {
    // Validated with the options; a pattern that does not compile here marks nothing.
    if (auto matcher = KernelNameMatcher::compile(options_.iteration_kernel, nullptr)) {
      iteration_kernel_ = std::make_unique<const KernelNameMatcher>(std::move(*matcher));
    }
  }
}

Recorder::~Recorder() { shutdown(); }

void Recorder::set_driver_queries(const DriverQueries& queries) noexcept {
  std::call_once(queries_once_, [&] { queries_ = queries; });
}

void Recorder::ensure_driver_queries() {
  std::call_once(queries_once_, [&] {
    if (resolver_ == nullptr) return;
    queries_.func_get_param_info =
        reinterpret_cast<decltype(queries_.func_get_param_info)>(resolver_("cuFuncGetParamInfo"));
    queries_.kernel_get_param_info =
        reinterpret_cast<decltype(queries_.kernel_get_param_info)>(resolver_("cuKernelGetParamInfo"));
    queries_.func_get_name = reinterpret_cast<decltype(queries_.func_get_name)>(resolver_("cuFuncGetName"));
    queries_.kernel_get_name = reinterpret_cast<decltype(queries_.kernel_get_name)>(resolver_("cuKernelGetName"));
    if (queries_.func_get_param_info == nullptr) {
      Log::write(LogLevel::warn, "the driver has no cuFuncGetParamInfo: buffers touched by launches are not recorded");
    }
  });
}

void Recorder::disable(std::string_view reason) noexcept {
  if (active_.exchange(false)) {
    Log::write(LogLevel::error, "recording disabled, calls pass through unchanged: {}", reason);
  }
}

void Recorder::flush_trace() noexcept {
  try {
    std::lock_guard lock(emit_mutex_);
    if (sink_ && !closed_.load(std::memory_order_relaxed)) sink_->flush();
  } catch (...) {
    // A later flush, or the buffer filling, writes it.
  }
}

// --- emission --------------------------------------------------------------------------------

void Recorder::stamp_locked(trace::EventHeader& header) {
  header.seq = seq_++;
  header.time_ns = clock_.now_ns();
  header.thread = trace::ThreadId{current_thread()};
}

template <class Event>
void Recorder::emit_locked(Event& event) {
  stamp_locked(event.header);
  if constexpr (trace::EventTraits<Event>::role == trace::EventRole::gpu_work) t_gpu_work_seq = event.header.seq;
  if (sink_) sink_->write(event);
}

// A note of stream capture or graph memory (trace::GraphNote): into the trace only.
void Recorder::note_locked(trace::GraphNoteKind kind, std::uint64_t value, std::uint64_t size, std::uint64_t stream) {
  if (!sink_ || closed_.load(std::memory_order_relaxed)) return;
  trace::GraphNote note;
  note.kind = kind;
  note.value = value;
  note.size = size;
  note.stream = trace::StreamHandle{stream};
  emit_locked(note);
}

// An explicit iteration boundary goes to the observer as a mark, not as a token.
void Recorder::emit_mark_locked() {
  observer_.on_mark();
  if (closed_.load(std::memory_order_relaxed)) return;
  trace::IterationMarkEvent event;
  event.index = marks_++;
  emit_locked(event);
  if (const IterationListener listener = iteration_listener_.load(std::memory_order_acquire)) {
    listener(iteration_listener_context_);
  }
}

// An event the observer has no part in: stamped and written, fail-open on any exception.
template <class Event>
void Recorder::record_event(const char* step, Event event) noexcept {
  if (!active()) return;
  try {
    std::lock_guard lock(emit_mutex_);
    if (closed_.load(std::memory_order_relaxed)) return;
    emit_locked(event);
  } catch (const std::exception& e) {
    disable(e.what());
  } catch (...) {
    if (active_.exchange(false)) {
      Log::write(LogLevel::error,
                 "recording disabled, calls pass through unchanged: unknown failure while recording {}", step);
    }
  }
}

// Wraps a recording step: fail-open on any exception.
#define MEMTOOL_RECORD_STEP(step, ...)                  \
  do {                                                  \
    try {                                               \
      __VA_ARGS__                                       \
    } catch (const std::exception& e) {                 \
      disable(e.what());                                \
    } catch (...) {                                     \
      disable("unknown failure while recording " step); \
    }                                                   \
  } while (false)

void Recorder::on_alloc(std::uint64_t address, std::uint64_t size, trace::MemoryKind kind, std::uint64_t stream,
                        std::uint32_t owner) noexcept {
  // The driver gave the range to this buffer: it is no graph's any more (kept even when recording
  // stopped: a free of the buffer must reach its runtime, not pass to the driver as graph memory's).
  if (graphs_.any_graph_memory()) {
    try {
      graphs_.forget_graph_memory(address, size);
    } catch (...) {
      disable("unknown failure while forgetting graph memory");
    }
  }
  if (!active()) return;
  MEMTOOL_RECORD_STEP("an allocation", {
    std::array<std::uint64_t, 256> ips;  // filled by capture_stack; not zeroed on the hot path
    std::size_t depth = 0;
    if (stacks_) depth = detail::capture_stack(ips.data(), options_.stack_depth, 2);
    std::lock_guard lock(emit_mutex_);
    observer_.on_alloc(address, size, kind, stream, owner);
    if (tables_) tables_->on_alloc(address);
    if (closed_.load(std::memory_order_relaxed)) return;
    trace::AllocEvent event;
    event.address = address;
    event.size = size;
    event.kind = kind;
    event.stream = trace::StreamHandle{stream};
    if (depth > 0) event.stack = capture_stack_locked(std::span<const std::uint64_t>(ips.data(), depth));
    ++allocations_;
    peak_live_bytes_ = std::max(peak_live_bytes_, observer_.index().live_bytes());
    emit_locked(event);
  });
}

std::uint32_t Recorder::on_free(std::uint64_t address, trace::MemoryKind kind, std::uint64_t stream) noexcept {
  std::uint32_t owner = 0;
  if (!active()) return owner;
  MEMTOOL_RECORD_STEP("a free", {
    std::lock_guard lock(emit_mutex_);
    const auto buffer = observer_.on_free(address);
    if (buffer) owner = buffer->owner;
    if (buffer && tables_) tables_->on_free(buffer->base);
    if (closed_.load(std::memory_order_relaxed)) return owner;
    if (!buffer) {  // a double, interior or wild free: the driver refuses it, nothing is freed
      trace::FailedFreeEvent failed;
      failed.address = address;
      failed.kind = kind;
      failed.stream = trace::StreamHandle{stream};
      failed.reason = observer_.index().find(address) != nullptr ? trace::FailedFreeReason::interior
                                                                 : trace::FailedFreeReason::not_allocated;
      emit_locked(failed);
      return owner;
    }
    trace::FreeEvent event;
    event.address = address;
    event.kind = buffer ? buffer->kind : kind;
    event.stream = trace::StreamHandle{stream};
    ++frees_;
    emit_locked(event);
  });
  return owner;
}

void Recorder::on_unmap(std::uint64_t address, std::uint64_t size) noexcept {
  if (!active()) return;
  MEMTOOL_RECORD_STEP("an unmap", {
    std::lock_guard lock(emit_mutex_);
    const auto removed = observer_.on_unmap(address, address + size);
    if (tables_) {
      for (const engine::LiveBuffer& buffer : removed) tables_->on_free(buffer.base);
    }
    if (closed_.load(std::memory_order_relaxed)) return;
    for (const engine::LiveBuffer& buffer : removed) {
      trace::FreeEvent event;
      event.address = buffer.base;
      event.kind = buffer.kind;
      ++frees_;
      emit_locked(event);
    }
  });
}

// --- launches -----------------------------------------------------------------------------------

std::unique_ptr<Recorder::KernelInfo> Recorder::describe_kernel(CUfunction function) {
  ensure_driver_queries();
  const CaptureTracker::InternalCall internal(captures_);  // never a capture's business
  auto info = std::make_unique<KernelInfo>();
  // A launch handle is a CUfunction or, since CUDA 12, a CUkernel cast to one: ask as a
  // function first, then as a kernel. Past the last parameter the driver answers
  // CUDA_ERROR_INVALID_VALUE; any other error means "not this kind of handle".
  auto read_layout = [&](auto get) -> bool {
    info->params.clear();
    for (std::size_t i = 0; i < kMaxParams; ++i) {
      size_t offset = 0;
      size_t size = 0;
      const CUresult result = get(i, &offset, &size);
      if (result == CUDA_ERROR_INVALID_VALUE) return true;
      if (result != CUDA_SUCCESS) return false;
      info->params.push_back({static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size)});
    }
    return true;
  };
  // Through the function first, then as a library kernel (cuKernelGetParamInfo).
  const bool by_function =
      queries_.func_get_param_info != nullptr &&
      read_layout([&](std::size_t i, size_t* o, size_t* s) { return queries_.func_get_param_info(function, i, o, s); });
  const bool known =
      by_function ||
      (queries_.kernel_get_param_info != nullptr && read_layout([&](std::size_t i, size_t* o, size_t* s) {
         return queries_.kernel_get_param_info(reinterpret_cast<CUkernel>(function), i, o, s);
       }));
  if (known) {
    info->layout_known = true;
  } else {
    info->params.clear();
    MEMTOOL_LOG_ONCE(LogLevel::warn,
                     "cannot read the parameter layout of some kernels: their kernelParams are not scanned");
  }

  const char* name = nullptr;
  if (queries_.func_get_name == nullptr || queries_.func_get_name(&name, function) != CUDA_SUCCESS || name == nullptr) {
    name = nullptr;
    if (queries_.kernel_get_name != nullptr) {
      if (queries_.kernel_get_name(&name, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS) name = nullptr;
    }
  }
  info->name =
      name != nullptr ? std::string(name) : fmt::format("kernel@{:#x}", reinterpret_cast<std::uintptr_t>(function));
  info->marks_iteration = iteration_kernel_ && iteration_kernel_->matches(info->name);  // once per kernel
  return info;
}

const Recorder::KernelInfo* Recorder::kernel_info(CUfunction function) {
  KernelCacheEntry& entry = t_launch.slot(function);
  if (entry.function == function && entry.recorder == id_) return static_cast<const KernelInfo*>(entry.kernel);
  const KernelInfo* info = kernel_info_slow(function);
  entry = KernelCacheEntry{function, id_, info};
  return info;
}

const Recorder::KernelInfo* Recorder::kernel_info_slow(CUfunction function) {
  {
    std::shared_lock lock(kernels_mutex_);
    const auto it = kernels_.find(function);
    if (it != kernels_.end()) return it->second.get();
  }
  auto described = describe_kernel(function);  // driver calls: outside every lock
  {
    std::lock_guard emit_lock(emit_mutex_);
    described->name_id = intern_locked(described->name);
  }
  std::unique_lock lock(kernels_mutex_);
  auto [it, inserted] = kernels_.try_emplace(function, std::move(described));
  (void)inserted;  // another thread may have described it first: keep one
  return it->second.get();
}

bool Recorder::kernel_words(const KernelInfo& kernel, void** kernel_params, void** extra,
                            std::vector<std::uint64_t>& words) {
  const void* packed = nullptr;
  std::size_t packed_size = 0;
  if (kernel_params != nullptr && kernel.layout_known) {
    for (std::size_t i = 0; i < kernel.params.size(); ++i) {
      if (kernel_params[i] != nullptr) append_param_words(kernel_params[i], kernel.params[i].size, words);
    }
    return true;
  }
  if (extra != nullptr && extra_buffer(extra, packed, packed_size)) {
    // The packed buffer follows the parameters' alignment, so pointers sit on 8-byte words.
    append_param_words(packed, static_cast<std::uint32_t>(std::min(packed_size, kMaxExtraBytes)), words);
    return true;
  }
  return kernel_params == nullptr && extra == nullptr;  // no parameters at all
}

LaunchSeen Recorder::on_launch(CUfunction function, std::uint64_t stream, const LaunchArgs& args) noexcept {
  LaunchSeen seen;
  if (!active()) return seen;
  MEMTOOL_RECORD_STEP("a launch", {
    const KernelInfo* kernel = kernel_info(function);
    LaunchScratch& scratch = t_launch;
    std::vector<std::uint64_t>& t_words = scratch.words;
    std::vector<std::uint64_t>& t_touched = scratch.touched;
    t_words.clear();
    t_touched.clear();
    (void)kernel_words(*kernel, args.kernel_params, args.extra, t_words);
    std::lock_guard lock(emit_mutex_);
    if (kernel->marks_iteration) emit_mark_locked();
    observer_.on_launch(t_words, stream, trace::SignatureBuilder::launch_token(kernel->name_id), t_touched);
    seen.touched = t_touched;
    seen.marks_iteration = kernel->marks_iteration;
    seen.kernel = kernel->name;
    if (tables_) {
      // The strategies hear of what its pointer tables hold too; the trace keeps its arguments'.
      scratch.expanded.assign(t_touched.begin(), t_touched.end());
      scratch.reached.clear();
      scratch.escaped.clear();
      seen.reaches_all = tables_->on_launch(observer_.index(), scratch.expanded, scratch.reached, scratch.escaped);
      seen.touched = scratch.expanded;
      seen.reached = scratch.reached;
      seen.escaped = scratch.escaped;
    }
    if (closed_.load(std::memory_order_relaxed)) return seen;
    trace::LaunchEvent event;
    event.kernel = kernel->name_id;
    event.stream = trace::StreamHandle{stream};
    event.touched = t_touched;
    ++launches_;
    emit_locked(event);
  });
  return seen;
}

LaunchSeen Recorder::on_graph_launch(std::uint64_t graph_exec, std::uint64_t stream) noexcept {
  LaunchSeen seen;
  if (!active()) return seen;
  MEMTOOL_RECORD_STEP("a graph launch", {
    LaunchScratch& scratch = t_launch;
    scratch.words.clear();
    scratch.touched.clear();
    const GraphCatalog::Launch launch = graphs_.launch(graph_exec, scratch.words);
    if (!launch.known) {
      MEMTOOL_LOG_ONCE(LogLevel::warn,
                       "a CUDA graph launched that memtool did not see instantiated: its launches "
                       "count as touching every buffer");
    }
    std::lock_guard lock(emit_mutex_);
    // A graph launched for the first time starts a new phase of the program (torch.cuda.graph's
    // eager warm-up, then replays; a recompilation): what came before says nothing about the
    // step now, and would keep it from being found for as long as it stays in the detector's
    // view. A graph re-instantiated with the same shape is no new phase.
    if (launched_graph_shapes_.insert(launch.shape).second) observer_.program_changed();
    observer_.on_graph_launch(scratch.words, launch.opaque, stream,
                              trace::SignatureBuilder::graph_launch_token(launch.shape), scratch.touched);
    seen.touched = scratch.touched;
    seen.first_graph_launch = launch.first;
    ++graph_launches_;
    if (launch.opaque) ++opaque_graph_launches_;
    if (closed_.load(std::memory_order_relaxed)) return seen;
    trace::GraphLaunchEvent event;
    event.graph_exec = graph_exec;
    event.stream = trace::StreamHandle{stream};
    event.touched = scratch.touched;
    event.nodes_read = !launch.opaque;
    emit_locked(event);
  });
  return seen;
}

LaunchSeen Recorder::on_copy(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, trace::CopyKind kind,
                             std::uint64_t stream, bool async) noexcept {
  LaunchSeen seen;
  if (!active()) return seen;
  MEMTOOL_RECORD_STEP("a copy", {
    std::vector<std::uint64_t>& touched = t_launch.touched;
    touched.clear();
    std::lock_guard lock(emit_mutex_);
    if (kind == trace::CopyKind::unknown) {
      // Unified addressing (cuMemcpy): an address inside a tracked non-host buffer is device.
      auto on_device = [&](std::uint64_t address) {
        const engine::LiveBuffer* buffer = observer_.index().find(address);
        return buffer != nullptr && buffer->kind != trace::MemoryKind::pinned_host;
      };
      const bool d = on_device(dst);
      const bool s = on_device(src);
      kind = s ? (d ? trace::CopyKind::d2d : trace::CopyKind::d2h) : (d ? trace::CopyKind::h2d : trace::CopyKind::h2h);
    }
    observer_.on_transfer(dst, src, stream, engine::AccessKind::copy, trace::SignatureBuilder::copy_token(bytes, kind),
                          touched);
    if (tables_ && kind == trace::CopyKind::d2d) tables_->on_device_copy(observer_.index(), dst, src, bytes);
    seen.touched = touched;
    if (closed_.load(std::memory_order_relaxed)) return seen;
    trace::CopyEvent event;
    event.dst = dst;
    event.src = src;
    event.bytes = bytes;
    event.kind = kind;
    event.stream = trace::StreamHandle{stream};
    event.async = async;
    emit_locked(event);
  });
  return seen;
}

LaunchSeen Recorder::on_memset(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream, bool async) noexcept {
  LaunchSeen seen;
  if (!active()) return seen;
  MEMTOOL_RECORD_STEP("a memset", {
    std::vector<std::uint64_t>& touched = t_launch.touched;
    touched.clear();
    std::lock_guard lock(emit_mutex_);
    observer_.on_transfer(dst, 0, stream, engine::AccessKind::memset, trace::SignatureBuilder::memset_token(bytes),
                          touched);
    if (tables_) tables_->on_memset(observer_.index(), dst, bytes);
    seen.touched = touched;
    if (closed_.load(std::memory_order_relaxed)) return seen;
    trace::MemsetEvent event;
    event.dst = dst;
    event.bytes = bytes;
    event.stream = trace::StreamHandle{stream};
    event.async = async;
    emit_locked(event);
  });
  return seen;
}

LaunchSeen Recorder::on_touch(std::uint64_t address, std::uint64_t bytes, std::uint64_t stream) noexcept {
  LaunchSeen seen;
  if (!active()) return seen;
  MEMTOOL_RECORD_STEP("a touch", {
    std::vector<std::uint64_t>& touched = t_launch.touched;
    touched.clear();
    std::lock_guard lock(emit_mutex_);
    // A read of device memory by the device: the token of a device-to-device copy of its size.
    observer_.on_transfer(address, 0, stream, engine::AccessKind::copy,
                          trace::SignatureBuilder::copy_token(bytes, trace::CopyKind::d2d), touched);
    seen.touched = touched;
  });
  return seen;
}

std::optional<trace::MemoryKind> Recorder::buffer_kind(std::uint64_t address) noexcept {
  if (!active()) return std::nullopt;
  std::lock_guard lock(emit_mutex_);
  const engine::LiveBuffer* buffer = observer_.index().find(address);
  if (buffer == nullptr) return std::nullopt;
  return buffer->kind;
}

void Recorder::on_upload(std::uint64_t dst, const void* src, std::uint64_t bytes, bool dst_on_device,
                         bool readable) noexcept {
  if (!tables_ || !active() || src == nullptr) return;
  MEMTOOL_RECORD_STEP("an upload", {
    std::lock_guard lock(emit_mutex_);
    const engine::BufferIndex& index = observer_.index();
    // A unified copy (cuMemcpy) is an upload when its destination is a device buffer memtool
    // tracks and its source host memory. Its source is read only when memtool knows it is host
    // memory (pinned memory it tracks): an address it does not know may be device memory (a
    // module's global), which the host must not touch. Else what it wrote is unknown.
    const engine::LiveBuffer* from = index.find(reinterpret_cast<std::uintptr_t>(src));
    if (from != nullptr && from->kind != trace::MemoryKind::pinned_host) return;
    const engine::LiveBuffer* to = index.find(dst);
    if (!dst_on_device) {
      if (to == nullptr || to->kind == trace::MemoryKind::pinned_host) return;
      readable = readable && from != nullptr;
    }
    if (readable) {
      tables_->on_upload(index, dst, static_cast<const unsigned char*>(src), bytes);
    } else {
      tables_->on_unread_upload(index, dst);
    }
  });
}

void Recorder::on_sync(trace::SyncKind kind, std::uint64_t stream) noexcept {
  record_event("a synchronisation",
               trace::SyncEvent{.header = {}, .kind = kind, .stream = trace::StreamHandle{stream}});
}

void Recorder::on_stream_create(std::uint64_t stream, std::uint32_t flags, std::int32_t priority) noexcept {
  record_event("a stream creation",
               trace::StreamCreateEvent{
                   .header = {}, .stream = trace::StreamHandle{stream}, .flags = flags, .priority = priority});
}

void Recorder::on_iteration_mark() noexcept {
  if (!active()) return;
  MEMTOOL_RECORD_STEP("an iteration mark", {
    std::lock_guard lock(emit_mutex_);
    emit_mark_locked();
  });
}

// --- GPU times ------------------------------------------------------------------------------

std::uint64_t Recorder::take_gpu_work_seq() noexcept {
  const std::uint64_t seq = t_gpu_work_seq;
  t_gpu_work_seq = kNoGpuWork;
  return seq;
}

void Recorder::on_gpu_times(std::span<const trace::GpuTimeRecord> records,
                            std::span<const std::string_view> kernel_names) noexcept {
  if (!sink_) return;
  MEMTOOL_RECORD_STEP("GPU times", {
    std::lock_guard lock(emit_mutex_);
    if (closed_.load(std::memory_order_relaxed)) return;
    for (std::size_t i = 0; i < records.size(); ++i) {
      trace::GpuTimeRecord record = records[i];
      if (!record.joined() && record.kind == trace::GpuWorkKind::kernel && i < kernel_names.size() &&
          !kernel_names[i].empty()) {
        record.kernel = intern_locked(kernel_names[i]);
      }
      sink_->write_gpu_time(record);
    }
  });
}

void Recorder::set_iteration_listener(IterationListener listener, void* context) noexcept {
  std::lock_guard lock(emit_mutex_);
  iteration_listener_context_ = context;
  iteration_listener_.store(listener, std::memory_order_release);
}

trace::StringId Recorder::intern_locked(std::string_view text) {
  if (sink_ && !closed_.load(std::memory_order_relaxed)) return sink_->intern(text);
  // No trace file: the detector still needs one id per name.
  const auto [it, inserted] = names_.try_emplace(std::string(text), static_cast<std::uint32_t>(names_.size()));
  (void)inserted;
  return trace::StringId{it->second};
}

// --- stacks ------------------------------------------------------------------------------------

trace::StackId Recorder::capture_stack_locked(std::span<const std::uint64_t> ips) {
  write_new_modules_locked();
  std::array<trace::StackFrame, 256> frames{};
  const std::size_t n = std::min(ips.size(), frames.size());
  for (std::size_t i = 0; i < n; ++i) frames[i].ip = ips[i];
  return sink_->intern_stack(std::span<const trace::StackFrame>(frames.data(), n));
}

void Recorder::write_new_modules_locked() {
  const unsigned long long loaded = detail::loaded_object_count();
  if (loaded == modules_seen_) return;
  modules_seen_ = loaded;
  detail::for_each_code_segment([&](std::uint64_t start, std::uint64_t end, std::uint64_t offset, const char* path) {
    if (std::find(written_module_starts_.begin(), written_module_starts_.end(), start) !=
        written_module_starts_.end()) {
      return;
    }
    written_module_starts_.push_back(start);
    trace::ModuleMapping module;
    module.start = start;
    module.end = end;
    module.file_offset = offset;
    module.path = sink_->intern(path);
    sink_->module(module);
  });
}

// --- life cycle ---------------------------------------------------------------------------------

void Recorder::shutdown() noexcept {
  active_.store(false);
  try {
    std::lock_guard lock(emit_mutex_);
    if (closed_.exchange(true)) return;
    if (sink_) sink_->close();
    observer_.stop();  // what is still queued is processed by the next stats()
  } catch (...) {
    // Nothing left to do: the program is exiting.
  }
}

void Recorder::before_fork() noexcept {
  emit_mutex_.lock();
  observer_.before_fork();
}
void Recorder::after_fork_in_parent() noexcept {
  observer_.after_fork_in_parent();
  emit_mutex_.unlock();
}
void Recorder::after_fork_in_child() noexcept {
  // Only this thread exists now; nobody else can hold a lock we need.
  active_.store(false);
  closed_.store(true);
  if (sink_) sink_->abandon_after_fork();
  observer_.after_fork_in_child();
  emit_mutex_.unlock();
}

RecorderStats Recorder::stats() noexcept {
  std::lock_guard lock(emit_mutex_);
  RecorderStats stats;
  stats.events = seq_;
  stats.allocations = allocations_;
  stats.frees = frees_;
  stats.launches = launches_;
  stats.live_bytes = observer_.index().live_bytes();
  stats.peak_live_bytes = peak_live_bytes_;
  stats.live_buffers = observer_.index().size();
  stats.period = observer_.period_now();
  stats.step = observer_.step_now();
  stats.detection_cpu_ns = observer_.detection_cpu_ns();
  stats.captured_work = captured_work_;
  stats.graph_launches = graph_launches_;
  stats.opaque_graph_launches = opaque_graph_launches_;
  stats.graph_allocations = graph_allocations_;
  stats.graph_frees = graph_frees_;
  stats.graphs = graphs_.totals();
  return stats;
}

}  // namespace memtool::interpose
