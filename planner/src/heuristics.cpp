// Orders for the greedy heuristics: see heuristics.hpp.
#include "heuristics.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <tuple>
#include <utility>

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

namespace {

// The items sorted by a key computed once per item (ascending; ties by index), so the sort
// moves small records instead of reading items at random for every comparison.
template <typename Key, typename MakeKey>
std::vector<std::uint32_t> sorted_by(std::size_t n, MakeKey&& make_key) {
  std::vector<std::pair<Key, std::uint32_t>> keyed(n);
  for (std::uint32_t i = 0; i < n; ++i) keyed[i] = {make_key(i), i};
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::uint32_t> items(n);
  for (std::size_t k = 0; k < n; ++k) items[k] = keyed[k].second;
  return items;
}

using Key3 = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;
using Key4 = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;

}  // namespace

std::vector<std::uint32_t> heuristic_order(const Prepared& p, Order order) {
  const auto& it = p.items;
  const std::size_t n = it.size();
  // Larger first is ascending in the complement.
  auto desc = [](std::uint64_t v) { return ~v; };
  switch (order) {
    case Order::size:  // largest, then longer-lived, then earlier
      return sorted_by<Key3>(n, [&](std::uint32_t i) {
        return Key3{desc(it[i].footprint), desc(it[i].live_time), it[i].begin};
      });
    case Order::size_by_start:  // largest, then earlier
      return sorted_by<Key3>(n, [&](std::uint32_t i) { return Key3{desc(it[i].footprint), it[i].begin, 0}; });
    case Order::lifetime:  // longest-lived, then as size
      return sorted_by<Key3>(n, [&](std::uint32_t i) {
        return Key3{desc(it[i].live_time), desc(it[i].footprint), it[i].begin};
      });
    case Order::area: {
      // footprint × live time can exceed 64 bits: a long double product, then as size.
      using AreaKey = std::tuple<long double, std::uint64_t, std::uint64_t, std::uint64_t>;
      return sorted_by<AreaKey>(n, [&](std::uint32_t i) {
        const long double area = static_cast<long double>(it[i].footprint) * static_cast<long double>(it[i].live_time);
        return AreaKey{-area, desc(it[i].footprint), desc(it[i].live_time), it[i].begin};
      });
    }
    case Order::breadth: {
      const auto peak = peak_load_per_item(p);
      return sorted_by<Key4>(n, [&](std::uint32_t i) {
        return Key4{desc(peak[i]), desc(it[i].footprint), desc(it[i].live_time), it[i].begin};
      });
    }
    case Order::conflicts: {
      const auto degree = conflicts_per_item(p);
      return sorted_by<Key4>(n, [&](std::uint32_t i) {
        return Key4{desc(degree[i]), desc(it[i].footprint), desc(it[i].live_time), it[i].begin};
      });
    }
  }
  return sorted_by<Key3>(n, [](std::uint32_t) { return Key3{}; });
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
