// GapIndex and RangeUnion: see gap_index.hpp.
#include "gap_index.hpp"

#include <algorithm>
#include <bit>
#include <tuple>
#include <utility>

#include "greedy_costs.hpp"

namespace memtool::planner::detail {

namespace {

namespace cost = greedy_cost;

constexpr std::uint32_t kStartUnionHeight = 5;  // H1: below it, spans starting in 32 sections are few
constexpr std::uint32_t kListLength = 8;        // a node with more cover slots keeps a union instead

}  // namespace

template <typename R>
std::uint64_t BasicRangeUnion<R>::insert(R r) {
  // The first range that ends at or after r.lo: it and the ones after it that start at or
  // before r.hi touch or overlap r.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), r.lo,
                                [](const R& x, typename R::Coordinate lo) { return x.hi < lo; });
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
  return cost::kUnionInsert + cost::kMoved * moved;
}

template <typename R>
std::uint64_t BasicRangeUnion<R>::insert(std::vector<R>& batch) {
  std::sort(batch.begin(), batch.end(), [](const R& x, const R& y) { return x.lo < y.lo; });
  scratch_.clear();
  scratch_.reserve(ranges_.size() + batch.size());
  auto push = [&](const R& r) {
    if (!scratch_.empty() && r.lo <= scratch_.back().hi) {
      scratch_.back().hi = std::max(scratch_.back().hi, r.hi);
    } else {
      scratch_.push_back(r);
    }
  };
  // The union's own ranges between two of the batch neither touch each other nor, past the
  // first few, what came before: they go over as one block copy (a read flushes a few ranges
  // into hundreds), only those next to a batch range are merged one by one.
  const R* a = ranges_.data();
  const R* const a_end = a + ranges_.size();
  auto copy_until = [&](const R* stop) {
    while (a != stop && !scratch_.empty() && a->lo <= scratch_.back().hi) push(*a++);
    scratch_.insert(scratch_.end(), a, stop);
    a = stop;
  };
  std::uint64_t searched = 0;
  for (const R& b : batch) {
    copy_until(std::upper_bound(a, a_end, b.lo, [](typename R::Coordinate lo, const R& x) { return lo < x.lo; }));
    push(b);
    searched += std::bit_width(static_cast<std::uint64_t>(a_end - a));
  }
  copy_until(a_end);
  const std::uint64_t work = cost::kBatchRange * batch.size() + cost::kRange * (searched + ranges_.size() / 4);
  ranges_.swap(scratch_);
  batch.clear();
  return work;
}

namespace {

// The tree's levels (leaves = 2^levels) and H0 for a problem.
std::pair<std::uint32_t, std::uint32_t> levels_and_h0(const Prepared& prepared) {
  std::uint32_t levels = 0;
  while ((std::uint64_t{1} << levels) < std::uint64_t{prepared.section_count} + 1) ++levels;
  std::uint64_t span_sections = 0;
  for (const Span& s : prepared.spans) span_sections += s.end - s.first;
  const std::uint64_t mean = prepared.spans.empty() ? 1 : span_sections / prepared.spans.size();
  return {levels, std::min<std::uint32_t>(levels + 1, static_cast<std::uint32_t>(std::bit_width(mean / 8)))};
}

}  // namespace

template <typename R>
std::uint64_t GapIndex<R>::setup_work_bound(const Prepared& prepared) {
  const auto [levels, h0] = levels_and_h0(prepared);
  const std::uint64_t spans = prepared.spans.size();
  // The constructor's count with every span at two low nodes per level, plus the pass above.
  return 6 * spans * 2 * h0 + 4 * (std::uint64_t{2} << levels) + 5 * spans + 2 * prepared.section_count;
}

template <typename R>
GapIndex<R>::GapIndex(const Prepared& prepared) : prepared_(prepared) {
  std::tie(levels_, h0_) = levels_and_h0(prepared);
  leaves_ = 1U << levels_;
  h1_ = std::min(kStartUnionHeight, levels_ + 1);
  // Cover slots: count per node, then fill in span order (so each run is sorted by span).
  const std::size_t nodes = 2 * static_cast<std::size_t>(leaves_);
  cover_begin_.assign(nodes + 1, 0);
  const auto spans = static_cast<std::uint32_t>(prepared.spans.size());
  for (std::uint32_t k = 0; k < spans; ++k)
    low_nodes(prepared.spans[k], [&](std::uint32_t node) { ++cover_begin_[node + 1]; });
  for (std::size_t node = 0; node < nodes; ++node) cover_begin_[node + 1] += cover_begin_[node];
  cover_span_.resize(cover_begin_[nodes]);
  std::vector<std::uint32_t> cursor(cover_begin_.begin(), cover_begin_.end() - 1);
  for (std::uint32_t k = 0; k < spans; ++k)
    low_nodes(prepared.spans[k], [&](std::uint32_t node) { cover_span_[cursor[node]++] = k; });
  cover_range_.assign(cover_span_.size(), R{});
  union_of_.assign(nodes, 0);
  for (std::size_t node = 0; node < nodes; ++node) {
    if (cover_begin_[node + 1] - cover_begin_[node] > kListLength) {
      unions_.emplace_back();
      union_of_[node] = static_cast<std::uint32_t>(unions_.size());
    }
  }
  if (h0_ <= levels_) full_.resize(std::size_t{1} << (levels_ - h0_));
  start_.resize(nodes >> h1_);
  // Start slots, by section.
  start_begin_.assign(prepared.section_count + 2, 0);
  for (const Span& s : prepared.spans) ++start_begin_[s.first + 1];
  for (std::uint32_t t = 0; t <= prepared.section_count; ++t) start_begin_[t + 1] += start_begin_[t];
  start_slot_.resize(spans);
  std::vector<std::uint32_t> next(start_begin_.begin(), start_begin_.end() - 1);
  for (std::uint32_t k = 0; k < spans; ++k) start_slot_[k] = next[prepared.spans[k].first]++;
  start_range_.assign(spans, R{});
  // Two passes over every span's low nodes, the prefix sums, the fills.
  setup_work_ = 6 * cover_span_.size() + 4 * nodes + 5 * std::uint64_t{spans} + 2 * prepared.section_count;
}

