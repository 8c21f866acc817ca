// TraceModel: the normalised, in-memory form of a trace ("raw then normalised").
//
// An EventVisitor: feed it from the trace reader, an importer or a test. It turns process-local
// facts into stable, compact tables:
//   - every allocation gets a new BufferId (dense, from 0, in allocation order); an address
//     that is reused after a free is a new buffer;
//   - one compact record per event (kind, buffer, bytes, stream, kernel, time, thread), indexed
//     by event index — the time axis of every later analysis;
//   - the addresses a launch touched (base or interior pointers), and the source/destination of
//     copies and memsets, are resolved to buffer ids through an interval index of live buffers;
//   - strings, stacks, modules and metadata are kept for reports.
// Anomalies are counted, never fatal: frees of unknown addresses, allocations over a still-live
// address (the old buffer is ended there), launch pointers that match no live buffer. The one
// event it refuses (EventRejected, which the reader reports at the event) is an allocation that
// takes the live bytes over kMaxAccountedBytes (2^62): every live-bytes sum then fits 64 bits.
// Sized for millions of events: 48 bytes per event, 48 per buffer, plus touches.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memtool/trace/event.hpp"
#include "memtool/trace/ids.hpp"
#include "memtool/trace/live_index.hpp"

namespace memtool::trace {

inline constexpr std::uint64_t kNever = ~std::uint64_t{0};  // "no such event" (never freed, ...)

// One event, normalised. `buffer` is the allocated/freed buffer (invalid for other kinds and
// for frees of unknown addresses). `bytes`: allocation size, freed buffer's size (0 if
// unknown), copy/memset bytes. `detail`: launch → kernel StringId value; iteration mark →
// mark index (low 32 bits); sync → SyncKind; copy → CopyKind. `touch` indexes the touch table
// (launch, copy, memset) or is kNoTouch.
struct ModelEvent {
  static constexpr std::uint32_t kNoTouch = ~std::uint32_t{0};
  std::uint64_t time_ns = 0;
  std::uint64_t bytes = 0;
  std::uint64_t stream = 0;
  BufferId buffer;
  std::uint32_t detail = 0;
  std::uint32_t thread = 0;
  std::uint32_t touch = kNoTouch;
  EventKind kind = EventKind::alloc;
  MemoryKind memory = MemoryKind::device;
};

struct BufferRecord {
  std::uint64_t address = 0;
  std::uint64_t size = 0;             // bytes the program asked for
  std::uint64_t alloc_event = 0;      // event index of the allocation
  std::uint64_t free_event = kNever;  // event index of the free, kNever if never freed
  StackId stack;
  StreamHandle stream{0};
  MemoryKind kind = MemoryKind::device;
  bool ended_by_reuse = false;  // never freed; its address was allocated again at free_event

  [[nodiscard]] bool freed() const { return free_event != kNever; }
  // Live at event index e (after e has happened): alloc_event <= e < free_event.
  [[nodiscard]] bool live_at(std::uint64_t e) const { return alloc_event <= e && e < free_event; }
};

// One GPU time (from the CUPTI tracer), joined: `event` is the index of the launch, copy or
// memset it ran for (kNever: it names no event of this trace, or one of another kind). `kernel`:
// the launch's kernel, or the name CUPTI gave a kernel that names no event.
struct ModelGpuTime {
  std::uint64_t event = ~std::uint64_t{0};
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t bytes = 0;
  StringId kernel;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;  // CUPTI's stream id
  GpuWorkKind kind = GpuWorkKind::kernel;
  CopyKind copy_kind = CopyKind::unknown;
  [[nodiscard]] bool joined() const { return event != ~std::uint64_t{0}; }
  [[nodiscard]] std::uint64_t duration_ns() const { return end_ns - start_ns; }
};

struct ModelStats {
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t launches = 0;
  std::uint64_t graph_launches = 0;
  std::uint64_t opaque_graph_launches = 0;  // of graphs the recorder could not read (or old traces)
  std::uint64_t copies = 0;
  std::uint64_t memsets = 0;
  std::uint64_t syncs = 0;
  std::uint64_t marks = 0;
  std::uint64_t stream_creates = 0;
  std::uint64_t unknown_frees = 0;          // free of an address no live buffer starts at
  std::uint64_t failed_frees = 0;           // frees the recorder saw fail (FailedFreeEvent): not events
  std::uint64_t reused_live_addresses = 0;  // allocation at the base of a still-live buffer
  std::uint64_t unresolved_touches = 0;     // launch pointer inside no live buffer
  std::uint64_t gpu_times = 0;              // GPU time records
  std::uint64_t gpu_unjoined = 0;           // of which naming no event (work that bypassed the hooks)
  std::uint64_t gpu_mismatched = 0;         // naming an unknown seq or an event of another kind
  // Stream capture and graph memory (GraphNote records: not events, no buffers).
  std::uint64_t captures = 0;                  // captures begun
  std::uint64_t captured_work = 0;             // launches, copies, memsets, graph launches captured
  std::uint64_t graph_memory_allocations = 0;  // allocations on capturing streams
  std::uint64_t graph_memory_bytes = 0;        // their bytes
  std::uint64_t graphs_with_memory = 0;        // executable graphs made with graph memory
};

class TraceModel : public EventVisitor {
 public:
  TraceModel() = default;

