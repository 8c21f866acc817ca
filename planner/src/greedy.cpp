// GreedyPlacer: see greedy.hpp.
#include "greedy.hpp"

#include <algorithm>
#include <bit>

#include "greedy_costs.hpp"
#include "sweep_fill.hpp"

namespace memtool::planner::detail {

GreedyPlacer::GreedyPlacer(const Prepared& prepared) : prepared_(prepared) {}

GreedyResult GreedyPlacer::place(std::span<const std::uint32_t> order, Fit fit, GreedyStops stops) {
  namespace cost = greedy_cost;
  GreedyResult result;
  // Counted in eighths (greedy_costs.hpp), then turned into units at the problem's size.
  const std::uint64_t fifths = cost::size_fifths(prepared_.items.size());
  std::uint64_t work = 2 * cost::kPerItem * prepared_.items.size();  // offsets set and copied out
  std::uint64_t setup = 0;  // units: building the index
  if (index_) work += index_->clear();
  offsets_.assign(prepared_.items.size(), 0);
  const bool limited = stops.work != UINT64_MAX;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint32_t item = order[k];
    const Item& it = prepared_.items[item];
    if (it.footprint == 0) continue;
    // What is spent, what building the index would cost (before it is built) and what
    // finishing would, against the limit.
    const std::uint64_t to_build = !limited || index_ ? 0 : GapIndex::setup_work_bound(prepared_);
    if (limited && setup + to_build + cost::to_units(work, fifths) + (stops.finish ? sweep_fill_work(order.size() - k) : 0) >
                       stops.work) {
      result.cut = true;
      result.placed = k;
      result.work = setup + cost::to_units(work, fifths);
      if (!stops.finish) {
        result.pool = UINT64_MAX;
        return result;
      }
      result.pool = std::max(result.pool, sweep_fill(prepared_, order.subspan(k), result.pool, offsets_));
      result.work += sweep_fill_work(order.size() - k);
      result.offsets = offsets_;
      return result;
    }
    if (!index_) {
      index_.emplace(prepared_);
      setup = index_->setup_work();
    }
    const std::uint64_t off = place_one(item, fit, work);
    offsets_[item] = off;
    result.pool = std::max(result.pool, off + it.footprint);
    if (result.pool > stops.above) {
      result.pool = UINT64_MAX;
      result.placed = k;
      result.work = setup + cost::to_units(work, fifths);
      return result;
    }
    for (std::uint32_t s = 0; s < it.span_count; ++s) work += index_->insert(it.first_span + s, {off, off + it.footprint});
  }
  result.placed = order.size();
  result.work = setup + cost::to_units(work, fifths);
  result.offsets = offsets_;
  return result;
}

std::uint64_t GreedyPlacer::place_one(std::uint32_t item, Fit fit, std::uint64_t& work) {
  namespace cost = greedy_cost;
  const Item& it = prepared_.items[item];
  lists_.clear();
  const Span* spans = prepared_.spans_of(item);
  for (std::uint32_t k = 0; k < it.span_count; ++k) work += index_->gather(spans[k], lists_);
  // Two sorted sequences to merge: the longest list (usually the stabbing full-cover union),
  // and everything else in one vector: the start-list ranges (loose, sorted here) and the other
  // lists appended as sorted runs, merged pairwise (O(R log runs); a plain sort when short).
  auto& lists = lists_.sorted;
  std::size_t longest = 0;
  for (std::size_t l = 1; l < lists.size(); ++l) {
    if (lists[l].second - lists[l].first > lists[longest].second - lists[longest].first) longest = l;
  }
  const Range* main = nullptr;
  const Range* main_end = nullptr;
  auto& rest = lists_.loose;
  auto by_lo = [](const Range& x, const Range& y) { return x.lo < y.lo; };
  std::sort(rest.begin(), rest.end(), by_lo);
  work += cost::kRange * rest.size() * std::bit_width(rest.size());
  runs_.assign(1, 0);
  if (!rest.empty()) runs_.push_back(rest.size());
  for (std::size_t l = 0; l < lists.size(); ++l) {
    if (l == longest) {
      main = lists[l].first;
      main_end = lists[l].second;
    } else {
      rest.insert(rest.end(), lists[l].first, lists[l].second);
      runs_.push_back(rest.size());
      work += cost::kRange * static_cast<std::uint64_t>(lists[l].second - lists[l].first);
    }
  }
  if (rest.size() <= 64) {
    std::sort(rest.begin(), rest.end(), by_lo);
    work += cost::kRange * rest.size() * std::bit_width(rest.size());
  } else {
    while (runs_.size() > 2) {
      merged_.resize(rest.size());
      std::size_t kept = 1;
      for (std::size_t r = 0; r + 1 < runs_.size(); r += 2) {
        const std::size_t end = r + 2 < runs_.size() ? runs_[r + 2] : runs_[r + 1];
        std::merge(rest.begin() + runs_[r], rest.begin() + runs_[r + 1], rest.begin() + runs_[r + 1], rest.begin() + end,
                   merged_.begin() + runs_[r], by_lo);
        runs_[kept++] = end;
      }
      runs_.resize(kept);
      rest.swap(merged_);
      work += cost::kRange * rest.size();
    }
  }
  const Range* other = rest.data();
  const Range* other_end = rest.data() + rest.size();
  // Walk the gaps below, between and above the occupied ranges, in address order.
  const std::uint64_t visited_before = static_cast<std::uint64_t>((main_end - main) + (other_end - other));
  std::uint64_t cursor = 0;
  std::uint64_t best_offset = UINT64_MAX;
  std::uint64_t best_gap = UINT64_MAX;
  std::uint64_t found = UINT64_MAX;
  // One range in address order; false to stop the walk.
  auto step = [&](const Range& r) {
    if (r.lo > cursor) {
      const std::uint64_t candidate = align_up(cursor, it.alignment);
      if (candidate + it.footprint <= r.lo) {
        if (fit == Fit::first) {
          found = candidate;
          return false;
        }
        if (r.lo - cursor < best_gap) {
          best_gap = r.lo - cursor;
          best_offset = candidate;
          if (best_gap == it.footprint) return false;  // nothing tighter can hold it
        }
      }
    }
    cursor = std::max(cursor, r.hi);
    return true;
  };
  // The main list drives the walk; the (short) rest is let in where it belongs, a test that
  // is almost always false, so the branch predicts well.
  bool going = true;
  while (going && main != main_end) {
    while (going && other != other_end && other->lo < main->lo) going = step(*other++);
    if (going) going = step(*main++);
  }
  while (going && other != other_end) going = step(*other++);
  work += cost::kPlacement + cost::kRange * (visited_before - static_cast<std::uint64_t>((main_end - main) + (other_end - other)));
  if (found != UINT64_MAX) return found;
  if (best_offset != UINT64_MAX) return best_offset;
  return align_up(cursor, it.alignment);
}

}  // namespace memtool::planner::detail
