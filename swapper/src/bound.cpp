// The zero-stall lower bound on the peak (bound.hpp).
#include "memtool/swapper/bound.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "memtool/swapper/candidates.hpp"
#include "threshold_tree.hpp"

namespace memtool::swapper {
namespace {

// Doubles hold every integer up to 2^53 exactly: times (sums of whole nanoseconds) and byte
// counts below it add and subtract without rounding.
constexpr double kExactIntegers = 9007199254740992.0;
// How far (relative to the largest magnitude summed) a tree value may be from the same value
// computed term by term: the rounding of a path's sums is a few dozen units in the last place
// (about 1e-14); this is far above it and still keeps the near-lowest items to a handful.
constexpr double kTreeSlack = 1e-9;

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

// The bytes that can be out at times t and t + one period, computed directly: every window
// scanned, its distances sorted.
double direct_out(const std::vector<Window>& windows, double t, double t_next, const Link& link) {
  std::vector<std::pair<double, std::uint64_t>> since_out;
  std::vector<std::pair<double, std::uint64_t>> until_back;
  double absent = 0;
  for (const Window& w : windows) {
    for (const double at : {t, t_next}) {
      if (at < w.begin || at > w.end) continue;
      since_out.emplace_back(at - w.gap_begin, w.size);
      until_back.emplace_back(w.gap_end - at, w.size);
      absent += static_cast<double>(w.size);
      break;
    }
  }
  return std::min(
      {absent, engine_capacity(since_out, link.d2h_bytes_per_ns), engine_capacity(until_back, link.h2d_bytes_per_ns)});
}

// A window is counted at t ("now") or, when it does not contain t, at t + one period ("later"):
// item 2w + 0 or 2w + 1.
enum Side : std::uint32_t { kNow = 0, kLater = 1 };

// The windows that contain a time moving forward: a window comes in once the time reaches its
// begin and leaves once the time passes its end.
class Sweep {
 public:
  explicit Sweep(const std::vector<Window>& windows) : windows_(windows), in_(windows.size(), 0) {
    by_begin_.resize(windows.size());
    std::iota(by_begin_.begin(), by_begin_.end(), 0U);
    by_end_ = by_begin_;
    std::stable_sort(by_begin_.begin(), by_begin_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return windows[a].begin < windows[b].begin; });
    std::stable_sort(by_end_.begin(), by_end_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return windows[a].end < windows[b].end; });
  }
  // Calls changed(w) for each window that came in or left.
  template <typename Changed>
  void advance(double t, const Changed& changed) {
    for (; entered_ < by_begin_.size() && windows_[by_begin_[entered_]].begin <= t; ++entered_) {
      in_[by_begin_[entered_]] = 1;
      changed(by_begin_[entered_]);
    }
    // Every window ending before t began before it, so it has come in above.
    for (; left_ < by_end_.size() && windows_[by_end_[left_]].end < t; ++left_) {
      in_[by_end_[left_]] = 0;
      changed(by_end_[left_]);
    }
  }
  [[nodiscard]] bool contains(std::uint32_t w) const { return in_[w] != 0; }

 private:
  const std::vector<Window>& windows_;
  std::vector<std::uint32_t> by_begin_;
  std::vector<std::uint32_t> by_end_;
  std::size_t entered_ = 0;
  std::size_t left_ = 0;
  std::vector<std::uint8_t> in_;
};

// One copy engine's capacity over the items counted at a time t. An item's distance is
// tau - key (tau is t or -t; the key a fixed time of its window, moved back one period for a
// "later" item), so the items sorted by key are sorted by distance at every t, farthest first,
// and the capacity is bytes_per_ns * tau + min over items of (-bytes_per_ns * key + bytes of the
// items before it): a ThresholdTree over the keys. (Items of equal distance are one threshold in
// engine_capacity; here the first of them has that threshold's term and the others larger ones,
// so the lowest is the same.)
class Engine {
 public:
  Engine(const std::vector<double>& keys, const std::vector<Window>& windows, double bytes_per_ns)
      : windows_(windows),
        bytes_per_ns_(bytes_per_ns),
        order_(by_key(keys)),
        position_(keys.size()),
        tree_(costs(keys, order_, bytes_per_ns)) {
    for (std::size_t p = 0; p < order_.size(); ++p) position_[order_[p]] = p;
  }

  void set(std::uint32_t item, bool present) {
    const auto size = static_cast<std::int64_t>(windows_[item / 2].size);
    tree_.set(position_[item], present, position_[item] + 1, present ? size : -size);
  }

  // min(absent, min over thresholds), each threshold's term computed as engine_capacity does:
  // bytes_per_ns * distance + bytes beyond. `distance(item)` is the item's distance at t.
  template <typename Distance>
  [[nodiscard]] double capacity(double absent, double slack, const Distance& distance) const {
    double best = absent;
    tree_.near_lowest(slack, [&](std::size_t position, std::int64_t bytes_before) {
      best = std::min(best, bytes_per_ns_ * distance(order_[position]) + static_cast<double>(bytes_before));
    });
    return best;
  }

