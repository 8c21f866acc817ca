// GapIndex and RangeUnion: see gap_index.hpp.
#include "gap_index.hpp"

#include <algorithm>
#include <bit>

namespace memtool::planner::detail {

namespace {

constexpr std::uint32_t kStartUnionHeight = 5;  // H1: below it, spans starting in 32 sections are few

}  // namespace

std::uint64_t RangeUnion::insert(Range r) {
  // The first range that ends at or after r.lo: it and the ones after it that start at or
  // before r.hi touch or overlap r.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), r.lo, [](const Range& x, std::uint64_t lo) { return x.hi < lo; });
  auto last = first;
  while (last != ranges_.end() && last->lo <= r.hi) {
    r.lo = std::min(r.lo, last->lo);
    r.hi = std::max(r.hi, last->hi);
    ++last;
  }
  const auto moved = static_cast<std::uint64_t>(ranges_.end() - last);
  if (first == last) {
    ranges_.insert(first, r);
  } else {
    *first = r;
    ranges_.erase(first + 1, last);
  }
  return 2 + 12 * moved;
}

std::uint64_t RangeUnion::insert(std::vector<Range>& batch) {
  std::sort(batch.begin(), batch.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  scratch_.clear();
  auto push = [&](const Range& r) {
    if (!scratch_.empty() && r.lo <= scratch_.back().hi) {
      scratch_.back().hi = std::max(scratch_.back().hi, r.hi);
    } else {
      scratch_.push_back(r);
    }
  };
  auto a = ranges_.begin();
  auto b = batch.begin();
  while (a != ranges_.end() || b != batch.end()) {
    if (b == batch.end() || (a != ranges_.end() && a->lo <= b->lo)) {
      push(*a++);
    } else {
      push(*b++);
    }
  }
  const std::uint64_t work = 70 * (ranges_.size() + batch.size());
  ranges_.swap(scratch_);
  batch.clear();
  return work;
}

GapIndex::GapIndex(std::uint32_t sections, std::uint64_t span_sections, std::size_t spans) {
  while (leaves_ < sections + 1) {
    leaves_ *= 2;
    ++levels_;
  }
  const std::uint64_t mean = spans == 0 ? 1 : span_sections / spans;
  h0_ = std::min<std::uint32_t>(levels_ + 1, static_cast<std::uint32_t>(std::bit_width(mean / 4)));
  h1_ = std::min(kStartUnionHeight, levels_ + 1);
  low_slot_.assign(2 * static_cast<std::size_t>(leaves_), 0);
  if (h0_ <= levels_) full_.resize(std::size_t{1} << (levels_ - h0_));
  start_.resize((2 * static_cast<std::size_t>(leaves_)) >> h1_);
  start_head_.assign(leaves_, -1);
}

std::uint32_t GapIndex::height(std::uint32_t node) const {
  return levels_ - static_cast<std::uint32_t>(std::bit_width(node) - 1);
}

RangeUnion& GapIndex::low_cover(std::uint32_t node) {
  if (low_slot_[node] == 0) {
    if (low_used_ == low_.size()) low_.emplace_back();
    low_[low_used_].clear();
    low_slot_[node] = static_cast<std::uint32_t>(++low_used_);
    touched_.push_back(node);
  }
  return low_[low_slot_[node] - 1];
}

std::uint64_t GapIndex::insert(Span span, Range range) {
  std::uint64_t work = 1;
  const std::uint32_t full_base = h0_ <= levels_ ? 1U << (levels_ - h0_) : 0;
  auto cover = [&](std::uint32_t node) {
    const std::uint32_t h = height(node);
    if (h < h0_) {
      work += low_cover(node).insert(range);
      return;
    }
    // Every node at height H0 under this one: node << (h - H0) onwards.
    const std::uint32_t first = node << (h - h0_);
    const std::uint32_t count = 1U << (h - h0_);
    for (std::uint32_t x = first; x < first + count; ++x) work += full_[x - full_base].insert(range);
  };
  for (std::uint32_t lo = leaves_ + span.first, hi = leaves_ + span.end; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1U) cover(lo++);
    if (hi & 1U) cover(--hi);
  }
  // Starts: the section's list, and the unions of its ancestors from H1 up.
  start_pool_.push_back({range, start_head_[span.first]});
  if (start_head_[span.first] < 0) touched_.push_back(2 * leaves_ + span.first);
  start_head_[span.first] = static_cast<std::int32_t>(start_pool_.size() - 1);
  for (std::uint32_t node = (leaves_ + span.first) >> h1_; node >= 1; node /= 2) work += start_[node].insert(range);
  return work;
}

void GapIndex::clear() {
  for (std::uint32_t t : touched_) {
    if (t >= 2 * leaves_) {
      start_head_[t - 2 * leaves_] = -1;
    } else {
      low_slot_[t] = 0;
    }
  }
  low_used_ = 0;
  for (auto& u : full_) u.clear();
  for (auto& u : start_) u.clear();
  start_pool_.clear();
  touched_.clear();
}

std::uint64_t GapIndex::gather(Span span, Lists& out) {
  std::uint64_t work = 2;
  auto add = [&](const RangeUnion& u) {
    if (!u.empty()) out.sorted.emplace_back(u.begin(), u.end());
  };
  // Live at span.first.
  std::uint32_t node = leaves_ + span.first;
  for (std::uint32_t h = 0; h < h0_ && node >= 1; ++h, node /= 2) {
    if (low_slot_[node] != 0) add(low_[low_slot_[node] - 1]);
  }
  if (h0_ <= levels_) add(full_[node - (1U << (levels_ - h0_))]);
  // Starting in (span.first, span.end).
  std::uint32_t h = 0;
  auto starts = [&](std::uint32_t u) {
    if (h >= h1_) {
      work += start_[u].flush();
      add(start_[u].merged());
      return;
    }
    const std::uint32_t first = (u << h) - leaves_;
    for (std::uint32_t s = first; s < first + (1U << h); ++s) {
      for (std::int32_t e = start_head_[s]; e >= 0; e = start_pool_[e].second) out.loose.push_back(start_pool_[e].first);
    }
  };
  for (std::uint32_t lo = leaves_ + span.first + 1, hi = leaves_ + span.end; lo < hi; lo /= 2, hi /= 2, ++h) {
    if (lo & 1U) starts(lo++);
    if (hi & 1U) starts(--hi);
  }
  return work;
}

}  // namespace memtool::planner::detail
