// GreedyPlacer: see greedy.hpp.
#include "greedy.hpp"

#include <algorithm>
#include <bit>

#include "gap_walk.hpp"
#include "greedy_costs.hpp"
#include "sweep_fill.hpp"

namespace memtool::planner::detail {

GreedyPlacer::GreedyPlacer(const Prepared& prepared) : prepared_(prepared) {}

GreedyResult GreedyPlacer::place(std::span<const std::uint32_t> order, Fit fit, GreedyStops stops) {
  namespace cost = greedy_cost;
  GreedyResult result;
  // Counted in eighths (greedy_costs.hpp), then turned into units at the problem's size.
  const std::uint64_t tenths = cost::size_tenths(prepared_.items.size());
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
    if (limited && setup + to_build + cost::to_units(work, tenths) + (stops.finish ? sweep_fill_work(order.size() - k) : 0) >
                       stops.work) {
      result.cut = true;
      result.placed = k;
      result.work = setup + cost::to_units(work, tenths);
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
      result.work = setup + cost::to_units(work, tenths);
      return result;
    }
    for (std::uint32_t s = 0; s < it.span_count; ++s) work += index_->insert(it.first_span + s, {off, off + it.footprint});
  }
  result.placed = order.size();
  result.work = setup + cost::to_units(work, tenths);
  result.offsets = offsets_;
  return result;
}

namespace {

// Merges two sorted runs of disjoint ranges into `out` as one, ranges that touch or overlap
// made one; returns the end of what it wrote. Without branches in the loop (the choice
// between the runs is a coin toss the predictor would miss half the time): the range being
// built is stored at every step, and kept by moving `out` on only when the next one leaves
// a gap.
Range* merge_union(const Range* a, const Range* a_end, const Range* b, const Range* b_end, Range* out) {
  if (a == a_end && b == b_end) return out;
  Range current = a == a_end || (b != b_end && b->lo < a->lo) ? *b++ : *a++;
  // Selections by masks: the compiler turns a plain condition back into a branch.
  auto pick = [](bool second, std::uint64_t x, std::uint64_t y) {
    const std::uint64_t mask = std::uint64_t{0} - static_cast<std::uint64_t>(second);
    return (x & ~mask) | (y & mask);
  };
  auto add = [&](const Range& r) {
    *out = current;
    const bool gap = r.lo > current.hi;
    out += gap ? 1 : 0;
    current.lo = pick(gap, current.lo, r.lo);
    current.hi = pick(gap, std::max(current.hi, r.hi), r.hi);
  };
  while (a != a_end && b != b_end) {
    const bool from_b = b->lo < a->lo;
    const auto at = pick(from_b, reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(b));
    const Range r = *reinterpret_cast<const Range*>(at);
    a += from_b ? 0 : 1;
    b += from_b ? 1 : 0;
    add(r);
  }
  for (; a != a_end; ++a) add(*a);
  for (; b != b_end; ++b) add(*b);
  *out++ = current;
  return out;
}

}  // namespace

std::span<const Range> GreedyPlacer::union_of_rest(std::size_t main, std::uint64_t& work) {
  namespace cost = greedy_cost;
  auto& loose = lists_.loose;
  std::sort(loose.begin(), loose.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  work += cost::kRange * loose.size() * std::bit_width(loose.size());
  // Sorted ranges may touch or overlap: one merge with nothing makes them a union.
  const Range* const loose_end = merge_union(loose.data(), loose.data() + loose.size(), nullptr, nullptr, loose.data());
  runs_.clear();
  if (loose_end != loose.data()) runs_.push_back({loose.data(), 0, static_cast<std::size_t>(loose_end - loose.data())});
  for (std::size_t l = 0; l < lists_.sorted.size(); ++l) {
    if (l != main) runs_.push_back({lists_.sorted[l]->begin(), 0, lists_.sorted[l]->size()});
  }
  if (runs_.empty()) return {};
  auto at = [&](const Run& r) { return (r.base != nullptr ? r.base : merged_.data()) + r.begin; };
  // The two shortest runs first (Huffman's order): a range is read again by every merge above
  // its run's, so the long lists (hundreds of ranges against a few) join last, and the
  // coalescing of the early merges shortens what the later ones read.
  std::size_t used = 0;
  while (runs_.size() > 1) {
    std::size_t x = 0;
    std::size_t y = 1;
    if (runs_[y].size < runs_[x].size) std::swap(x, y);
    for (std::size_t r = 2; r < runs_.size(); ++r) {
      if (runs_[r].size < runs_[x].size) {
        y = x;
        x = r;
      } else if (runs_[r].size < runs_[y].size) {
        y = r;
      }
    }
    const std::size_t in = runs_[x].size + runs_[y].size;
    if (merged_.size() < used + in) merged_.resize(std::max(2 * merged_.size(), used + in));
    Range* const out = merged_.data() + used;
    const Range* const end = merge_union(at(runs_[x]), at(runs_[x]) + runs_[x].size, at(runs_[y]), at(runs_[y]) + runs_[y].size, out);
    work += cost::kRange * in;
    runs_[x] = {nullptr, used, static_cast<std::size_t>(end - out)};
    used += runs_[x].size;
    runs_[y] = runs_.back();
    runs_.pop_back();
  }
  return {at(runs_[0]), runs_[0].size};
}

std::uint64_t GreedyPlacer::place_one(std::uint32_t item, Fit fit, std::uint64_t& work) {
  namespace cost = greedy_cost;
  const Item& it = prepared_.items[item];
  lists_.clear();
  const Span* spans = prepared_.spans_of(item);
  for (std::uint32_t k = 0; k < it.span_count; ++k) work += index_->gather(spans[k], lists_);
  // Two sorted sequences to walk: the longest list (usually the stabbing full-cover union), and
  // the union of everything else: the start-slot ranges (loose, sorted here) and the other
  // lists, merged pairwise (O(R log lists)), coalescing as they go — the lists overlap much
  // (the same columns of buffers seen from several nodes), so later rounds and the walk read
  // a fraction of R.
  auto& lists = lists_.sorted;
  std::size_t longest = 0;
  for (std::size_t l = 1; l < lists.size(); ++l) {
    if (lists[l]->size() > lists[longest]->size()) longest = l;
  }
  const RangeUnion* main = lists.empty() ? nullptr : lists[longest];
  const std::span<const Range> rest = union_of_rest(longest, work);
  GapWalk walk{.footprint = it.footprint, .alignment = it.alignment, .first_fit = fit == Fit::first};
  work += cost::kPlacement;
  if (fit == Fit::best && main != nullptr) return best_fit({main->begin(), main->size()}, rest, walk, work);
  // Walk the gaps below, between and above the occupied ranges, in address order.
  const Range* m = main != nullptr ? main->begin() : nullptr;
  const Range* m_end = main != nullptr ? main->end() : nullptr;
  const Range* other = rest.data();
  const Range* other_end = rest.data() + rest.size();
  const std::uint64_t visited_before = static_cast<std::uint64_t>((m_end - m) + (other_end - other));
  // The main list drives the walk; the (short) rest is let in where it belongs, a test that
  // is almost always false, so the branch predicts well.
  bool going = true;
  while (going && m != m_end) {
    while (going && other != other_end && other->lo < m->lo) going = walk.step(*other++);
    if (going) going = walk.step(*m++);
  }
  while (going && other != other_end) going = walk.step(*other++);
  work += cost::kRange * (visited_before - static_cast<std::uint64_t>((m_end - m) + (other_end - other)));
  return walk.offset();
}

}  // namespace memtool::planner::detail
