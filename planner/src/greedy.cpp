// GreedyPlacer: see greedy.hpp.
#include "greedy.hpp"

#include <algorithm>
#include <bit>

namespace memtool::planner::detail {

namespace {

// Sorts (offset, top) ranges by offset. Placing one buffer sorts the ranges of every placed
// buffer it conflicts with — thousands on large problems, where this sort is most of the time —
// so long lists take an LSD radix sort (11-bit digits, only as many as the largest offset
// needs); ties keep their order, which is all the gap walk needs.
void sort_by_offset(std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
                    std::vector<std::pair<std::uint64_t, std::uint64_t>>& scratch) {
  constexpr std::size_t kRadixFrom = 384;
  constexpr unsigned kBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  if (ranges.size() < kRadixFrom) {
    std::sort(ranges.begin(), ranges.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    return;
  }
  std::uint64_t largest = 0;
  for (const auto& r : ranges) largest = std::max(largest, r.first);
  scratch.resize(ranges.size());
  std::size_t counts[kBuckets];
  for (unsigned shift = 0; shift < 64 && (largest >> shift) != 0; shift += kBits) {
    std::fill(std::begin(counts), std::end(counts), 0);
    for (const auto& r : ranges) ++counts[(r.first >> shift) & (kBuckets - 1)];
    std::size_t sum = 0;
    for (auto& c : counts) {
      const std::size_t here = c;
      c = sum;
      sum += here;
    }
    for (const auto& r : ranges) scratch[counts[(r.first >> shift) & (kBuckets - 1)]++] = r;
    ranges.swap(scratch);
  }
}

}  // namespace

GreedyPlacer::GreedyPlacer(const Prepared& prepared)
    : prepared_(prepared), index_(prepared.section_count), stamp_(prepared.items.size(), 0) {}

GreedyResult GreedyPlacer::place(std::span<const std::uint32_t> order, Fit fit, std::uint64_t give_up_above) {
  GreedyResult result;
  index_.clear();
  offsets_.assign(prepared_.items.size(), 0);
  std::fill(stamp_.begin(), stamp_.end(), 0);
  epoch_ = 0;
  for (std::uint32_t item : order) {
    if (prepared_.items[item].footprint == 0) continue;
    const std::uint64_t off = place_one(item, fit, result.work);
    offsets_[item] = off;
    result.pool = std::max(result.pool, off + prepared_.items[item].footprint);
    if (result.pool > give_up_above) {
      result.pool = UINT64_MAX;
      return result;
    }
    const Span* spans = prepared_.spans_of(item);
    for (std::uint32_t k = 0; k < prepared_.items[item].span_count; ++k) index_.insert(item, spans[k]);
  }
  result.offsets = offsets_;
  return result;
}

std::uint64_t GreedyPlacer::place_one(std::uint32_t item, Fit fit, std::uint64_t& work) {
  const Item& it = prepared_.items[item];
  ++epoch_;
  ranges_.clear();
  const Span* spans = prepared_.spans_of(item);
  for (std::uint32_t k = 0; k < it.span_count; ++k) {
    work += index_.for_each_intersecting(spans[k], [&](std::uint32_t other) {
      if (stamp_[other] == epoch_) return;
      stamp_[other] = epoch_;
      ranges_.emplace_back(offsets_[other], offsets_[other] + prepared_.items[other].footprint);
    });
  }
  sort_by_offset(ranges_, scratch_);
  work += ranges_.size() * (2 + std::bit_width(ranges_.size()));  // the sort dominates
  // Walk the gaps below, between and above the conflicting ranges.
  std::uint64_t cursor = 0;
  std::uint64_t best_offset = UINT64_MAX;
  std::uint64_t best_gap = UINT64_MAX;
  for (const auto& [lo, hi] : ranges_) {
    if (lo > cursor) {
      const std::uint64_t candidate = align_up(cursor, it.alignment);
      if (candidate + it.footprint <= lo) {
        if (fit == Fit::first) return candidate;
        if (lo - cursor < best_gap) {
          best_gap = lo - cursor;
          best_offset = candidate;
        }
      }
    }
    cursor = std::max(cursor, hi);
  }
  if (best_offset != UINT64_MAX) return best_offset;
  return align_up(cursor, it.alignment);
}

}  // namespace memtool::planner::detail