template <typename R>
std::uint32_t GapIndex<R>::height(std::uint32_t node) const {
  return levels_ - static_cast<std::uint32_t>(std::bit_width(node) - 1);
}

template <typename R>
template <typename Visit>
void GapIndex<R>::low_nodes(Span span, Visit&& visit) const {
  std::uint32_t h = 0;
  for (std::uint32_t lo = leaves_ + span.first, hi = leaves_ + span.end; lo < hi && h < h0_; lo /= 2, hi /= 2, ++h) {
    if (lo & 1U) visit(lo++);
    if (hi & 1U) visit(--hi);
  }
}

template <typename R>
std::uint64_t GapIndex<R>::append(std::uint32_t begin, std::uint32_t end, std::vector<R>& out) const {
  for (std::uint32_t slot = begin; slot < end; ++slot) {
    if (cover_range_[slot].hi != 0) out.push_back(cover_range_[slot]);
  }
  return end - begin;
}

template <typename R>
std::uint64_t GapIndex<R>::insert(std::uint32_t index, R range) {
  const Span span = prepared_.spans[index];
  std::uint64_t work = cost::kUnionInsert;
  low_nodes(span, [&](std::uint32_t node) {
    if (union_of_[node] != 0) {
      work += unions_[union_of_[node] - 1].insert(range);
      return;
    }
    const auto first = cover_span_.begin() + cover_begin_[node];
    const auto slot = std::lower_bound(first, cover_span_.begin() + cover_begin_[node + 1], index);
    cover_range_[static_cast<std::size_t>(slot - cover_span_.begin())] = range;
    work += cost::kSlotWrite;
  });
  // Every node at height H0 under a canonical node at H0 or above.
  if (h0_ <= levels_) {
    const std::uint32_t full_base = 1U << (levels_ - h0_);
    std::uint32_t h = 0;
    for (std::uint32_t lo = leaves_ + span.first, hi = leaves_ + span.end; lo < hi; lo /= 2, hi /= 2, ++h) {
      if (h < h0_) {
        lo += lo & 1U;
        hi -= hi & 1U;
        continue;
      }
      for (const std::uint32_t node : {lo & 1U ? lo++ : 0U, hi & 1U ? --hi : 0U}) {
        if (node == 0) continue;
        const std::uint32_t first = node << (h - h0_);
        for (std::uint32_t x = first; x < first + (1U << (h - h0_)); ++x) work += full_[x - full_base].insert(range);
      }
    }
  }
  // Starts: the span's slot, and the unions of its ancestors from H1 up.
  start_range_[start_slot_[index]] = range;
  work += cost::kSlotWrite;
  for (std::uint32_t node = (leaves_ + span.first) >> h1_; node >= 1; node /= 2) work += start_[node].insert(range);
  return work;
}

template <typename R>
std::uint64_t GapIndex<R>::clear() {
  std::fill(cover_range_.begin(), cover_range_.end(), R{});
  std::fill(start_range_.begin(), start_range_.end(), R{});
  for (auto& u : unions_) u.clear();
  for (auto& u : full_) u.clear();
  for (auto& u : start_) u.clear();
  return cost::kRange * (cover_range_.size() + start_range_.size() + unions_.size() + full_.size() + start_.size()) / 2;
}

template <typename R>
std::uint64_t GapIndex<R>::gather(Span span, Lists& out) {
  std::uint64_t work = cost::kSlotRead;
  auto add = [&](const BasicRangeUnion<R>& u) {
    if (!u.empty()) out.sorted.push_back(&u);
  };
  // Live at span.first.
  std::uint32_t node = leaves_ + span.first;
  for (std::uint32_t h = 0; h < h0_ && node >= 1; ++h, node /= 2) {
    if (union_of_[node] != 0) {
      add(unions_[union_of_[node] - 1]);
    } else {
      work += cost::kSlotRead * append(cover_begin_[node], cover_begin_[node + 1], out.loose);
    }
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
    for (std::uint32_t slot = start_begin_[first]; slot < start_begin_[first + (1U << h)]; ++slot) {
      if (start_range_[slot].hi != 0) out.loose.push_back(start_range_[slot]);
    }
    work += cost::kSlotRead * (start_begin_[first + (1U << h)] - start_begin_[first]);
  };
  for (std::uint32_t lo = leaves_ + span.first + 1, hi = leaves_ + span.end; lo < hi; lo /= 2, hi /= 2, ++h) {
    if (lo & 1U) starts(lo++);
    if (hi & 1U) starts(--hi);
  }
  return work;
}

template <typename R>
void GapIndex<R>::prefetch(Span span) const {
  std::uint32_t node = leaves_ + span.first;
  for (std::uint32_t h = 0; h < h0_ && node >= 1; ++h, node /= 2) {
    __builtin_prefetch(&union_of_[node]);
    __builtin_prefetch(cover_range_.data() + cover_begin_[node]);
  }
  if (h0_ <= levels_) __builtin_prefetch(full_[node - (1U << (levels_ - h0_))].begin());
  __builtin_prefetch(start_range_.data() + start_begin_[span.first + 1]);
}

template class BasicRangeUnion<Range>;
template class BasicRangeUnion<NarrowRange>;
template class GapIndex<Range>;
template class GapIndex<NarrowRange>;

}  // namespace memtool::planner::detail
