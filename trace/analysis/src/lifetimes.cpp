// Live bytes, persistent/leaked buffers, per-iteration summaries and lifetimes, and the
// report's buffer queries. Everything is linear in events plus buffers.
#include "memtool/trace/lifetimes.hpp"

#include <algorithm>
#include <unordered_map>

namespace memtool::trace {
namespace {

// Buffers with some live event in [first, end).
bool live_in_window(const BufferRecord& b, std::uint64_t first, std::uint64_t end) {
  return b.alloc_event < end && b.free_event > first && std::max(b.alloc_event, first) < std::min(b.free_event, end);
}

}  // namespace

std::vector<std::uint64_t> live_bytes_curve(const TraceModel& model) {
  const std::uint64_t n = model.event_count();
  std::vector<std::uint64_t> curve(n + 1, 0);
  for (const BufferRecord& b : model.buffers()) {
    curve[b.alloc_event] += b.size;
    if (b.freed()) curve[b.free_event] -= b.size;  // wrap-around cancels in the prefix sum
  }
  std::uint64_t running = 0;
  for (std::uint64_t e = 0; e < n; ++e) {
    running += curve[e];
    curve[e] = running;
  }
  curve.pop_back();
  return curve;
}

LiveBytesPeak peak_live_bytes(std::span<const std::uint64_t> curve, std::uint64_t first, std::uint64_t end) {
  LiveBytesPeak peak{0, first};
  end = std::min<std::uint64_t>(end, curve.size());
  for (std::uint64_t e = first; e < end; ++e) {
    if (curve[e] > peak.bytes) peak = LiveBytesPeak{curve[e], e};
  }
  return peak;
}

// One past the last event of the last complete steady iteration: what follows is teardown.
std::uint64_t steady_end(const Iterations& iterations) {
  for (auto it = iterations.spans.rbegin(); it != iterations.spans.rend(); ++it) {
    if (it->complete && !it->warm_up) return it->end_event;
  }
  return kNever;
}

bool is_persistent(const BufferRecord& buffer, const Iterations& iterations) {
  // Weights and optimizer state: allocated before the loop and alive through all of it; a
  // program that frees them in its teardown still had them for the whole loop.
  return iterations.found() && buffer.alloc_event < iterations.steady_start &&
         (!buffer.freed() || buffer.free_event >= steady_end(iterations));
}

std::vector<BufferId> persistent_buffers(const TraceModel& model, const Iterations& iterations) {
  std::vector<BufferId> result;
  const auto buffers = model.buffers();
  for (std::uint64_t i = 0; i < buffers.size(); ++i) {
    if (is_persistent(buffers[i], iterations)) result.emplace_back(i);
  }
  return result;
}

std::vector<BufferId> leaked_buffers(const TraceModel& model, const Iterations& iterations) {
  std::vector<BufferId> result;
  if (!iterations.found()) return result;
  const auto buffers = model.buffers();
  for (std::uint64_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].freed() && buffers[i].alloc_event >= iterations.steady_start) {
      result.emplace_back(i);
    }
  }
  return result;
}

std::vector<IterationSummary> summarize_iterations(const TraceModel& model, const Iterations& iterations) {
  return summarize_iterations(model, iterations, live_bytes_curve(model));
}

std::vector<IterationSummary> summarize_iterations(const TraceModel& model, const Iterations& iterations,
                                                   std::span<const std::uint64_t> curve) {
  std::vector<IterationSummary> result;
  result.reserve(iterations.spans.size());
  for (std::size_t k = 0; k < iterations.spans.size(); ++k) {
    const IterationSpan& span = iterations.spans[k];
    IterationSummary s;
    s.index = k;
    s.first_event = span.first_event;
    s.end_event = span.end_event;
    s.warm_up = span.warm_up;
    for (std::uint64_t e = span.first_event; e < span.end_event; ++e) {
      const EventKind kind = model.event(e).kind;
      if (kind == EventKind::alloc) ++s.allocs;
      if (kind == EventKind::free) ++s.frees;
    }
    s.live_at_start = span.first_event > 0 ? curve[span.first_event - 1] : 0;
    s.live_at_end = span.end_event > span.first_event ? curve[span.end_event - 1] : s.live_at_start;
    s.peak = peak_live_bytes(curve, span.first_event, span.end_event);
    result.push_back(s);
  }
  return result;
}

