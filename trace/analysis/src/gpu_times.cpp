// GpuTimeIndex (see gpu_times.hpp): joined GPU times sorted by event index, windows found by
// binary search, unions of intervals by sorting and sweeping.
#include "memtool/trace/gpu_times.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace memtool::trace {
namespace {

struct Interval {
  std::uint64_t start;
  std::uint64_t end;
};

// Length of the union of `intervals` (sorted here).
std::uint64_t union_length(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::uint64_t total = 0;
  std::uint64_t open_start = 0;
  std::uint64_t open_end = 0;
  bool open = false;
  for (const Interval& i : intervals) {
    if (open && i.start <= open_end) {
      open_end = std::max(open_end, i.end);
      continue;
    }
    if (open) total += open_end - open_start;
    open_start = i.start;
    open_end = i.end;
    open = true;
  }
  if (open) total += open_end - open_start;
  return total;
}

}  // namespace

GpuTimeIndex::GpuTimeIndex(const TraceModel& model) : model_(model) {
  const auto times = model.gpu_times();
  std::unordered_set<std::uint64_t> launches;
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (!times[i].joined()) continue;
    by_event_.push_back(static_cast<std::uint32_t>(i));
    if (model.event(times[i].event).kind == EventKind::launch) launches.insert(times[i].event);
  }
  std::stable_sort(by_event_.begin(), by_event_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return times[a].event < times[b].event; });
  timed_launches_ = launches.size();
}

std::pair<std::size_t, std::size_t> GpuTimeIndex::window(std::uint64_t first_event, std::uint64_t end_event) const {
  const auto times = model_.gpu_times();
  const auto lower = [&](std::uint64_t e) {
    return static_cast<std::size_t>(
        std::lower_bound(by_event_.begin(), by_event_.end(), e,
                         [&](std::uint32_t i, std::uint64_t event) { return times[i].event < event; }) -
        by_event_.begin());
  };
  return {lower(first_event), lower(end_event)};
}

std::uint64_t GpuTimeIndex::busy_ns(std::uint64_t first_event, std::uint64_t end_event) const {
  const auto [begin, end] = window(first_event, end_event);
  const auto times = model_.gpu_times();
  std::vector<Interval> intervals;
  intervals.reserve(end - begin);
  for (std::size_t k = begin; k < end; ++k)
    intervals.push_back({times[by_event_[k]].start_ns, times[by_event_[k]].end_ns});
  return union_length(intervals);
}

GpuSummary GpuTimeIndex::summarize(std::uint64_t first_event, std::uint64_t end_event, std::size_t rows) const {
  const auto [begin, end] = window(first_event, end_event);
  const auto times = model_.gpu_times();
  GpuSummary s;
  std::vector<Interval> all;
  std::unordered_map<std::uint32_t, KernelGpuTime> kernels;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Interval>> streams;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> stream_handles;
  std::map<CopyKind, std::pair<CopyEngineTime, std::vector<Interval>>> copies;
  std::unordered_set<std::uint64_t> launches;
  std::uint64_t first_start = ~std::uint64_t{0};
  std::uint64_t last_end = 0;
  for (std::size_t k = begin; k < end; ++k) {
    const ModelGpuTime& g = times[by_event_[k]];
    const ModelEvent& e = model_.event(g.event);
    const Interval interval{g.start_ns, g.end_ns};
    all.push_back(interval);
    first_start = std::min(first_start, g.start_ns);
    last_end = std::max(last_end, g.end_ns);
    const auto key = std::make_pair(g.device, g.stream);
    streams[key].push_back(interval);
    stream_handles.try_emplace(key, e.stream);
    switch (g.kind) {
      case GpuWorkKind::kernel: {
        if (e.kind == EventKind::launch) launches.insert(g.event);
        KernelGpuTime& t = kernels[g.kernel.value()];
        t.kernel = g.kernel;
        ++t.launches;
        t.total_ns += g.duration_ns();
        t.max_ns = std::max(t.max_ns, g.duration_ns());
        break;
      }
      case GpuWorkKind::copy: {
        ++s.timed_copies;
        const CopyKind direction = e.kind == EventKind::copy ? static_cast<CopyKind>(e.detail) : g.copy_kind;
        auto& [engine, intervals] = copies[direction];
        engine.direction = direction;
        ++engine.copies;
        engine.bytes += e.bytes;
        intervals.push_back(interval);
        break;
      }
      case GpuWorkKind::memset:
        ++s.timed_memsets;
        break;
    }
  }
  s.timed_launches = launches.size();
  s.busy_ns = union_length(all);
  s.span_ns = last_end > first_start ? last_end - first_start : 0;
  for (auto& [id, t] : kernels) s.kernels.push_back(t);
  std::sort(s.kernels.begin(), s.kernels.end(), [](const KernelGpuTime& a, const KernelGpuTime& b) {
    return std::tie(b.total_ns, b.max_ns, a.kernel) < std::tie(a.total_ns, a.max_ns, b.kernel);
  });
  if (s.kernels.size() > rows) s.kernels.resize(rows);
  for (auto& [key, intervals] : streams) {
    StreamGpuTime t;
    t.device = key.first;
    t.cupti_stream = key.second;
    t.handle = stream_handles[key];
    t.items = intervals.size();
    std::sort(intervals.begin(), intervals.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    std::uint64_t reach = intervals.front().end;
    for (std::size_t i = 1; i < intervals.size(); ++i) {
      if (intervals[i].start > reach) {
        const std::uint64_t gap = intervals[i].start - reach;
        t.idle_ns += gap;
        ++t.gaps;
        t.longest_gap_ns = std::max(t.longest_gap_ns, gap);
      }
      reach = std::max(reach, intervals[i].end);
    }
    t.busy_ns = union_length(intervals);
    s.streams.push_back(t);
  }
  for (auto& [direction, engine_and_intervals] : copies) {
    auto& [engine, intervals] = engine_and_intervals;
    engine.busy_ns = union_length(intervals);
    s.copy_engines.push_back(engine);
  }
  return s;
}

}  // namespace memtool::trace
