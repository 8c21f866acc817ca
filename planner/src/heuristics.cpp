// Orders for the greedy heuristics: see heuristics.hpp.
#include "heuristics.hpp"

#include <algorithm>
#include <bit>
#include <numeric>

namespace memtool::planner::detail {

namespace {

// Largest live load over each item's spans, by range-maximum queries on a segment tree over the
// per-section load (O(S) memory: a sparse table would take S log S words, 300 MB at 1 M buffers).
std::vector<std::uint64_t> peak_load_per_item(const Prepared& p) {
  std::vector<std::uint64_t> result(p.items.size(), 0);
  const std::size_t n = p.section_count;
  if (n == 0) return result;
  std::vector<std::uint64_t> tree(2 * n, 0);
  std::copy(p.load.begin(), p.load.end(), tree.begin() + static_cast<std::ptrdiff_t>(n));
  for (std::size_t k = n - 1; k >= 1; --k) tree[k] = std::max(tree[2 * k], tree[2 * k + 1]);
  for (std::size_t i = 0; i < p.items.size(); ++i) {
    const Span* spans = p.spans_of(static_cast<std::uint32_t>(i));
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) {
      std::uint64_t most = 0;
      for (std::size_t lo = spans[k].first + n, hi = spans[k].end + n; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1U) most = std::max(most, tree[lo++]);
        if (hi & 1U) most = std::max(most, tree[--hi]);
      }
      result[i] = std::max(result[i], most);
    }
  }
  return result;
}

std::vector<std::uint64_t> conflicts_per_item(const Prepared& p) {
  std::vector<std::uint32_t> firsts, ends;
  for (const Span& s : p.spans) {
    firsts.push_back(s.first);
    ends.push_back(s.end);
  }
  std::sort(firsts.begin(), firsts.end());
  std::sort(ends.begin(), ends.end());
  std::vector<std::uint64_t> result(p.items.size(), 0);
  for (std::size_t i = 0; i < p.items.size(); ++i) {
    const Span* spans = p.spans_of(static_cast<std::uint32_t>(i));
    for (std::uint32_t k = 0; k < p.items[i].span_count; ++k) {
      const auto starting_before_end = std::lower_bound(firsts.begin(), firsts.end(), spans[k].end) - firsts.begin();
      const auto ended_by_first = std::upper_bound(ends.begin(), ends.end(), spans[k].first) - ends.begin();
      result[i] += static_cast<std::uint64_t>(starting_before_end - ended_by_first);
    }
  }
  return result;
}

}  // namespace

std::vector<std::uint32_t> heuristic_order(const Prepared& p, Order order) {
  std::vector<std::uint32_t> items(p.items.size());
  std::iota(items.begin(), items.end(), 0U);
  const auto& it = p.items;
  auto by_size = [&](std::uint32_t x, std::uint32_t y) {
    if (it[x].footprint != it[y].footprint) return it[x].footprint > it[y].footprint;
    if (it[x].live_time != it[y].live_time) return it[x].live_time > it[y].live_time;
    if (it[x].begin != it[y].begin) return it[x].begin < it[y].begin;
    return x < y;
  };
  switch (order) {
    case Order::size:
      std::sort(items.begin(), items.end(), by_size);
      break;
    case Order::size_by_start:
      std::sort(items.begin(), items.end(), [&](std::uint32_t x, std::uint32_t y) {
        if (it[x].footprint != it[y].footprint) return it[x].footprint > it[y].footprint;
        if (it[x].begin != it[y].begin) return it[x].begin < it[y].begin;
        return x < y;
      });
      break;
    case Order::lifetime:
      std::sort(items.begin(), items.end(), [&](std::uint32_t x, std::uint32_t y) {
        if (it[x].live_time != it[y].live_time) return it[x].live_time > it[y].live_time;
        return by_size(x, y);
      });
      break;
    case Order::area: {
      // footprint × live time can exceed 64 bits; compare as long double products.
      std::sort(items.begin(), items.end(), [&](std::uint32_t x, std::uint32_t y) {
        const long double ax = static_cast<long double>(it[x].footprint) * static_cast<long double>(it[x].live_time);
        const long double ay = static_cast<long double>(it[y].footprint) * static_cast<long double>(it[y].live_time);
        if (ax != ay) return ax > ay;
        return by_size(x, y);
      });
      break;
    }
    case Order::breadth: {
      const auto peak = peak_load_per_item(p);
      std::sort(items.begin(), items.end(), [&](std::uint32_t x, std::uint32_t y) {
        if (peak[x] != peak[y]) return peak[x] > peak[y];
        return by_size(x, y);
      });
      break;
    }
    case Order::conflicts: {
      const auto degree = conflicts_per_item(p);
      std::sort(items.begin(), items.end(), [&](std::uint32_t x, std::uint32_t y) {
        if (degree[x] != degree[y]) return degree[x] > degree[y];
        return by_size(x, y);
      });
      break;
    }
  }
  return items;
}

std::uint64_t heuristic_order_work(const Prepared& p, Order order) {
  // Per buffer and per halving of n: one sort with its comparisons, and for breadth, area and
  // conflicts the keys (range maxima, products, two more sorts and binary searches).
  std::uint64_t per_step = 8;
  if (order == Order::breadth) per_step = 10;
  if (order == Order::area) per_step = 14;
  if (order == Order::conflicts) per_step = 26;
  const std::uint64_t n = p.items.size();
  return n * per_step * static_cast<std::uint64_t>(std::bit_width(n)) + 2 * p.spans.size();
}

const std::vector<HeuristicSpec>& heuristic_specs() {
  static const std::vector<HeuristicSpec> specs{
      {"greedy-size", "largest first, best-fitting gap", Order::size, Fit::best},
      {"greedy-size-ff", "largest first, lowest gap that fits", Order::size, Fit::first},
      {"greedy-lifetime", "longest-lived first, best-fitting gap", Order::lifetime, Fit::best},
      {"greedy-area", "largest size x lifetime first, best-fitting gap", Order::area, Fit::best},
      {"greedy-breadth", "buffers of the busiest moments first, best-fitting gap", Order::breadth, Fit::best},
      {"greedy-conflicts", "most conflicting first, best-fitting gap", Order::conflicts, Fit::best},
  };
  return specs;
}

}  // namespace memtool::planner::detail
