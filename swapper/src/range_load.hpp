// A load per op (bytes, signed) that the strategies change over ranges of ops and ask for its
// peak and where it exceeds a limit: a segment tree with range add, so that each of those is
// O(log n) instead of a scan of the iteration (the planner runs them once per chosen swap, which
// made planning quadratic in the iteration's length). Integer arithmetic: the answers are
// exactly those of the scan.
//
// Ranges are in unrolled positions (candidates.hpp): [begin, end) stands for the ops begin % n,
// (begin + 1) % n, ..., at most one whole period.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace memtool::swapper::detail {

class RangeLoad {
 public:
  RangeLoad() = default;
  template <typename Values>
  explicit RangeLoad(const Values& values) {
    assign(values);
  }

  template <typename Values>
  void assign(const Values& values) {
    n_ = values.size();
    max_.assign(2 * tree_size(), 0);
    add_.assign(2 * tree_size(), 0);
    if (n_ != 0) build(1, 0, n_, values);
  }

  [[nodiscard]] std::size_t size() const { return n_; }

  // Adds `delta` to the ops of unrolled positions [begin, end), no more than one period of them.
  void add(std::uint64_t begin, std::uint64_t end, std::int64_t delta) {
    if (n_ == 0 || end <= begin) return;
    end = std::min(end, begin + n_);
    const std::uint64_t b = begin % n_;
    const std::uint64_t e = b + (end - begin);
    if (e <= n_) {
      add(1, 0, n_, b, e, delta);
    } else {
      add(1, 0, n_, b, n_, delta);
      add(1, 0, n_, 0, e - n_, delta);
    }
  }

  // The value at unrolled position u.
  [[nodiscard]] std::int64_t at(std::uint64_t u) const {
    std::size_t node = 1;
    std::size_t lo = 0;
    std::size_t hi = n_;
    const std::size_t i = u % n_;
    std::int64_t sum = 0;
    while (hi - lo > 1) {
      sum += add_[node];
      const std::size_t mid = lo + (hi - lo) / 2;
      if (i < mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid;
      }
    }
    return sum + max_[node];
  }

  // The highest value (the lowest int64 when empty).
  [[nodiscard]] std::int64_t peak() const { return n_ == 0 ? std::numeric_limits<std::int64_t>::min() : max_[1]; }

  // The first / last unrolled position in [begin, end) whose value exceeds `limit`; `end` when none.
  [[nodiscard]] std::uint64_t first_over(std::uint64_t begin, std::uint64_t end, std::int64_t limit) const {
    for (std::uint64_t period = begin - begin % n_; begin < end; period += n_) {
      const std::uint64_t b = begin - period;
      const std::uint64_t e = std::min<std::uint64_t>(end - period, n_);
      const std::size_t found = first_over(1, 0, n_, b, e, limit, 0);
      if (found < e) return period + found;
      begin = period + n_;
    }
    return end;
  }
  [[nodiscard]] std::uint64_t last_over(std::uint64_t begin, std::uint64_t end, std::int64_t limit) const {
    for (std::uint64_t stop = end; stop > begin;) {
      const std::uint64_t period = (stop - 1) - (stop - 1) % n_;
      const std::uint64_t b = std::max(begin, period) - period;
      const std::uint64_t e = stop - period;
      const std::size_t found = last_over(1, 0, n_, b, e, limit, 0);
      if (found < e) return period + found;
      stop = period;
    }
    return end;
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  [[nodiscard]] std::size_t tree_size() const {
    std::size_t size = 1;
    while (size < n_) size *= 2;
    return 2 * size;
  }

  template <typename Values>
  void build(std::size_t node, std::size_t lo, std::size_t hi, const Values& values) {
    if (hi - lo == 1) {
      max_[node] = static_cast<std::int64_t>(values[lo]);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    build(2 * node, lo, mid, values);
    build(2 * node + 1, mid, hi, values);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }

  // max_[node]: the subtree's highest value, counting the adds of the node and those below it
  // (not of its ancestors); add_[node]: what was added to the whole subtree at this node.
  void add(std::size_t node, std::size_t lo, std::size_t hi, std::size_t b, std::size_t e, std::int64_t delta) {
    if (e <= lo || hi <= b) return;
    if (b <= lo && hi <= e) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    add(2 * node, lo, mid, b, e, delta);
    add(2 * node + 1, mid, hi, b, e, delta);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }

  // `above`: the adds of the node's ancestors.
  [[nodiscard]] std::size_t first_over(std::size_t node, std::size_t lo, std::size_t hi, std::size_t b, std::size_t e,
                                       std::int64_t limit, std::int64_t above) const {
    if (e <= lo || hi <= b || max_[node] + above <= limit) return e;
    if (hi - lo == 1) return lo;
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::int64_t below = above + add_[node];
    const std::size_t left = first_over(2 * node, lo, mid, b, e, limit, below);
    return left < e ? left : first_over(2 * node + 1, mid, hi, b, e, limit, below);
  }
  [[nodiscard]] std::size_t last_over(std::size_t node, std::size_t lo, std::size_t hi, std::size_t b, std::size_t e,
                                      std::int64_t limit, std::int64_t above) const {
    if (e <= lo || hi <= b || max_[node] + above <= limit) return e;
    if (hi - lo == 1) return lo;
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::int64_t below = above + add_[node];
    const std::size_t right = last_over(2 * node + 1, mid, hi, b, e, limit, below);
    return right < e ? right : last_over(2 * node, lo, mid, b, e, limit, below);
  }

  std::size_t n_ = 0;
  std::vector<std::int64_t> max_;
  std::vector<std::int64_t> add_;
};

}  // namespace memtool::swapper::detail
