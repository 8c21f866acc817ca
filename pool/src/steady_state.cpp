// SteadyStateRecorder: positions of allocations and frees, and the planner problem of one
// iteration window in the wrap view.
#include "memtool/pool/steady_state.hpp"

#include <fmt/format.h>

namespace memtool::pool {

std::uint64_t SteadyStateRecorder::on_alloc(std::uint64_t size, MemoryKind kind,
                                            StreamId stream) {
  records_.push_back(Record{ticks_, kNever, size, kind, stream});
  ++ticks_;
  const std::uint64_t id = first_id_ + records_.size() - 1;
  trim();
  return id;
}

void SteadyStateRecorder::on_free(std::uint64_t record_id) {
  if (record_id >= first_id_ && record_id - first_id_ < records_.size()) {
    records_[record_id - first_id_].free_tick = ticks_;
  }
  ++ticks_;
}

void SteadyStateRecorder::reset() {
  first_id_ += records_.size();
  records_.clear();
}

void SteadyStateRecorder::trim() {
  // Oldest first: records are in allocation order, so drop from the front.
  while (!records_.empty() && ticks_ - records_.front().alloc_tick > retain_ticks_) {
    records_.pop_front();
    ++first_id_;
  }
}

std::optional<IterationWindow> SteadyStateRecorder::window(std::uint64_t begin,
                                                           std::uint64_t period,
                                                           std::uint64_t alignment) const {
  if (period == 0 || records_.empty() || records_.front().alloc_tick > begin) return std::nullopt;
  IterationWindow w;
  w.begin = begin;
  w.period = period;
  w.problem.name = fmt::format("iteration at tick {} (period {})", begin, period);
  w.problem.time_horizon = period;
  const std::uint64_t end = begin + period;
  for (const Record& r : records_) {
    if (r.alloc_tick < begin) continue;
    if (r.alloc_tick >= end) break;
    WindowEntry entry{r.size, r.kind, r.stream, false, 0};
    const bool poolable_kind = r.kind == MemoryKind::device || r.kind == MemoryKind::async;
    const bool freed = r.free_tick != kNever;
    const std::uint64_t lifetime = freed ? r.free_tick - r.alloc_tick : 0;
    const std::uint64_t slots = (lifetime + period - 1) / period;
    if (poolable_kind && freed && r.size > 0 && slots <= kMaxSlots) {
      entry.pooled = true;
      entry.problem_index = w.problem.buffers.size();
      trace::BufferRequest request;
      request.size = r.size;
      request.alignment = alignment;
      const std::uint64_t a = r.alloc_tick - begin;
      const std::uint64_t f = r.free_tick - begin;
      if (f <= period) {
        request.intervals.push_back({a, f});
        entry.slots = 1;
      } else if (lifetime < period) {
        // Wraps: the previous iteration's copy is live over [0, f - period) in this slot.
        request.intervals.push_back({0, f - period});
        request.intervals.push_back({a, period});
        request.crosses_iteration = true;
        entry.slots = 1;
      } else {
        request.intervals.push_back({0, period});
        request.crosses_iteration = true;
        entry.slots = static_cast<std::uint32_t>(slots);
      }
      for (std::uint32_t slot = 0; slot < entry.slots; ++slot) {
        request.id = w.problem.buffers.size();
        w.problem.buffers.push_back(request);
      }
    }
    w.entries.push_back(entry);
  }
  return w;
}

}  // namespace memtool::pool
