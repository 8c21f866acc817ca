// The event model: what a traced program did, one record per driver call we care about.
//
// Events carry raw, process-local facts (addresses, stream handles, thread ids); offline
// analysis normalises them into stable buffer ids (see memtool/trace/model.hpp). The kinds of
// event, their fields and how each field travels in a trace are one table, events.def: the
// structs, EventKind, EventTraits and the EventVisitor callbacks here are generated from it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "memtool/trace/ids.hpp"

namespace memtool::trace {

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

// Why a free freed nothing (FailedFreeEvent).
enum class FailedFreeReason : std::uint8_t {
  not_allocated = 0,  // no live buffer there: freed before (double) or never allocated (wild)
  interior = 1,       // inside a live buffer, not at its base
};

// What a graph note says (GraphNote: stream capture and graph memory; `value` and `size`).
enum class GraphNoteKind : std::uint8_t {
  capture_begin = 0,   // value: the capture mode (CUstreamCaptureMode)
  capture_end = 1,     // value: cuStreamEndCapture's result (0: a graph was made)
  graph_alloc = 2,     // value: address, size: bytes (an allocation on a capturing stream)
  graph_free = 3,      // value: address, size: 1 in a capture (a free node), 0 outside one
  exec_created = 4,    // value: the executable graph, size: its mem-alloc nodes' bytes
  exec_destroyed = 5,  // value: the executable graph
  captured_work = 6,   // value: 0 launch, 1 copy, 2 memset, 3 graph launch (a child graph node)
};

// How each field of an event travels in a trace: the codecs of events.def. Each names the C++
// type of the member it carries (copy_flags: of the two members); docs/trace-format.md gives
// the bytes and trace/format/src/field_codecs.hpp encodes them.
namespace field {
struct varint {
  using type = std::uint64_t;
};
struct u32 {
  using type = std::uint32_t;
};  // a varint below 2^32
struct i32 {
  using type = std::int32_t;
};  // zigzag, fits 32 bits
struct address {
  using type = std::uint64_t;
};  // delta from the running address, which it becomes
struct address_ref {
  using type = std::uint64_t;
};  // delta from the running address, left as it was
struct stream {
  using type = StreamHandle;
};  // delta from the running stream, which it becomes
struct opt_string {
  using type = StringId;
};  // a string defined earlier, or none
struct opt_stack {
  using type = StackId;
};  // a stack defined earlier, or none
// A count, then addresses chained by deltas from the running address (left as it was).
struct touched {
  using type = std::span<const std::uint64_t>;
};
struct async_flag {
  using type = bool;
};                   // a flags byte: bit 7
struct copy_flags {  // a flags byte: bits 0-3 the copy kind, bit 7 async
  using first_type = CopyKind;
  using second_type = bool;
};
// Optional at the end of a record (added within version 1): a touched list, then a flags byte
// whose bit 0 says the buffers are not all known; absent, nothing is known (second false).
struct graph_buffers {
  using first_type = std::span<const std::uint64_t>;
  using second_type = bool;
};
// One byte; a value past `Last` is corrupt (or from a newer writer).
template <class Enum, Enum Last>
struct checked_enum {
  using type = Enum;
  static constexpr Enum last = Last;
};
using memory_kind = checked_enum<MemoryKind, MemoryKind::pinned_host>;
using sync_kind = checked_enum<SyncKind, SyncKind::stream_wait_event>;
using failed_free_reason = checked_enum<FailedFreeReason, FailedFreeReason::interior>;
using graph_note_kind = checked_enum<GraphNoteKind, GraphNoteKind::captured_work>;

// What a member starts out as: zero, invalid or empty; a stream, the legacy default stream.
template <class Kind>
inline constexpr typename Kind::type initial{};
template <>
inline constexpr StreamHandle initial<stream>{0};
}  // namespace field

// Fields every event has. `seq` orders events of one process; `time_ns` is a host
// monotonic timestamp; `thread` is the calling OS thread.
struct EventHeader {
  std::uint64_t seq = 0;
  std::uint64_t time_ns = 0;
  ThreadId thread{0};
};

// One struct per kind of event: the header, then the fields of its entry in events.def (which
// documents them), in wire order.
#define MEMTOOL_FIELD(codec, member, what) field::codec::type member = field::initial<field::codec>;
#define MEMTOOL_FIELD2(codec, member_a, member_b, what) \
  field::codec::first_type member_a{};                  \
  field::codec::second_type member_b{};
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  struct Type {                                            \
    EventHeader header;                                    \
    fields                                                 \
  };
#include "memtool/trace/events.def"

enum class EventKind : std::uint8_t {
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) name = kind,
#include "memtool/trace/events.def"
};

// What a kind of event is to the trace (events.def, column `role`).
enum class EventRole : std::uint8_t {
  gpu_work,  // an event whose work runs on the GPU: launches, copies, memsets
  host,      // any other event
  note,      // a diagnostic record, not an event (no running state, not counted)
};

// Everything the table says about one kind, for code that handles every kind alike (the
// writer, the reader, the sinks). for_each_field(event, f) calls f(codec{}, "what", member)
// (two members for MEMTOOL_FIELD2) for each field after the header, in wire order.
template <class Event>
struct EventTraits;
#define MEMTOOL_FIELD(codec, member, what) f(field::codec{}, what, event.member);
#define MEMTOOL_FIELD2(codec, member_a, member_b, what) f(field::codec{}, what, event.member_a, event.member_b);
#define MEMTOOL_EVENT(name_, Type, kind_, tag_, role_, fields) \
  template <>                                                  \
  struct EventTraits<Type> {                                   \
    static constexpr EventKind kind = EventKind::name_;        \
    static constexpr std::uint8_t tag = tag_;                  \
    static constexpr EventRole role = EventRole::role_;        \
    static constexpr bool is_event = role != EventRole::note;  \
    template <class E, class F>                                \
    static constexpr void for_each_field(E& event, F&& f) {    \
      static_cast<void>(event);                                \
      static_cast<void>(f);                                    \
      fields                                                   \
    }                                                          \
  };
#include "memtool/trace/events.def"

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
  std::uint32_t stream = 0;                // CUPTI's stream id (a small number per stream, not the handle)
  StringId kernel;                         // kernels with no event: the name CUPTI gave
  std::uint64_t bytes = 0;                 // copies and memsets, as CUPTI counted them
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

  // on_alloc, on_free, on_launch, ...: one per kind of events.def.
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  virtual void on_##name(const Type& /*event*/) {}
#include "memtool/trace/events.def"
  // GPU times arrive after the events they refer to.
  virtual void on_gpu_time(const GpuTimeRecord& /*record*/) {}
};

[[nodiscard]] std::string_view to_string(EventKind kind);
[[nodiscard]] std::string_view to_string(MemoryKind kind);
[[nodiscard]] std::string_view to_string(CopyKind kind);
[[nodiscard]] std::string_view to_string(SyncKind kind);
[[nodiscard]] std::string_view to_string(GpuWorkKind kind);

}  // namespace memtool::trace
