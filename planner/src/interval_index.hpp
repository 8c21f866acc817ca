// An index of placed buffers by the sections they are live in, answering "which placed buffers
// are live somewhere in sections [a, b)?" in O(log S + answers). Two segment trees over
// sections: one keeps each span in its O(log S) canonical nodes (stabbing the query's first
// section finds the spans that cover it), the other keeps each span at the ancestors of its first
// section (spans starting inside the query). The two answers are disjoint, so a single-span
// query reports each span once. It replaces SmartPool's n×n conflict matrix.
#pragma once

#include <cstdint>
#include <vector>

#include "prepared.hpp"

namespace memtool::planner::detail {

class IntervalIndex {
 public:
  explicit IntervalIndex(std::uint32_t sections);
  void insert(std::uint32_t item, Span span);
  void clear();
  // Calls visit(item) for every inserted span intersecting `span` (an item with several spans
  // may be reported several times). Returns the number of reports (the work done).
  template <typename Visit>
  std::uint64_t for_each_intersecting(Span span, Visit&& visit) const {
    std::uint64_t reported = 0;
    for (std::uint32_t node = leaves_ + span.first; node >= 1; node /= 2) {
      for (std::uint32_t item : cover_[node]) visit(item);
      reported += cover_[node].size();
    }
    std::uint32_t lo = leaves_ + span.first + 1;
    std::uint32_t hi = leaves_ + span.end;
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1U) {
        for (std::uint32_t item : start_[lo]) visit(item);
        reported += start_[lo].size();
        ++lo;
      }
      if (hi & 1U) {
        --hi;
        for (std::uint32_t item : start_[hi]) visit(item);
        reported += start_[hi].size();
      }
    }
    return reported + 1;
  }

 private:
  std::uint32_t leaves_ = 1;
  std::vector<std::vector<std::uint32_t>> cover_;
  std::vector<std::vector<std::uint32_t>> start_;
  std::vector<std::uint32_t> touched_;  // nodes with entries, for clear()
};

}  // namespace memtool::planner::detail
