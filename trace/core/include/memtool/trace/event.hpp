// The event model: what a traced program did, one record per driver call we care about.
//
// Events carry raw, process-local facts (addresses, stream handles, thread ids); offline
// analysis normalises them into stable buffer ids (see memtool/trace/model.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "memtool/trace/ids.hpp"

namespace memtool::trace {

enum class EventKind : std::uint8_t {
  alloc = 1,
  free = 2,
  launch = 3,
  copy = 4,
  memset = 5,
  sync = 6,
  iteration_mark = 7,
  stream_create = 8,
  graph_launch = 9,  // its buffers read from its graph's nodes (touched), unless opaque
};

enum class MemoryKind : std::uint8_t {
  device = 0,       // cuMemAlloc / cuMemAllocPitch
  async = 1,        // cuMemAllocAsync / cuMemAllocFromPoolAsync (stream ordered)
  managed = 2,      // cuMemAllocManaged
  vmm = 3,          // cuMemCreate + cuMemMap
  pinned_host = 4,  // cuMemAllocHost / cuMemHostAlloc
};

enum class CopyKind : std::uint8_t { unknown = 0, h2d = 1, d2h = 2, d2d = 3, h2h = 4 };

enum class SyncKind : std::uint8_t {
  context = 0,           // cuCtxSynchronize
  stream = 1,            // cuStreamSynchronize
  event = 2,             // cuEventSynchronize
  stream_wait_event = 3  // cuStreamWaitEvent (device-side ordering, no host wait)
};

// Fields every event has. `seq` orders events of one process; `time_ns` is a host
// monotonic timestamp; `thread` is the calling OS thread.
struct EventHeader {
  std::uint64_t seq = 0;
  std::uint64_t time_ns = 0;
  ThreadId thread{0};
};

struct AllocEvent {
  EventHeader header;
  std::uint64_t address = 0;
  std::uint64_t size = 0;  // bytes the program asked for
  MemoryKind kind = MemoryKind::device;
  StreamHandle stream{0};
  StackId stack;  // invalid when stacks are not recorded
};

struct FreeEvent {
  EventHeader header;
  std::uint64_t address = 0;
  MemoryKind kind = MemoryKind::device;
  StreamHandle stream{0};
};

// A free that freed nothing: its address was no live buffer's base — a double free, a pointer
// into a buffer (interior) or an address never allocated (wild). The driver refuses it. Kept
// apart from FreeEvent so that no analysis ever ends a buffer there; offline, an address freed
// before in the trace tells a double free from a wild one.
enum class FailedFreeReason : std::uint8_t {
  not_allocated = 0,  // no live buffer there: freed before (double) or never allocated (wild)
  interior = 1,       // inside a live buffer, not at its base
};

struct FailedFreeEvent {
  EventHeader header;
  std::uint64_t address = 0;
  MemoryKind kind = MemoryKind::device;
  StreamHandle stream{0};
  FailedFreeReason reason = FailedFreeReason::not_allocated;
};

struct LaunchEvent {
  EventHeader header;
  StringId kernel;  // interned kernel name
  StreamHandle stream{0};
  std::span<const std::uint64_t> touched;  // base addresses of the buffers the arguments point into
};

struct GraphLaunchEvent {
  EventHeader header;
  std::uint64_t graph_exec = 0;
  StreamHandle stream{0};
  // What its graph's nodes point into when it was launched (base addresses), or, `opaque`,
  // unknown: memtool could not read every node (it then counts as touching every buffer).
  // Traces from before these fields have none and read as opaque.
  std::span<const std::uint64_t> touched;
  bool opaque = true;
};

// Stream capture and graph memory, as the recorder saw them (issue 32). Not an event: the
// trace's running state is neither read nor changed by it beyond its own fields, and offline
// analysis keeps no buffer for graph memory (the driver fixes its address for the graph's life).
enum class GraphNoteKind : std::uint8_t {
  capture_begin = 0,   // value: the capture mode (CUstreamCaptureMode)
  capture_end = 1,     // value: cuStreamEndCapture's result (0: a graph was made)
  graph_alloc = 2,     // value: address, size: bytes (an allocation on a capturing stream)
  graph_free = 3,      // value: address, size: 1 in a capture (a free node), 0 outside one
  exec_created = 4,    // value: the executable graph, size: its graph memory bytes
  exec_destroyed = 5,  // value: the executable graph
  captured_work = 6,   // value: 0 launch, 1 copy, 2 memset, 3 graph launch (a child graph node)
};

struct GraphNote {
  EventHeader header;
  GraphNoteKind kind = GraphNoteKind::capture_begin;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
  StreamHandle stream{0};
};

struct CopyEvent {
  EventHeader header;
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
  CopyKind kind = CopyKind::unknown;
  StreamHandle stream{0};
  bool async = false;
};

struct MemsetEvent {
  EventHeader header;
  std::uint64_t dst = 0;
  std::uint64_t bytes = 0;
  StreamHandle stream{0};
  bool async = false;
};

struct SyncEvent {
  EventHeader header;
  SyncKind kind = SyncKind::context;
  StreamHandle stream{0};
};

// An explicit iteration boundary (memtool_iteration_mark(), MEMTOOL_ITERATION_KERNEL, or an
// importer that knows where iterations start). `index` counts marks from 0.
struct IterationMarkEvent {
  EventHeader header;
  std::uint64_t index = 0;
};

struct StreamCreateEvent {
  EventHeader header;
  StreamHandle stream{0};
  std::uint32_t flags = 0;
  std::int32_t priority = 0;
};

// What the CUPTI tracer (cupti_tracer/) saw run on the GPU.
enum class GpuWorkKind : std::uint8_t { kernel = 0, copy = 1, memset = 2 };

// When one kernel, copy or memset ran on the GPU, in the trace's clock (the events' host
// CLOCK_MONOTONIC nanoseconds), joined to the launch/copy/memset event it ran for by that
// event's seq. Not an event (no header): it is written when the tracer's activity buffers come
// back, after the event it belongs to. A record with no event is work CUPTI saw that no hook
// recorded (it bypassed memtool); CUPTI's kernel name then says what it was.
struct GpuTimeRecord {
  static constexpr std::uint64_t kNoEvent = ~std::uint64_t{0};
  GpuWorkKind kind = GpuWorkKind::kernel;
  std::uint64_t event_seq = kNoEvent;  // seq of the event it ran for; kNoEvent: none recorded
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // >= start_ns
  std::uint32_t device = 0;
  std::uint32_t stream = 0;  // CUPTI's stream id (a small number per stream, not the handle)
  StringId kernel;           // kernels with no event: the name CUPTI gave
  std::uint64_t bytes = 0;   // copies and memsets, as CUPTI counted them
  CopyKind copy_kind = CopyKind::unknown;  // copies

