// WindowRecorder: recent allocations and accesses, and the window cut from them (see
// window_recorder.hpp).
#include "memtool/engine/window_recorder.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "memtool/trace/lifetimes.hpp"

namespace memtool::engine {

std::uint64_t WindowRecorder::on_alloc(std::uint64_t tick, std::uint64_t size, MemoryKind kind, StreamId stream,
                                       std::uint32_t owner) {
  trim(tick);
  records_.push_back(Record{tick, kNever, size, kind, owner, stream});
  return first_id_ + records_.size() - 1;
}

void WindowRecorder::on_free(std::uint64_t record, std::uint64_t tick) {
  if (record >= first_id_ && record - first_id_ < records_.size()) {
    records_[record - first_id_].free_tick = tick;
  } else {
    long_lived_.erase(record);  // it lived through every window it could be part of
  }
}

void WindowRecorder::on_access(std::uint64_t record, std::uint64_t tick, StreamId stream, AccessKind kind) {
  if (!keep_accesses_) return;
  accesses_.push_back(Access{record, tick, stream, kind});
}

void WindowRecorder::trim(std::uint64_t now) {
  if (now < retain_ticks_) return;
  const std::uint64_t oldest = now - retain_ticks_;
  while (!records_.empty() && records_.front().alloc_tick < oldest) {
    if (records_.front().free_tick == kNever) long_lived_.emplace(first_id_, records_.front());
    dropped_before_ = records_.front().alloc_tick + 1;
    records_.pop_front();
    ++first_id_;
  }
  while (!accesses_.empty() && accesses_.front().tick < oldest) accesses_.pop_front();
}

std::optional<IterationWindow> WindowRecorder::window(std::uint64_t begin, std::uint64_t period, std::uint32_t owner,
                                                      std::uint64_t alignment) const {
  if (period == 0) return std::nullopt;
  if (begin < dropped_before_) return std::nullopt;  // some of its allocations are forgotten
  IterationWindow w;
  w.begin = begin;
  w.period = period;
  w.owner = owner;
  w.accesses_recorded = keep_accesses_;
  w.problem.name = fmt::format("iteration at tick {} ({} ticks)", begin, period);
  w.problem.time_horizon = period;
  const std::uint64_t end = begin + period;
  std::unordered_map<std::uint64_t, std::size_t> entry_of;  // record id → index in w.entries
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    if (r.alloc_tick < begin || r.owner != owner) continue;
    if (r.alloc_tick >= end) break;
    WindowEntry entry;
    entry.size = r.size;
    entry.kind = r.kind;
    entry.stream = r.stream;
    entry.alloc_tick = r.alloc_tick - begin;
    entry.free_tick = r.free_tick == kNever ? kNever : r.free_tick - begin;
    const bool poolable_kind = r.kind == MemoryKind::device || r.kind == MemoryKind::async;
    if (poolable_kind && r.free_tick != kNever && r.size > 0) {
      const trace::WrappedLifetime wrapped = trace::wrap_lifetime(entry.alloc_tick, entry.free_tick, period);
      if (wrapped.slots <= kMaxSlots) {
        entry.pooled = true;
        entry.problem_index = w.problem.buffers.size();
        entry.slots = static_cast<std::uint32_t>(wrapped.slots);
        trace::BufferRequest request;
        request.size = r.size;
        request.alignment = alignment;
        request.intervals = wrapped.intervals;
        request.crosses_iteration = wrapped.crosses_iteration;
        for (std::uint32_t slot = 0; slot < entry.slots; ++slot) {
          request.id = w.problem.buffers.size();
          w.problem.buffers.push_back(request);
        }
      }
    }
    entry_of.emplace(first_id_ + i, w.entries.size());
    w.entries.push_back(std::move(entry));
  }
  if (keep_accesses_) {
    for (const Access& a : accesses_) {
      if (a.tick < begin) continue;
      const auto it = entry_of.find(a.record);
      if (it == entry_of.end()) continue;
      WindowEntry& e = w.entries[it->second];
      const std::uint64_t t = a.tick - begin;
      if (t < e.alloc_tick || (e.free_tick != kNever && t > e.free_tick)) continue;
      e.accesses.push_back(WindowAccess{t, a.stream, a.kind});
    }
  }
  return w;
}

bool windows_agree(const IterationWindow& earlier, const IterationWindow& later) {
  if (earlier.period != later.period) return false;
  // A different number of allocations is noise (an extra buffer, a dropped one): the entries no
  // longer line up, so this cannot tell; the pool copes with noise by itself.
  if (earlier.entries.size() != later.entries.size()) return true;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < earlier.entries.size(); ++i) {
    const WindowEntry& a = earlier.entries[i];
    const WindowEntry& b = later.entries[i];
    bool same = a.size == b.size && a.kind == b.kind && a.stream == b.stream && a.alloc_tick == b.alloc_tick;
    if (same && b.free_tick != WindowEntry::kNever) {
      same = a.free_tick == b.free_tick;
    } else if (same && a.free_tick != WindowEntry::kNever && a.free_tick < later.period) {
      same = false;  // freed within its iteration, while the next copy outlived its own
    }
    differing += same ? 0 : 1;
  }
  return static_cast<double>(differing) <= 0.05 * static_cast<double>(earlier.entries.size());
}

}  // namespace memtool::engine
