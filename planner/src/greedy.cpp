// GreedyPlacer: see greedy.hpp.
#include "greedy.hpp"

#include <algorithm>
#include <bit>

namespace memtool::planner::detail {

namespace {

std::uint64_t span_sections(const Prepared& p) {
  std::uint64_t total = 0;
  for (const Span& s : p.spans) total += s.end - s.first;
  return total;
}

}  // namespace

GreedyPlacer::GreedyPlacer(const Prepared& prepared)
    : prepared_(prepared), index_(prepared.section_count, span_sections(prepared), prepared.spans.size()) {}

GreedyResult GreedyPlacer::place(std::span<const std::uint32_t> order, Fit fit, std::uint64_t give_up_above) {
  GreedyResult result;
  index_.clear();
  offsets_.assign(prepared_.items.size(), 0);
  result.work = prepared_.items.size();
  for (std::uint32_t item : order) {
    const Item& it = prepared_.items[item];
    if (it.footprint == 0) continue;
    const std::uint64_t off = place_one(item, fit, result.work);
    offsets_[item] = off;
    result.pool = std::max(result.pool, off + it.footprint);
    if (result.pool > give_up_above) {
      result.pool = UINT64_MAX;
      return result;
    }
    const Span* spans = prepared_.spans_of(item);
    for (std::uint32_t k = 0; k < it.span_count; ++k) result.work += index_.insert(spans[k], {off, off + it.footprint});
  }
  result.offsets = offsets_;
  return result;
}

std::uint64_t GreedyPlacer::place_one(std::uint32_t item, Fit fit, std::uint64_t& work) {
  const Item& it = prepared_.items[item];
  lists_.clear();
  const Span* spans = prepared_.spans_of(item);
  for (std::uint32_t k = 0; k < it.span_count; ++k) work += index_.gather(spans[k], lists_);
  // Two sorted sequences to merge: the longest list (usually the stabbing full-cover union),
  // and everything else, which is short, gathered into one vector and sorted.
  auto& lists = lists_.sorted;
  std::size_t longest = 0;
  for (std::size_t l = 1; l < lists.size(); ++l) {
    if (lists[l].second - lists[l].first > lists[longest].second - lists[longest].first) longest = l;
  }
  const Range* main = nullptr;
  const Range* main_end = nullptr;
  auto& rest = lists_.loose;
  for (std::size_t l = 0; l < lists.size(); ++l) {
    if (l == longest) {
      main = lists[l].first;
      main_end = lists[l].second;
    } else {
      rest.insert(rest.end(), lists[l].first, lists[l].second);
    }
  }
  if (!rest.empty()) {
    std::sort(rest.begin(), rest.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  }
  const Range* other = rest.data();
  const Range* other_end = rest.data() + rest.size();
  // Walk the gaps below, between and above the occupied ranges, in address order.
  const std::uint64_t visited_before = static_cast<std::uint64_t>((main_end - main) + (other_end - other));
  std::uint64_t cursor = 0;
  std::uint64_t best_offset = UINT64_MAX;
  std::uint64_t best_gap = UINT64_MAX;
  std::uint64_t found = UINT64_MAX;
  while (main != main_end || other != other_end) {
    const Range r = (other == other_end || (main != main_end && main->lo <= other->lo)) ? *main++ : *other++;
    if (r.lo > cursor) {
      const std::uint64_t candidate = align_up(cursor, it.alignment);
      if (candidate + it.footprint <= r.lo) {
        if (fit == Fit::first) {
          found = candidate;
          break;
        }
        if (r.lo - cursor < best_gap) {
          best_gap = r.lo - cursor;
          best_offset = candidate;
          if (best_gap == it.footprint) break;  // nothing tighter can hold it
        }
      }
    }
    cursor = std::max(cursor, r.hi);
  }
  work += 20 + 2 * (visited_before - static_cast<std::uint64_t>((main_end - main) + (other_end - other)));
  if (found != UINT64_MAX) return found;
  if (best_offset != UINT64_MAX) return best_offset;
  return align_up(cursor, it.alignment);
}

}  // namespace memtool::planner::detail