  [[nodiscard]] bool joined() const { return event_seq != kNoEvent; }
  [[nodiscard]] std::uint64_t duration_ns() const { return end_ns - start_ns; }
};

// One frame of an allocation call stack: a raw instruction pointer (symbolised offline) or,
// for importers, an already symbolic frame. Unknown parts are invalid / zero.
struct StackFrame {
  std::uint64_t ip = 0;
  StringId function;
  StringId file;
  std::uint32_t line = 0;
};

// A mapped object of the traced process, for offline symbolisation of raw instruction pointers.
struct ModuleMapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t file_offset = 0;
  StringId path;
};

// One reader, many consumers: every analysis subclasses this and overrides what it needs.
// Definitions (strings, stacks) always arrive before the events that use them.
class EventVisitor {
 public:
  EventVisitor() = default;
  EventVisitor(const EventVisitor&) = default;
  EventVisitor& operator=(const EventVisitor&) = default;
  virtual ~EventVisitor() = default;

  virtual void on_metadata(std::string_view /*key*/, std::string_view /*value*/) {}
  virtual void on_string(StringId /*id*/, std::string_view /*text*/) {}
  virtual void on_stack(StackId /*id*/, std::span<const StackFrame> /*frames*/) {}
  virtual void on_module(const ModuleMapping& /*module*/) {}

  virtual void on_alloc(const AllocEvent& /*event*/) {}
  virtual void on_free(const FreeEvent& /*event*/) {}
  virtual void on_failed_free(const FailedFreeEvent& /*event*/) {}
  virtual void on_launch(const LaunchEvent& /*event*/) {}
  virtual void on_graph_launch(const GraphLaunchEvent& /*event*/) {}
  virtual void on_graph_note(const GraphNote& /*note*/) {}
  virtual void on_copy(const CopyEvent& /*event*/) {}
  virtual void on_memset(const MemsetEvent& /*event*/) {}
  virtual void on_sync(const SyncEvent& /*event*/) {}
  virtual void on_iteration_mark(const IterationMarkEvent& /*event*/) {}
  virtual void on_stream_create(const StreamCreateEvent& /*event*/) {}
  // GPU times arrive after the events they refer to.
  virtual void on_gpu_time(const GpuTimeRecord& /*record*/) {}
};

[[nodiscard]] std::string_view to_string(EventKind kind);
[[nodiscard]] std::string_view to_string(MemoryKind kind);
[[nodiscard]] std::string_view to_string(CopyKind kind);
[[nodiscard]] std::string_view to_string(SyncKind kind);
[[nodiscard]] std::string_view to_string(GpuWorkKind kind);

}  // namespace memtool::trace