 private:
  static std::vector<std::uint32_t> by_key(const std::vector<double>& keys) {
    std::vector<std::uint32_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0U);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
    return order;
  }
  static std::vector<double> costs(const std::vector<double>& keys, const std::vector<std::uint32_t>& order,
                                   double bytes_per_ns) {
    std::vector<double> out(order.size());
    for (std::size_t p = 0; p < order.size(); ++p) out[p] = -bytes_per_ns * keys[order[p]];
    return out;
  }

  const std::vector<Window>& windows_;
  double bytes_per_ns_;
  std::vector<std::uint32_t> order_;   // items by key
  std::vector<std::size_t> position_;  // of each item in order_
  detail::ThresholdTree tree_;
};

}  // namespace

// Each op's time t sees the windows containing t and, of the others, those containing t + one
// period (a window is shorter than two iterations). Two sweeps keep those sets as t moves, and
// for each engine a ThresholdTree keeps the lowest threshold term over them, so an op costs
// O(log W) and the whole O((n + W) log W) instead of O(n × W). The tree only finds the terms
// near the lowest; those are recomputed term for term as engine_capacity computes them, so the
// answer is the direct computation's (tests/unit/swapper/test_bound_sweep.cpp checks it). That
// holds while times and byte sums are exact in doubles (below 2^53 ns and bytes: 104 days, 9 PB);
// past that the sums' order matters and each op is computed directly. An op whose live bytes are
// no more than the bound so far is skipped.
Bound bound(const Iteration& iteration, const Link& link) {
  if (std::string e = validate(iteration); !e.empty()) throw std::invalid_argument("swapper: " + e);
  if (std::string e = validate(link); !e.empty()) throw std::invalid_argument("swapper: " + e);
  Bound result;
  const std::size_t n = iteration.ops.size();
  if (n == 0) return result;
  const BaseTimeline timeline(iteration);
  const std::vector<std::uint64_t> live = live_bytes_per_op(iteration);
  result.plain_peak_bytes = *std::max_element(live.begin(), live.end());
  const double period = timeline.period_ns();

  std::vector<Window> windows;
  double largest_time = 2 * period;  // t + one period stays below it
  double all_bytes = 0;
  for (const Gap& gap : find_gaps(iteration)) {
    const std::uint64_t size = iteration.buffers[gap.buffer].size;
    Window w;
    w.gap_begin = timeline.end(gap.from_op);
    w.gap_end = timeline.start(gap.to_op);
    w.begin = w.gap_begin + link.d2h_ns(size);
    w.end = w.gap_end - link.h2d_ns(size);
    w.size = size;
    if (w.begin > w.end) continue;
    windows.push_back(w);
    largest_time = std::max(largest_time, w.gap_end);
    all_bytes += static_cast<double>(size);
  }
  const bool exact = largest_time <= kExactIntegers && all_bytes <= kExactIntegers;

  // Keys (see Engine): since the gap began, t - gap_begin; until it is needed, gap_end - t.
  std::vector<double> out_keys(2 * windows.size());
  std::vector<double> back_keys(2 * windows.size());
  for (std::size_t w = 0; w < windows.size(); ++w) {
    out_keys[2 * w + kNow] = windows[w].gap_begin;
    out_keys[2 * w + kLater] = windows[w].gap_begin - period;
    back_keys[2 * w + kNow] = -windows[w].gap_end;
    back_keys[2 * w + kLater] = period - windows[w].gap_end;
  }
  Engine d2h(out_keys, windows, link.d2h_bytes_per_ns);
  Engine h2d(back_keys, windows, link.h2d_bytes_per_ns);
  const double slack =
      kTreeSlack * (std::max(link.d2h_bytes_per_ns, link.h2d_bytes_per_ns) * 2 * largest_time + all_bytes + 1);

  Sweep now(windows);
  Sweep later(windows);
  std::vector<std::uint8_t> counted(windows.size(), 0);  // 0: not counted, else 1 + its Side
  std::int64_t absent_bytes = 0;                         // bytes that could each be out
  const auto recount = [&](std::uint32_t w) {
    const std::uint8_t side = now.contains(w) ? 1 + kNow : later.contains(w) ? 1 + kLater : 0;
    if (side == counted[w]) return;
    const auto size = static_cast<std::int64_t>(windows[w].size);
    if (counted[w] != 0) {
      d2h.set(2 * w + counted[w] - 1, false);
      h2d.set(2 * w + counted[w] - 1, false);
      absent_bytes -= size;
    }
    if (side != 0) {
      d2h.set(2 * w + side - 1, true);
      h2d.set(2 * w + side - 1, true);
      absent_bytes += size;
    }
    counted[w] = side;
  };

  for (std::size_t i = 0; i < n; ++i) {
    const double t = timeline.start(i);
    const double t_next = timeline.start(i) + period;
    if (exact) {
      now.advance(t, recount);
      later.advance(t_next, recount);
    }
    // An op with no more live bytes than the bound so far cannot raise it (its own is lower).
    if (i != 0 && live[i] <= result.peak_bytes) continue;
    double out = 0;
    if (exact) {
      const auto absent = static_cast<double>(absent_bytes);
      const double since_out = d2h.capacity(absent, slack, [&](std::uint32_t item) {
        return (item % 2 == kNow ? t : t_next) - windows[item / 2].gap_begin;
      });
      const double until_back = h2d.capacity(absent, slack, [&](std::uint32_t item) {
        return windows[item / 2].gap_end - (item % 2 == kNow ? t : t_next);
      });
      out = std::min({absent, since_out, until_back});
    } else {
      out = direct_out(windows, t, t_next, link);
    }
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
