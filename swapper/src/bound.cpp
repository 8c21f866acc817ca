// The zero-stall lower bound on the peak (bound.hpp).
#include "memtool/swapper/bound.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <set>
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
// bytes_per_ns * a + (bytes of items farther than a), items given as (distance, size) sorted by
// distance.
double engine_capacity(const std::vector<std::pair<double, std::uint64_t>>& items, double bytes_per_ns) {
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

// The windows that contain a time moving forward: they come in by their begin and leave after
// their end, and are kept in one order (a distance from that time grows along it).
class Sweep {
 public:
  using Order = std::function<bool(std::uint32_t, std::uint32_t)>;
  Sweep(const std::vector<Window>& windows, const Order& order) : windows_(windows), active_(order) {
    by_begin_.resize(windows.size());
    std::iota(by_begin_.begin(), by_begin_.end(), 0U);
    std::stable_sort(by_begin_.begin(), by_begin_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return windows[a].begin < windows[b].begin; });
  }
  void advance(double t) {
    for (; next_ < by_begin_.size() && windows_[by_begin_[next_]].begin <= t; ++next_) {
      const std::uint32_t w = by_begin_[next_];
      ends_.emplace(windows_[w].end, w);
      active_.insert(w);
    }
    while (!ends_.empty() && ends_.top().first < t) {
      active_.erase(ends_.top().second);
      ends_.pop();
    }
  }
  [[nodiscard]] const std::set<std::uint32_t, Order>& active() const { return active_; }

 private:
  const std::vector<Window>& windows_;
  std::vector<std::uint32_t> by_begin_;
  std::size_t next_ = 0;
  std::priority_queue<std::pair<double, std::uint32_t>, std::vector<std::pair<double, std::uint32_t>>, std::greater<>>
      ends_;
  std::set<std::uint32_t, Order> active_;
};

// Two lists sorted by distance merged into one.
void merge_into(const std::vector<std::pair<double, std::uint64_t>>& a,
                const std::vector<std::pair<double, std::uint64_t>>& b,
                std::vector<std::pair<double, std::uint64_t>>& out) {
  out.resize(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin());
}

}  // namespace

// Each op's time t sees the windows containing t and, of the others, those containing t + one
// period (a window is shorter than two iterations). Four sweeps keep them, each in the order of
// its distance (time since the gap began: latest gap begin first; time until it is needed:
// earliest gap end first), so that each op's lists come sorted without sorting: O(n log W + the
// windows seen) instead of a sort of every op's windows; an op whose live bytes are no more than
// the bound so far is skipped. The sums and distances are those of a direct computation, term
// for term.
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
  const auto latest_begin = [&](std::uint32_t a, std::uint32_t b) {
    return windows[a].gap_begin != windows[b].gap_begin ? windows[a].gap_begin > windows[b].gap_begin : a < b;
  };
  const auto earliest_end = [&](std::uint32_t a, std::uint32_t b) {
    return windows[a].gap_end != windows[b].gap_end ? windows[a].gap_end < windows[b].gap_end : a < b;
  };
  Sweep now_out(windows, latest_begin);
  Sweep now_back(windows, earliest_end);
  Sweep later_out(windows, latest_begin);
  Sweep later_back(windows, earliest_end);
  std::vector<std::uint8_t> now(windows.size(), 0);  // contains this op's t

  std::vector<std::pair<double, std::uint64_t>> first, second;
  std::vector<std::pair<double, std::uint64_t>> since_out;   // (time since the gap began, size)
  std::vector<std::pair<double, std::uint64_t>> until_back;  // (time until it is needed, size)
  for (std::size_t i = 0; i < n; ++i) {
    const double t = timeline.start(i);
    const double t_next = timeline.start(i) + timeline.period_ns();
    now_out.advance(t);
    now_back.advance(t);
    later_out.advance(t_next);
    later_back.advance(t_next);
    // An op with no more live bytes than the bound so far cannot raise it (its own is lower).
    if (i != 0 && live[i] <= result.peak_bytes) continue;
    for (const std::uint32_t w : now_out.active()) now[w] = 1;
    double absent = 0;  // bytes that could each be out at this time
    first.clear();
    second.clear();
    for (const std::uint32_t w : now_out.active()) {
      first.emplace_back(t - windows[w].gap_begin, windows[w].size);
      absent += static_cast<double>(windows[w].size);
    }
    for (const std::uint32_t w : later_out.active()) {
      if (now[w]) continue;
      second.emplace_back(t_next - windows[w].gap_begin, windows[w].size);
      absent += static_cast<double>(windows[w].size);
    }
    merge_into(first, second, since_out);
    first.clear();
    second.clear();
    for (const std::uint32_t w : now_back.active()) first.emplace_back(windows[w].gap_end - t, windows[w].size);
    for (const std::uint32_t w : later_back.active()) {
      if (!now[w]) second.emplace_back(windows[w].gap_end - t_next, windows[w].size);
    }
    merge_into(first, second, until_back);
    for (const std::uint32_t w : now_out.active()) now[w] = 0;
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
