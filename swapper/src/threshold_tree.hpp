// The lowest of min over thresholds of (cost of a threshold + bytes beyond it) for a set of items
// that changes (the bound's engine capacity, bound.cpp): items sit at fixed positions sorted by
// their order key, an item's value is its own cost plus the sizes of the present items before it,
// and a segment tree keeps, per node, the lowest value below it, with the sizes added over ranges
// as integers. Adding or removing an item is O(log n); the lowest value is read at the root.
//
// The values are doubles summed in another order than the caller's own formula, so the tree only
// narrows the search: `near_lowest` hands every present item whose value is within a slack of the
// lowest (with its exact integer sum of sizes before it), and the caller recomputes those its own
// way. The slack must cover the rounding of one path's sums (a few units in the last place of the
// largest magnitude involved; the caller chooses it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace memtool::swapper::detail {

class ThresholdTree {
 public:
  // `costs[p]`: the value of an item at position p before any size is added to it.
  explicit ThresholdTree(std::vector<double> costs) : costs_(std::move(costs)), n_(costs_.size()) {
    std::size_t nodes = 1;
    while (nodes < n_) nodes *= 2;
    sub_.assign(2 * nodes, kAbsent);
    total_.assign(2 * nodes, kAbsent);
    add_.assign(2 * nodes, 0);
  }

  // Marks the item at `position` present or absent (its cost counts or not), and adds `delta`
  // bytes to the positions [from, n) (those the item comes before).
  void set(std::size_t position, bool present, std::size_t from, std::int64_t delta) {
    if (n_ == 0) return;
    set_leaf(1, 0, n_, position, present);
    if (delta != 0 && from < n_) add(1, 0, n_, from, n_, delta);
  }

  // The lowest value of a present item (infinity when none is).
  [[nodiscard]] double lowest() const { return n_ == 0 ? kAbsent : total_[1]; }

  // Calls visit(position, bytes before it) for every present item whose value may be within
  // `slack` of the lowest.
  template <typename Visit>
  void near_lowest(double slack, const Visit& visit) const {
    if (n_ == 0 || lowest() == kAbsent) return;
    near(1, 0, n_, 0, lowest() + slack, visit);
  }

 private:
  static constexpr double kAbsent = std::numeric_limits<double>::infinity();

  void pull(std::size_t node) {
    sub_[node] = std::min(total_[2 * node], total_[2 * node + 1]);
    total_[node] = sub_[node] + static_cast<double>(add_[node]);
  }

  void set_leaf(std::size_t node, std::size_t lo, std::size_t hi, std::size_t position, bool present) {
    if (hi - lo == 1) {
      sub_[node] = present ? costs_[lo] : kAbsent;
      total_[node] = sub_[node] + static_cast<double>(add_[node]);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    if (position < mid) {
      set_leaf(2 * node, lo, mid, position, present);
    } else {
      set_leaf(2 * node + 1, mid, hi, position, present);
    }
    pull(node);
  }

  void add(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::size_t to, std::int64_t delta) {
    if (to <= lo || hi <= from) return;
    if (from <= lo && hi <= to) {
      add_[node] += delta;
      // From the children's lowest, not the old total: rounding does not build up over updates.
      total_[node] = sub_[node] + static_cast<double>(add_[node]);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    add(2 * node, lo, mid, from, to, delta);
    add(2 * node + 1, mid, hi, from, to, delta);
    pull(node);
  }

  template <typename Visit>
  void near(std::size_t node, std::size_t lo, std::size_t hi, std::int64_t above, double limit,
            const Visit& visit) const {
    if (total_[node] == kAbsent || total_[node] + static_cast<double>(above) > limit) return;
    const std::int64_t bytes = above + add_[node];
    if (hi - lo == 1) {
      visit(lo, bytes);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    near(2 * node, lo, mid, bytes, limit, visit);
    near(2 * node + 1, mid, hi, bytes, limit, visit);
  }

  std::vector<double> costs_;
  std::size_t n_ = 0;
  std::vector<double> sub_;        // lowest total of the children (a leaf: its cost, or absent)
  std::vector<double> total_;      // sub_ + add_: the lowest value below, without the ancestors' adds
  std::vector<std::int64_t> add_;  // bytes added to every position below
};

}  // namespace memtool::swapper::detail
