// to_problem: one iteration's lifetimes as a planner Problem (clip or wrap, see lifetimes.hpp),
// and the live-bytes lower bound of a Problem.
#include <algorithm>
#include <fmt/format.h>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/limits.hpp"

namespace memtool::trace {
namespace {

// Time on the chosen axis: for alloc_free, the number of allocations and frees before an
// event; for events, the event index itself.
class Clock {
 public:
  Clock(const TraceModel& model, TimeAxis axis) : axis_(axis) {
    if (axis_ != TimeAxis::alloc_free) return;
    prefix_.resize(model.event_count() + 1, 0);
    for (std::uint64_t e = 0; e < model.event_count(); ++e) {
      const EventKind kind = model.event(e).kind;
      prefix_[e + 1] = prefix_[e] + (kind == EventKind::alloc || kind == EventKind::free ? 1 : 0);
    }
  }
  [[nodiscard]] std::uint64_t at(std::uint64_t event) const {
    return axis_ == TimeAxis::alloc_free ? prefix_[event] : event;
  }

 private:
  TimeAxis axis_;
  std::vector<std::uint64_t> prefix_;
};

// The planner works up to kMaxAccountedBytes for the sum of a problem's buffers (each rounded
// up to its alignment): past it, the allocation that crosses it is named.
class FootprintSum {
 public:
  void add(const BufferRecord& buffer, std::uint64_t alignment) {
    const std::uint64_t footprint = (buffer.size + alignment - 1) & ~(alignment - 1);  // sizes <= 2^62
    if (footprint > kMaxAccountedBytes - total_) {
      throw EventRejected(fmt::format("the allocation of {} bytes here takes the iteration's buffers over 2^62 "
                                      "bytes in all, more than memtool can plan",
                                      buffer.size),
                          buffer.alloc_event);
    }
    total_ += footprint;
  }

 private:
  std::uint64_t total_ = 0;
};

BufferRequest request(std::uint64_t id, std::uint64_t size, std::uint64_t alignment,
                      std::vector<LiveInterval> intervals, bool crosses) {
  BufferRequest r;
  r.id = id;
  r.size = size;
  r.alignment = alignment;
  r.intervals = std::move(intervals);
  r.crosses_iteration = crosses;
  return r;
}

}  // namespace

Problem to_problem(const TraceModel& model, const Iterations& iterations, std::size_t index, std::uint64_t alignment,
                   const ProblemOptions& options) {
  const IterationSpan& span = iterations.spans.at(index);
  const std::uint64_t first = span.first_event;
  const std::uint64_t end = span.end_event;
  const Clock clock(model, options.time);
  const std::uint64_t origin = clock.at(first);
  const std::uint64_t window = clock.at(end) - origin;
  alignment = std::max<std::uint64_t>(alignment, 1);

  Problem problem;
  problem.name = fmt::format("iteration {} [{}, {})", index, first, end);
  problem.time_horizon = window;
  FootprintSum footprints;
  const auto buffers = model.buffers();
  for (std::uint64_t i = 0; i < buffers.size(); ++i) {
    const BufferRecord& b = buffers[i];
    if (b.alloc_event >= end) break;  // ids are in allocation order
    if (b.free_event <= first) continue;
    if (!b.freed() && b.alloc_event < first) {  // persistent, or an older leak
      if (options.include_persistent) {
        problem.buffers.push_back(request(i, b.size, alignment, {{0, window}}, false));
      }
      continue;
    }
    const bool allocated_here = b.alloc_event >= first;
    const bool freed_here = b.freed() && b.free_event < end;
    const std::uint64_t begin = allocated_here ? clock.at(b.alloc_event) - origin : 0;
    if (options.crossing == CrossingMode::clip) {
      const std::uint64_t stop = freed_here ? clock.at(b.free_event) - origin : window;
      if (begin < stop) {
        problem.buffers.push_back(request(i, b.size, alignment, {{begin, stop}}, !allocated_here || !freed_here));
      }
      continue;
    }
    // wrap
    if (!allocated_here) continue;  // represented by this iteration's copy of it
    if (freed_here || !b.freed()) {
      const std::uint64_t stop = freed_here ? clock.at(b.free_event) - origin : window;
      problem.buffers.push_back(request(i, b.size, alignment, {{begin, stop}}, !freed_here));
      continue;
    }
    const WrappedLifetime wrapped = wrap_lifetime(begin, clock.at(b.free_event) - origin, window);
    for (std::uint64_t k = 0; k < wrapped.slots; ++k) {
      problem.buffers.push_back(
          request(k == 0 ? i : (i | (k << kShadowSlotShift)), b.size, alignment, wrapped.intervals, true));
    }
  }
  constexpr std::uint64_t kBufferIdMask = (std::uint64_t{1} << kShadowSlotShift) - 1;
  for (const BufferRequest& r : problem.buffers) footprints.add(buffers[r.id & kBufferIdMask], alignment);
  return problem;
}

WrappedLifetime wrap_lifetime(std::uint64_t begin, std::uint64_t end, std::uint64_t window) {
  WrappedLifetime w;
  if (end <= window) {
    w.intervals.push_back({begin, end});
    return w;
  }
  w.crosses_iteration = true;
  const std::uint64_t lifetime = end - begin;
  if (lifetime < window) {
    // The previous iteration's copy is live over [0, end - window) in the same slot.
    if (end - window > 0) w.intervals.push_back({0, end - window});
    w.intervals.push_back({begin, window});
    return w;
  }
  w.slots = (lifetime + window - 1) / window;
  w.intervals.push_back({0, window});
  return w;
}

std::uint64_t problem_lower_bound(const Problem& problem) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> steps;  // (time, +1 start / -1 end)
  std::vector<std::uint64_t> sizes;
  for (const BufferRequest& r : problem.buffers) {
    for (const LiveInterval& interval : r.intervals) {
      if (interval.begin >= interval.end) continue;
      steps.emplace_back(interval.begin, static_cast<std::int64_t>(sizes.size()) + 1);
      steps.emplace_back(interval.end, -(static_cast<std::int64_t>(sizes.size()) + 1));
      sizes.push_back(r.size);
    }
  }
  // Ends before starts at the same time: half-open intervals touching do not overlap.
  std::sort(steps.begin(), steps.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  for (const auto& [time, step] : steps) {
    if (step > 0) {
      live += sizes[static_cast<std::size_t>(step - 1)];
      peak = std::max(peak, live);
    } else {
      live -= sizes[static_cast<std::size_t>(-step - 1)];
    }
  }
  return peak;
}

}  // namespace memtool::trace
