// TraceModel: builds the compact event and buffer tables from visitor callbacks and resolves
// pointers to buffers through an index of live buffers keyed by base address (LiveIndex).
#include "memtool/trace/model.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <limits>
#include <new>
#include <stdexcept>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/limits.hpp"

namespace memtool::trace {

void TraceModel::reserve(std::size_t events, std::size_t buffers) {
  // A guess: address space the system will not give (overcommit refusing a huge trace's
  // reservation) is not an error; the tables then grow as they fill.
  try {
    events_.reserve(events);
    buffers_.reserve(buffers);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {}
}

void TraceModel::on_metadata(std::string_view key, std::string_view value) {
  metadata_.emplace_back(std::string(key), std::string(value));
}

void TraceModel::on_string(StringId id, std::string_view text) { strings_[id.value()] = std::string(text); }

void TraceModel::on_stack(StackId id, std::span<const StackFrame> frames) {
  stacks_[id.value()] = std::vector<StackFrame>(frames.begin(), frames.end());
}

void TraceModel::on_module(const ModuleMapping& module) { modules_.push_back(module); }

ModelEvent& TraceModel::append(EventKind kind, const EventHeader& header, std::uint64_t stream) {
  ModelEvent& e = events_.emplace_back();
  e.kind = kind;
  e.time_ns = header.time_ns;
  e.thread = header.thread.value();
  e.stream = stream;
  return e;
}

void TraceModel::begin_touch(ModelEvent& event) {
  event.touch = static_cast<std::uint32_t>(touch_begin_.size());
  touch_begin_.push_back(touch_buffers_.size());
}

BufferId TraceModel::live_buffer_at(std::uint64_t address) const {
  const LiveIndex::Entry* entry = live_.at_or_below(address);
  if (entry == nullptr) return BufferId{};
  const BufferRecord& b = buffers_[entry->id.value()];
  const std::uint64_t extent = b.size == 0 ? 1 : b.size;
  if (address - b.address < extent) return entry->id;
  return BufferId{};
}

void TraceModel::on_alloc(const AllocEvent& event) {
  const std::uint64_t index = events_.size();
  const LiveIndex::Entry* reused = live_.find(event.address);
  // Every sum of live bytes later (curves, peaks, lower bounds) stays far from wrapping.
  const std::uint64_t live_before = live_bytes_ - (reused != nullptr ? buffers_[reused->id.value()].size : 0);
  if (event.size > kMaxAccountedBytes - live_before) {
    throw EventRejected(
        fmt::format("allocation of {} bytes with {} bytes live takes the live bytes over 2^62, "
                    "more than memtool accounts for",
                    event.size, live_before));
  }
  live_bytes_ = live_before + event.size;
  ModelEvent& e = append(EventKind::alloc, event.header, event.stream.value());
  e.bytes = event.size;
  e.memory = event.kind;
  const BufferId id{buffers_.size()};
  e.buffer = id;
  auto [entry, inserted] = live_.try_emplace(event.address, id);
  if (!inserted) {  // the old buffer's free was never seen: it ends here
    ++stats_.reused_live_addresses;
    BufferRecord& old = buffers_[entry->id.value()];
    old.free_event = index;
    old.ended_by_reuse = true;
    entry->id = id;
  }
  BufferRecord& b = buffers_.emplace_back();
  b.address = event.address;
  b.size = event.size;
  b.alloc_event = index;
  b.stack = event.stack;
  b.stream = event.stream;
  b.kind = event.kind;
  ++stats_.allocs;
}

void TraceModel::on_free(const FreeEvent& event) {
  const std::uint64_t index = events_.size();
  ModelEvent& e = append(EventKind::free, event.header, event.stream.value());
  e.memory = event.kind;
  ++stats_.frees;
  const LiveIndex::Entry* entry = live_.find(event.address);
  if (entry == nullptr) {
    ++stats_.unknown_frees;
    return;
  }
  e.buffer = entry->id;
  BufferRecord& b = buffers_[entry->id.value()];
  e.bytes = b.size;
  b.free_event = index;
  live_bytes_ -= b.size;
  live_.erase(event.address);
}

void TraceModel::note_gpu_work(const EventHeader& header) {
  if (!gpu_work_seqs_.empty() && header.seq <= gpu_work_seqs_.back().first) gpu_work_sorted_ = false;
  gpu_work_seqs_.emplace_back(header.seq, events_.size());
}

void TraceModel::on_gpu_time(const GpuTimeRecord& record) {
  ++stats_.gpu_times;
  ModelGpuTime& g = gpu_times_.emplace_back();
  g.start_ns = record.start_ns;
  g.end_ns = std::max(record.end_ns, record.start_ns);
  g.bytes = record.bytes;
  g.kernel = record.kernel;
  g.device = record.device;
  g.stream = record.stream;
  g.kind = record.kind;
  g.copy_kind = record.copy_kind;
  if (!record.joined()) {
    ++stats_.gpu_unjoined;
    return;
  }
  if (!gpu_work_sorted_) {
    std::sort(gpu_work_seqs_.begin(), gpu_work_seqs_.end());
    gpu_work_sorted_ = true;
  }
  const auto it = std::lower_bound(gpu_work_seqs_.begin(), gpu_work_seqs_.end(),
                                   std::pair<std::uint64_t, std::uint64_t>{record.event_seq, 0});
  if (it == gpu_work_seqs_.end() || it->first != record.event_seq) {
    ++stats_.gpu_mismatched;
    return;
  }
  const ModelEvent& e = events_[it->second];
  const bool fits = record.kind == GpuWorkKind::kernel
                        ? e.kind == EventKind::launch || e.kind == EventKind::graph_launch
                        : e.kind == (record.kind == GpuWorkKind::copy ? EventKind::copy : EventKind::memset);
  if (!fits) {
    ++stats_.gpu_mismatched;
    return;
  }
  g.event = it->second;
  if (e.kind == EventKind::launch) g.kernel = StringId{e.detail};
}

void TraceModel::on_failed_free(const FailedFreeEvent& /*event*/) { ++stats_.failed_frees; }

void TraceModel::on_launch(const LaunchEvent& event) {
  note_gpu_work(event.header);
  ModelEvent& e = append(EventKind::launch, event.header, event.stream.value());
  e.detail = event.kernel.value();
  ++stats_.launches;
  begin_touch(e);
  for (const std::uint64_t address : event.touched) {
    const BufferId id = live_buffer_at(address);
    if (id.valid()) {
      touch_buffers_.push_back(id);
    } else {
      ++stats_.unresolved_touches;
    }
  }
}

// Its buffers as the recorder read them from its graph's nodes; `detail` 1 when it could not
// (opaque: it may have touched any buffer).
void TraceModel::on_graph_launch(const GraphLaunchEvent& event) {
  note_gpu_work(event.header);
  ModelEvent& e = append(EventKind::graph_launch, event.header, event.stream.value());
  e.bytes = event.graph_exec;
  e.detail = event.nodes_read ? 0 : 1;
  ++stats_.graph_launches;
  if (!event.nodes_read) ++stats_.opaque_graph_launches;
  begin_touch(e);
  for (const std::uint64_t address : event.touched) {
    const BufferId id = live_buffer_at(address);
    if (id.valid()) {
      touch_buffers_.push_back(id);
    } else {
      ++stats_.unresolved_touches;
    }
  }
}

void TraceModel::on_graph_note(const GraphNote& note) {
  switch (note.kind) {
    case GraphNoteKind::capture_begin:
      ++stats_.captures;
      break;
    case GraphNoteKind::captured_work:
      ++stats_.captured_work;
      break;
    case GraphNoteKind::graph_alloc:
      ++stats_.graph_memory_allocations;
      stats_.graph_memory_bytes += note.size;
      break;
    case GraphNoteKind::exec_created:
      if (note.size != 0) ++stats_.graphs_with_memory;
      break;
    default:
      break;
  }
}

void TraceModel::on_copy(const CopyEvent& event) {
  note_gpu_work(event.header);
  ModelEvent& e = append(EventKind::copy, event.header, event.stream.value());
  e.bytes = event.bytes;
  e.detail = static_cast<std::uint32_t>(event.kind);
  ++stats_.copies;
  begin_touch(e);
  // Host-side ends of copies are usually untracked pageable memory: misses are not counted.
  for (const std::uint64_t address : {event.dst, event.src}) {
    const BufferId id = live_buffer_at(address);
    if (id.valid()) touch_buffers_.push_back(id);
  }
}

void TraceModel::on_memset(const MemsetEvent& event) {
  note_gpu_work(event.header);
  ModelEvent& e = append(EventKind::memset, event.header, event.stream.value());
  e.bytes = event.bytes;
  ++stats_.memsets;
  begin_touch(e);
  const BufferId id = live_buffer_at(event.dst);
  if (id.valid()) touch_buffers_.push_back(id);
}

void TraceModel::on_sync(const SyncEvent& event) {
  ModelEvent& e = append(EventKind::sync, event.header, event.stream.value());
  e.detail = static_cast<std::uint32_t>(event.kind);
  ++stats_.syncs;
}

void TraceModel::on_iteration_mark(const IterationMarkEvent& event) {
  marks_.push_back(events_.size());
  ModelEvent& e = append(EventKind::iteration_mark, event.header, 0);
  e.detail = static_cast<std::uint32_t>(event.index & std::numeric_limits<std::uint32_t>::max());
  ++stats_.marks;
}

void TraceModel::on_stream_create(const StreamCreateEvent& event) {
  ModelEvent& e = append(EventKind::stream_create, event.header, event.stream.value());
  e.detail = event.flags;
  ++stats_.stream_creates;
}

std::span<const BufferId> TraceModel::touched(std::size_t event_index) const {
  const ModelEvent& e = events_[event_index];
  if (e.touch == ModelEvent::kNoTouch) return {};
  const std::uint64_t begin = touch_begin_[e.touch];
  const std::uint64_t end = e.touch + 1 < touch_begin_.size() ? touch_begin_[e.touch + 1] : touch_buffers_.size();
  return std::span<const BufferId>(touch_buffers_).subspan(begin, end - begin);
}

std::string_view TraceModel::string(StringId id) const {
  const auto it = strings_.find(id.value());
  return it == strings_.end() ? std::string_view{} : std::string_view(it->second);
}

std::span<const StackFrame> TraceModel::stack(StackId id) const {
  const auto it = stacks_.find(id.value());
  if (it == stacks_.end()) return {};
  return it->second;
}

}  // namespace memtool::trace
