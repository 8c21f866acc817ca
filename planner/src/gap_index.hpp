// The greedy placer's index of placed buffers: for a time span, the address ranges occupied by
// placed buffers live somewhere in it, as a few lists already sorted and merged (plus a few
// loose ranges), so the gaps between them come out in address order without visiting each
// conflicting buffer or sorting them all.
//
// A buffer live somewhere in sections [a, b) is live at section a, or starts inside (a, b).
//  - Live at a: a segment tree over sections keeps each span at its O(log S) canonical nodes.
//    A span canonical at height H0 or above is copied into every node at height H0 under it,
//    whose union then holds every buffer covering that node whole. Below H0, which spans are
//    canonical at a node is known before anything is placed, so each node has a fixed run of
//    slots in one array, filled in as its spans are placed (contiguous, unlike lists grown in
//    placement order); a node with many spans (where endpoints cluster, as in real traces)
//    keeps a union instead. Stabbing a: the union at a's H0 ancestor plus the slots and small
//    unions on the path below it — one long list (mostly one solid run per stack of buffers)
//    and a few short ones.
//  - Starting inside: nodes at height H1 and above keep the union of the ranges of the spans
//    starting in them (fed in batches: written far more often than read); below H1, the slots
//    of the spans starting in each section, again a fixed run per section.
// Unions merge touching and overlapping ranges, so a column of packed buffers costs one entry.
// H0 is chosen so that the copies stay within a few per buffer (2^H0 ≈ the mean span / 8:
// lower, the long unions a query merges shrink faster than the copies grow; measured at 1 M):
// memory and insertion work O(n log S), a query O(log S + the lists' lengths).
//
// Everything is a template on the range type: 16-byte ranges of byte addresses, or 8-byte ones
// in granules (greedy.hpp picks them where a problem's addresses fit in 32 bits): the placer
// streams these lists through the caches, so half the bytes is most of the time it spends.
#pragma once

#include <cstdint>
#include <vector>

#include "prepared.hpp"

namespace memtool::planner::detail {

template <typename T>
struct BasicRange {
  using Coordinate = T;
  T lo = 0;
  T hi = 0;  // exclusive; 0 in a slot: not placed yet
};
using Range = BasicRange<std::uint64_t>;        // bytes
using NarrowRange = BasicRange<std::uint32_t>;  // granules, where every address fits

// Work is counted in eighths of a unit (greedy_costs.hpp) here and in GreedyPlacer, except for
// setup_work(), in units.

// Disjoint, sorted, non-touching address ranges.
template <typename R>
class BasicRangeUnion {
 public:
  // Adds [r.lo, r.hi); returns the work done.
  std::uint64_t insert(R r);
  // Adds a batch (reordered in place, then emptied) in one merge; returns the work done.
  std::uint64_t insert(std::vector<R>& batch);
  void clear() { ranges_.clear(); }
  [[nodiscard]] std::size_t size() const { return ranges_.size(); }
  [[nodiscard]] const R* begin() const { return ranges_.data(); }
  [[nodiscard]] const R* end() const { return ranges_.data() + ranges_.size(); }
  [[nodiscard]] bool empty() const { return ranges_.empty(); }

 private:
  std::vector<R> ranges_;
  std::vector<R> scratch_;
};
using RangeUnion = BasicRangeUnion<Range>;

// A RangeUnion fed in batches: ranges wait in a list and are merged in when it grows as long as
// the union, or when the union is read. For unions written far more often than read.
template <typename R>
class LazyRangeUnion {
 public:
  std::uint64_t insert(R r) {
    pending_.push_back(r);
    return pending_.size() > 32 && pending_.size() > merged_.size() ? 7 + merged_.insert(pending_) : 7;
  }
  std::uint64_t flush() { return pending_.empty() ? 0 : merged_.insert(pending_); }
  void clear() {
    merged_.clear();
    pending_.clear();
  }
  [[nodiscard]] const BasicRangeUnion<R>& merged() const { return merged_; }

 private:
  BasicRangeUnion<R> merged_;
  std::vector<R> pending_;
};

template <typename R>
class GapIndex {
 public:
  // For the spans of `prepared` (all of them may be inserted, each once per clear()).
  explicit GapIndex(const Prepared& prepared);
  // Span `index` (into prepared.spans) placed at `range`; returns the work done.
  std::uint64_t insert(std::uint32_t index, R range);
  // Empties it; returns the work done.
  std::uint64_t clear();
  // What the constructor cost, in work units; at most setup_work_bound(prepared).
  [[nodiscard]] std::uint64_t setup_work() const { return setup_work_; }
  [[nodiscard]] static std::uint64_t setup_work_bound(const Prepared& prepared);

  // Sorted lists whose union is the occupancy of one or more spans, collected by gather().
  struct Lists {
    std::vector<const BasicRangeUnion<R>*> sorted;
    std::vector<R> loose;  // from slots: not sorted
    void clear() {
      sorted.clear();
      loose.clear();
    }
  };
  // Adds the lists for `span` to `out`; returns the work done. The lists stay valid until the
  // next insert or gather.
  std::uint64_t gather(Span span, Lists& out);
  // Asks for the lines a gather of `span` reads first (its path's entries and slots, its
  // full-cover union, its first start slots), a placement ahead: each is a miss in an index of
  // this size.
  void prefetch(Span span) const;

 private:
  [[nodiscard]] std::uint32_t height(std::uint32_t node) const;
  // Calls visit(node) for the canonical nodes of `span` below H0, bottom up.
  template <typename Visit>
  void low_nodes(Span span, Visit&& visit) const;
  // The placed ranges among slots [begin, end) into `out`; returns how many slots it read.
  std::uint64_t append(std::uint32_t begin, std::uint32_t end, std::vector<R>& out) const;

  const Prepared& prepared_;
  std::uint32_t leaves_ = 1;
  std::uint32_t levels_ = 0;  // leaves_ == 2^levels_
  std::uint32_t h0_ = 0;      // height of the full-cover nodes
  std::uint32_t h1_ = 0;      // lowest height with a start union
  // Cover slots below H0: node -> its run [cover_begin_[node], cover_begin_[node + 1]) of
  // cover_span_ (the spans, by index, ascending) and cover_range_; a node whose run is longer
  // than a few slots has union_of_[node] = its union + 1 instead (0: none).
  std::vector<std::uint32_t> cover_begin_;
  std::vector<std::uint32_t> cover_span_;
  std::vector<R> cover_range_;
  std::vector<std::uint32_t> union_of_;
  std::vector<BasicRangeUnion<R>> unions_;
  std::vector<BasicRangeUnion<R>> full_;  // nodes at height H0, left to right
  std::vector<LazyRangeUnion<R>> start_;  // nodes at height >= H1, by node index
  // Start slots: section -> run [start_begin_[s], start_begin_[s + 1]); span -> its slot.
  std::vector<std::uint32_t> start_begin_;
  std::vector<std::uint32_t> start_slot_;
  std::vector<R> start_range_;
  std::uint64_t setup_work_ = 0;
};

extern template class BasicRangeUnion<Range>;
extern template class BasicRangeUnion<NarrowRange>;
extern template class GapIndex<Range>;
extern template class GapIndex<NarrowRange>;

}  // namespace memtool::planner::detail
