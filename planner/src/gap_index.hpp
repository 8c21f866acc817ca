// The greedy placer's index of placed buffers: for a time span, the address ranges occupied by
// placed buffers live somewhere in it, as a few lists already sorted and merged, so the gaps
// between them come out in address order without visiting each conflicting buffer or sorting.
//
// A buffer live somewhere in sections [a, b) is live at section a, or starts inside (a, b).
//  - Live at a: a segment tree over sections keeps each span at its O(log S) canonical nodes.
//    Nodes below height H0 keep the union of their spans' address ranges; a span canonical at
//    H0 or above is copied into every node at height H0 under it, whose union then holds every
//    buffer covering that node whole. Stabbing a: the union at a's H0 ancestor plus the small
//    unions on the path below it — one long list (mostly one solid run per stack of buffers)
//    and a few short ones, instead of one list per tree level.
//  - Starting inside: nodes at height H1 and above keep the union of the ranges of the spans
//    starting in them; below H1, a list per section of the spans starting there.
// Unions merge touching and overlapping ranges, so a column of packed buffers costs one entry.
// H0 is chosen so that the copies stay within a few per buffer (2^H0 ≈ the mean span / 4):
// memory and insertion work O(n log S), a query O(log S + the lists' lengths).
#pragma once

#include <cstdint>
#include <vector>

#include "prepared.hpp"

namespace memtool::planner::detail {

struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;  // exclusive
};

// Disjoint, sorted, non-touching address ranges.
class RangeUnion {
 public:
  // Adds [r.lo, r.hi); returns the work done.
  std::uint64_t insert(Range r);
  // Adds a batch (reordered in place, then emptied) in one merge; returns the work done.
  std::uint64_t insert(std::vector<Range>& batch);
  void clear() { ranges_.clear(); }
  [[nodiscard]] std::size_t size() const { return ranges_.size(); }
  [[nodiscard]] const Range* begin() const { return ranges_.data(); }
  [[nodiscard]] const Range* end() const { return ranges_.data() + ranges_.size(); }
  [[nodiscard]] bool empty() const { return ranges_.empty(); }

 private:
  std::vector<Range> ranges_;
  std::vector<Range> scratch_;
};

// A RangeUnion fed in batches: ranges wait in a list and are merged in when it grows as long as
// the union, or when the union is read. For unions written far more often than read.
class LazyRangeUnion {
 public:
  std::uint64_t insert(Range r) {
    pending_.push_back(r);
    return pending_.size() > 32 && pending_.size() > merged_.size() ? 1 + merged_.insert(pending_) : 1;
  }
  std::uint64_t flush() { return pending_.empty() ? 0 : merged_.insert(pending_); }
  void clear() {
    merged_.clear();
    pending_.clear();
  }
  [[nodiscard]] const RangeUnion& merged() const { return merged_; }

 private:
  RangeUnion merged_;
  std::vector<Range> pending_;
};

class GapIndex {
 public:
  // `span_sections`: the sum of the lengths (in sections) of all spans that will be inserted,
  // which sets H0.
  GapIndex(std::uint32_t sections, std::uint64_t span_sections, std::size_t spans);
  // Returns the work done.
  std::uint64_t insert(Span span, Range range);
  void clear();

  // Sorted lists whose union is the occupancy of one or more spans, collected by gather().
  struct Lists {
    std::vector<std::pair<const Range*, const Range*>> sorted;
    std::vector<Range> loose;  // from the per-section start lists: not sorted
    void clear() {
      sorted.clear();
      loose.clear();
    }
  };
  // Adds the lists for `span` to `out`; returns the work done. The lists stay valid until the
  // next insert or gather.
  std::uint64_t gather(Span span, Lists& out);

 private:
  [[nodiscard]] std::uint32_t height(std::uint32_t node) const;
  RangeUnion& low_cover(std::uint32_t node);

  std::uint32_t leaves_ = 1;
  std::uint32_t levels_ = 0;   // leaves_ == 2^levels_
  std::uint32_t h0_ = 0;       // height of the full-cover nodes
  std::uint32_t h1_ = 0;       // lowest height with a start union
  // Cover unions below H0, allocated on first use: node -> slot + 1 (0: none).
  std::vector<std::uint32_t> low_slot_;
  std::vector<RangeUnion> low_;    // slots [0, low_used_) in use; the rest kept for reuse
  std::size_t low_used_ = 0;
  std::vector<RangeUnion> full_;   // nodes at height H0, left to right
  std::vector<LazyRangeUnion> start_;  // nodes at height >= H1, by node index
  // Per-section start lists, as linked lists in one pool (head per section, -1: empty).
  std::vector<std::int32_t> start_head_;
  std::vector<std::pair<Range, std::int32_t>> start_pool_;
  std::vector<std::uint32_t> touched_;  // for clear(): low cover nodes, and 2 * leaves + section for start lists
};

}  // namespace memtool::planner::detail
