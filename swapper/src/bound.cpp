// The zero-stall lower bound on the peak (bound.hpp).
#include "memtool/swapper/bound.hpp"

#include <algorithm>
#include <stdexcept>

#include "memtool/swapper/candidates.hpp"

namespace memtool::swapper {
namespace {

struct Window {
  double begin = 0;  // earliest end of the copy-out
  double end = 0;    // latest start of the copy-in
  double gap_begin = 0;
  double gap_end = 0;
  std::uint64_t size = 0;
};

// Most bytes an engine of `bytes_per_ns` can have moved: min over thresholds a of
// bytes_per_ns * a + (bytes of items farther than a), items given as (distance, size).
double engine_capacity(std::vector<std::pair<double, std::uint64_t>>& items, double bytes_per_ns) {
  std::sort(items.begin(), items.end());
  double beyond = 0;
  for (const auto& item : items) beyond += static_cast<double>(item.second);
  double best = beyond;  // threshold 0: nothing can have moved
  for (std::size_t k = 0; k < items.size(); ++k) {
    beyond -= static_cast<double>(items[k].second);
    if (k + 1 < items.size() && items[k + 1].first == items[k].first) continue;  // ties: all at once
    best = std::min(best, bytes_per_ns * items[k].first + beyond);
  }
  return best;
}

}  // namespace

Bound bound(const Iteration& iteration, const Link& link) {
  if (std::string e = validate(iteration); !e.empty()) throw std::invalid_argument("swapper: " + e);
  if (std::string e = validate(link); !e.empty()) throw std::invalid_argument("swapper: " + e);
  Bound result;
  const std::size_t n = iteration.ops.size();
  if (n == 0) return result;
  const BaseTimeline timeline(iteration);
  const std::vector<std::uint64_t> live = live_bytes_per_op(iteration);
  result.plain_peak_bytes = *std::max_element(live.begin(), live.end());

  std::vector<Window> windows;
  for (const Gap& gap : find_gaps(iteration)) {
    const std::uint64_t size = iteration.buffers[gap.buffer].size;
    Window w;
    w.gap_begin = timeline.end(gap.from_op);
    w.gap_end = timeline.start(gap.to_op);
    w.begin = w.gap_begin + link.d2h_ns(size);
    w.end = w.gap_end - link.h2d_ns(size);
    w.size = size;
    if (w.begin <= w.end) windows.push_back(w);
  }

  std::vector<std::pair<double, std::uint64_t>> since_out;   // (time since the gap began, size)
  std::vector<std::pair<double, std::uint64_t>> until_back;  // (time until it is needed, size)
  for (std::size_t i = 0; i < n; ++i) {
    since_out.clear();
    until_back.clear();
    double absent = 0;  // bytes that could each be out at this time
    for (const Window& w : windows) {
      for (const double t : {timeline.start(i), timeline.start(i) + timeline.period_ns()}) {
        if (t < w.begin || t > w.end) continue;
        since_out.emplace_back(t - w.gap_begin, w.size);
        until_back.emplace_back(w.gap_end - t, w.size);
        absent += static_cast<double>(w.size);
        break;  // one gap of a buffer at a time; a window is shorter than two iterations
      }
    }
    const double out = std::min({absent, engine_capacity(since_out, link.d2h_bytes_per_ns),
                                 engine_capacity(until_back, link.h2d_bytes_per_ns)});
    // Peaks are whole bytes: live - floor(out) is the ceiling of the real bound.
    const auto out_bytes = static_cast<std::uint64_t>(out);
    const std::uint64_t lb = live[i] > out_bytes ? live[i] - out_bytes : 0;
    if (lb > result.peak_bytes || i == 0) {
      result.peak_bytes = std::max(result.peak_bytes, lb);
      result.op = static_cast<std::uint32_t>(i);
      result.live_bytes = live[i];
    }
  }
  return result;
}

}  // namespace memtool::swapper