  // Optional: avoids reallocation when the caller knows roughly how much is coming.
  void reserve(std::size_t events, std::size_t buffers);

  void on_metadata(std::string_view key, std::string_view value) override;
  void on_string(StringId id, std::string_view text) override;
  void on_stack(StackId id, std::span<const StackFrame> frames) override;
  void on_module(const ModuleMapping& module) override;
  void on_alloc(const AllocEvent& event) override;
  void on_free(const FreeEvent& event) override;
  void on_failed_free(const FailedFreeEvent& event) override;
  void on_launch(const LaunchEvent& event) override;
  void on_graph_launch(const GraphLaunchEvent& event) override;
  void on_graph_note(const GraphNote& note) override;
  void on_copy(const CopyEvent& event) override;
  void on_memset(const MemsetEvent& event) override;
  void on_sync(const SyncEvent& event) override;
  void on_iteration_mark(const IterationMarkEvent& event) override;
  void on_stream_create(const StreamCreateEvent& event) override;
  void on_gpu_time(const GpuTimeRecord& record) override;

  [[nodiscard]] std::size_t event_count() const { return events_.size(); }
  [[nodiscard]] std::span<const ModelEvent> events() const { return events_; }
  [[nodiscard]] const ModelEvent& event(std::size_t index) const { return events_[index]; }

  [[nodiscard]] std::size_t buffer_count() const { return buffers_.size(); }
  [[nodiscard]] std::span<const BufferRecord> buffers() const { return buffers_; }
  [[nodiscard]] const BufferRecord& buffer(BufferId id) const { return buffers_[id.value()]; }

  // Buffers a launch/copy/memset touched (launch order of its pointers; copy: dst then src).
  [[nodiscard]] std::span<const BufferId> touched(std::size_t event_index) const;
  // GPU times in file order (see ModelGpuTime); joined ones name their event by index.
  [[nodiscard]] std::span<const ModelGpuTime> gpu_times() const { return gpu_times_; }
  // Event indices of iteration marks, in order.
  [[nodiscard]] std::span<const std::uint64_t> marks() const { return marks_; }

  [[nodiscard]] std::string_view string(StringId id) const;           // "" when unknown
  [[nodiscard]] std::span<const StackFrame> stack(StackId id) const;  // empty when unknown
  [[nodiscard]] std::span<const ModuleMapping> modules() const { return modules_; }
  [[nodiscard]] std::span<const std::pair<std::string, std::string>> metadata() const { return metadata_; }
  [[nodiscard]] const ModelStats& stats() const { return stats_; }
  // The buffer containing `address` (base or interior) among buffers live now, if any.
  [[nodiscard]] BufferId live_buffer_at(std::uint64_t address) const;

 private:
  ModelEvent& append(EventKind kind, const EventHeader& header, std::uint64_t stream);
  void begin_touch(ModelEvent& event);
  void note_gpu_work(const EventHeader& header);

  std::vector<ModelEvent> events_;
  std::vector<BufferRecord> buffers_;
  std::vector<BufferId> touch_buffers_;     // concatenated touch lists
  std::vector<std::uint64_t> touch_begin_;  // per touching event: start in touch_buffers_
  std::vector<std::uint64_t> marks_;
  std::vector<ModelGpuTime> gpu_times_;
  // (seq, event index) of every launch, graph launch, copy and memset: GPU times name events by
  // seq. Sorted while seqs arrive in order (a recorder's trace); sorted on demand otherwise.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gpu_work_seqs_;
  bool gpu_work_sorted_ = true;
  LiveIndex live_;                // base address → live buffer (interval index)
  std::uint64_t live_bytes_ = 0;  // sum of their sizes, <= kMaxAccountedBytes
  std::unordered_map<std::uint32_t, std::string> strings_;
  std::unordered_map<std::uint32_t, std::vector<StackFrame>> stacks_;
  std::vector<ModuleMapping> modules_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  ModelStats stats_;
};

}  // namespace memtool::trace
