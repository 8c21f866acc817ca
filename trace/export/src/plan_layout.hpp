// A pool plan as rectangles in (time, offset): one per live interval of each planned buffer, in
// begin order — what the Perfetto and HTML exports draw. Private to trace/export.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "memtool/trace/export.hpp"
#include "memtool/trace/lifetimes.hpp"

namespace memtool::trace::detail {

struct PlanRect {
  std::uint64_t begin = 0;  // event index relative to the iteration's first event
  std::uint64_t end = 0;
  std::size_t buffer = 0;  // index into the problem's buffers
  std::uint64_t offset = 0;
  std::uint64_t footprint = 0;  // size rounded up to the alignment
};

inline std::vector<PlanRect> plan_rects(const PoolPlanView& plan) {
  std::vector<PlanRect> rects;
  const auto& buffers = plan.problem.buffers;
  for (std::size_t i = 0; i < buffers.size() && i < plan.offsets.size(); ++i) {
    const auto& b = buffers[i];
    const std::uint64_t align = b.alignment == 0 ? 1 : b.alignment;
    const std::uint64_t footprint = (b.size + align - 1) / align * align;
    for (const LiveInterval& interval : b.intervals) {
      if (interval.end > interval.begin) rects.push_back({interval.begin, interval.end, i, plan.offsets[i], footprint});
    }
  }
  std::sort(rects.begin(), rects.end(), [](const PlanRect& a, const PlanRect& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.buffer < b.buffer;
  });
  return rects;
}

// The buffer's id in the trace (shadow slots of long-lived buffers carry a slot number above
// kShadowSlotShift, see to_problem).
inline std::uint64_t plan_buffer_trace_id(std::uint64_t problem_id) {
  return problem_id & ((std::uint64_t{1} << kShadowSlotShift) - 1);
}

}  // namespace memtool::trace::detail
