// IntervalIndex: see interval_index.hpp.
#include "interval_index.hpp"

namespace memtool::planner::detail {

IntervalIndex::IntervalIndex(std::uint32_t sections) {
  while (leaves_ < sections + 1) leaves_ *= 2;
  cover_.resize(2 * leaves_);
  start_.resize(2 * leaves_);
}

void IntervalIndex::insert(std::uint32_t item, Span span) {
  for (std::uint32_t lo = leaves_ + span.first, hi = leaves_ + span.end; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1U) {
      if (cover_[lo].empty()) touched_.push_back(lo);
      cover_[lo++].push_back(item);
    }
    if (hi & 1U) {
      if (cover_[--hi].empty()) touched_.push_back(hi);
      cover_[hi].push_back(item);
    }
  }
  for (std::uint32_t node = leaves_ + span.first; node >= 1; node /= 2) {
    if (start_[node].empty() && cover_[node].empty()) touched_.push_back(node);
    start_[node].push_back(item);
  }
}

void IntervalIndex::clear() {
  for (std::uint32_t node : touched_) {
    cover_[node].clear();
    start_[node].clear();
  }
  touched_.clear();
}

}  // namespace memtool::planner::detail