IterationLifetimes iteration_lifetimes(const TraceModel& model, const Iterations& iterations, std::size_t index) {
  const IterationSpan& span = iterations.spans.at(index);
  const std::uint64_t first = span.first_event;
  const std::uint64_t end = span.end_event;
  IterationLifetimes result;
  result.index = index;
  result.first_event = first;
  result.end_event = end;

  std::unordered_map<std::uint64_t, std::size_t> slot_of;
  const auto buffers = model.buffers();
  for (std::uint64_t i = 0; i < buffers.size(); ++i) {
    const BufferRecord& b = buffers[i];
    if (b.alloc_event >= end) break;  // ids are in allocation order
    if (!live_in_window(b, first, end)) continue;
    BufferLifetime life;
    life.buffer = BufferId{i};
    life.size = b.size;
    life.live = LiveInterval{std::max(b.alloc_event, first) - first, std::min(b.free_event, end) - first};
    life.alive_at_start = b.alloc_event < first;
    life.alive_at_end = b.free_event >= end;
    life.persistent = is_persistent(b, iterations);
    if (life.persistent) result.persistent_bytes += b.size;
    slot_of.emplace(i, result.buffers.size());
    result.buffers.push_back(std::move(life));
  }
  for (std::uint64_t e = first; e < end; ++e) {
    const ModelEvent& event = model.event(e);
    if (event.kind == EventKind::alloc) ++result.allocs;
    if (event.kind == EventKind::free) ++result.frees;
    for (const BufferId id : model.touched(e)) {
      const auto it = slot_of.find(id.value());
      if (it == slot_of.end()) continue;
      auto& accesses = result.buffers[it->second].accesses;
      if (accesses.empty() || accesses.back() != e - first) accesses.push_back(e - first);
    }
  }
  // The window's slice of the live-bytes curve, from the buffers alive before it plus the
  // changes inside it (no whole-trace curve per call).
  result.live_bytes.assign(end - first, 0);
  std::uint64_t before = 0;
  for (std::uint64_t i = 0; i < buffers.size() && buffers[i].alloc_event < end; ++i) {
    const BufferRecord& b = buffers[i];
    if (b.alloc_event < first && b.free_event >= first) before += b.size;
    if (b.alloc_event >= first) result.live_bytes[b.alloc_event - first] += b.size;
    if (b.freed() && b.free_event >= first && b.free_event < end && b.alloc_event < b.free_event) {
      result.live_bytes[b.free_event - first] -= b.size;  // wrap-around cancels in the sum
    }
  }
  std::uint64_t running = before;
  for (auto& value : result.live_bytes) {
    running += value;
    value = running;
  }
  result.live_at_start = before;
  result.live_at_end = end > first ? result.live_bytes.back() : before;
  const LiveBytesPeak peak = peak_live_bytes(result.live_bytes, 0, end - first);
  result.peak_live_bytes = peak.bytes;
  result.peak_event = first + peak.event;
  return result;
}

std::vector<BufferId> largest_live_at(const TraceModel& model, std::uint64_t event, std::size_t count) {
  std::vector<BufferId> live;
  const auto buffers = model.buffers();
  for (std::uint64_t i = 0; i < buffers.size() && buffers[i].alloc_event <= event; ++i) {
    if (buffers[i].live_at(event)) live.emplace_back(i);
  }
  const auto larger = [&](BufferId a, BufferId b) {
    const auto sa = buffers[a.value()].size;
    const auto sb = buffers[b.value()].size;
    return sa != sb ? sa > sb : a < b;
  };
  const std::size_t keep = std::min(count, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
  live.resize(keep);
  return live;
}

std::vector<BufferId> longest_lifetimes(const TraceModel& model, std::size_t count, const Iterations* iterations) {
  const auto buffers = model.buffers();
  const std::uint64_t n = model.event_count();
  const auto length = [&](BufferId id) {
    const BufferRecord& b = buffers[id.value()];
    return (b.freed() ? b.free_event : n) - b.alloc_event;
  };
  std::vector<BufferId> ids;
  ids.reserve(buffers.size());
  for (std::uint64_t i = 0; i < buffers.size(); ++i) {
    if (iterations != nullptr && is_persistent(buffers[i], *iterations)) continue;
    ids.emplace_back(i);
  }
  const auto longer = [&](BufferId a, BufferId b) {
    const auto la = length(a);
    const auto lb = length(b);
    if (la != lb) return la > lb;
    const auto sa = buffers[a.value()].size;
    const auto sb = buffers[b.value()].size;
    return sa != sb ? sa > sb : a < b;
  };
  const std::size_t keep = std::min(count, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), longer);
  ids.resize(keep);
  return ids;
}

}  // namespace memtool::trace
