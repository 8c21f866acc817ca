// GreedyPlacer: see greedy.hpp.
#include "greedy.hpp"

#include <algorithm>
#include <bit>
#include <type_traits>

#include "gap_walk.hpp"
#include "greedy_costs.hpp"
#include "sweep_fill.hpp"

namespace memtool::planner::detail {

namespace {

// Below this many spans the index stays in the caches, and prefetches are only instructions
// (real steps of 1-3 k buffers ran 5-10% slower with them, dl-like ones of 10 k faster).
constexpr std::size_t kPrefetchSpans = 8192;

}  // namespace

GreedyPlacer::GreedyPlacer(const Prepared& prepared) : prepared_(prepared) {
  // Every offset is a multiple of the granule, the largest power of two dividing every
  // footprint: gaps start at range ends, and aligning a multiple of it up keeps it one.
  std::uint64_t bits = 0;
  for (const Item& it : prepared.items) bits |= it.footprint;
  granule_bits_ = bits == 0 ? 0 : static_cast<std::uint32_t>(std::countr_zero(bits));
  prefetch_ = prepared.spans.size() >= kPrefetchSpans;
}

GreedyResult GreedyPlacer::place(std::span<const std::uint32_t> order, Fit fit, GreedyStops stops) {
  if (!narrow_) return place_in(wide_state_, order, fit, stops);
  GreedyResult result = place_in(narrow_state_, order, fit, stops);
  if (!narrow_overflow_) return result;
  // A range ended past 2^32 granules: this problem is wide from now on. The run starts again
  // there, with what the narrow one spent charged (it never happens below a pool of 4 Gi
  // granules, so only on problems that big).
  narrow_ = false;
  narrow_state_.index.reset();
  narrow_state_.lists = {};
  narrow_state_.runs = {};
  narrow_state_.merged = {};
  const std::uint64_t spent = result.work;
  if (stops.work != UINT64_MAX) stops.work -= std::min(stops.work, spent);
  result = place_in(wide_state_, order, fit, stops);
  result.work += spent;
  return result;
}

template <typename R>
GreedyResult GreedyPlacer::place_in(State<R>& state, std::span<const std::uint32_t> order, Fit fit, GreedyStops stops) {
  namespace cost = greedy_cost;
  auto& index = state.index;
  GreedyResult result;
  // Counted in eighths (greedy_costs.hpp), then turned into units at the problem's size.
  const std::uint64_t tenths = cost::size_tenths(prepared_.items.size());
  std::uint64_t work = 2 * cost::kPerItem * prepared_.items.size();  // offsets set and copied out
  std::uint64_t setup = 0;                                           // units: building the index
  if (index) work += index->clear();
  offsets_.assign(prepared_.items.size(), 0);
  const bool limited = stops.work != UINT64_MAX;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint32_t item = order[k];
    const Item& it = prepared_.items[item];
    if (it.footprint == 0) continue;
    // What is spent, what building the index would cost (before it is built) and what
    // finishing would, against the limit.
    const std::uint64_t to_build = !limited || index ? 0 : GapIndex<R>::setup_work_bound(prepared_);
    if (limited &&
        setup + to_build + cost::to_units(work, tenths) + (stops.finish ? sweep_fill_work(order.size() - k) : 0) >
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
    if (!index) {
      index.emplace(prepared_);
      setup = index->setup_work();
    }
    if (prefetch_ && k + 1 < order.size()) {
      // The next placement's first misses on their way in during this one.
      const Item& next = prepared_.items[order[k + 1]];
      if (next.footprint != 0) index->prefetch(prepared_.spans[next.first_span]);
      if (k + 2 < order.size()) __builtin_prefetch(&prepared_.items[order[k + 2]]);
    }
    const std::uint64_t at = place_one(state, item, fit, work);  // in granules
    if constexpr (std::is_same_v<R, NarrowRange>) {
      if (at + (it.footprint >> granule_bits_) > UINT32_MAX) {
        narrow_overflow_ = true;
        result.work = setup + cost::to_units(work, tenths);
        return result;
      }
    }
    const std::uint64_t off = at << granule_bits_;
    offsets_[item] = off;
    result.pool = std::max(result.pool, off + it.footprint);
    if (result.pool > stops.above) {
      result.pool = UINT64_MAX;
      result.placed = k;
      result.work = setup + cost::to_units(work, tenths);
      return result;
    }
    using T = typename R::Coordinate;
    const R range{static_cast<T>(at), static_cast<T>(at + (it.footprint >> granule_bits_))};
    for (std::uint32_t s = 0; s < it.span_count; ++s) work += index->insert(it.first_span + s, range);
  }
  result.placed = order.size();
  result.work = setup + cost::to_units(work, tenths);
  result.offsets = offsets_;
  return result;
}

namespace {

// Selections by masks: the compiler turns a plain condition back into a branch.
template <typename U>
U pick(bool second, U x, U y) {
  const U mask = U{0} - static_cast<U>(second);
  return (x & ~mask) | (y & mask);
}

// One merge of two sorted runs of disjoint ranges into a union, ranges that touch or overlap
// made one. Without branches in a step (the choice between the runs is a coin toss the
// predictor would miss half the time): the range being built is stored at every step, and
// kept by moving `out` on only when the next one leaves a gap. Always inlined, so that its
// state stays in registers.
template <typename R>
struct UnionMerge {
  using T = typename R::Coordinate;
  const R* a;
  const R* a_end;
  const R* b;
  const R* b_end;
  R* out;
  T lo = 0;  // the range being built
  T hi = 0;

  // At least one range to merge.
  [[gnu::always_inline]] void start() {
    const R first = a == a_end || (b != b_end && b->lo < a->lo) ? *b++ : *a++;
    lo = first.lo;
    hi = first.hi;
  }
  [[gnu::always_inline]] void add(T r_lo, T r_hi) {
    out->lo = lo;
    out->hi = hi;
    const bool gap = r_lo > hi;
    out += gap ? 1 : 0;
    lo = pick(gap, lo, r_lo);
    hi = pick(gap, std::max(hi, r_hi), r_hi);
  }
  // Both runs not empty.
  [[gnu::always_inline]] void step() {
    const bool from_b = b->lo < a->lo;
    const auto at = pick(from_b, reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(b));
    const R r = *reinterpret_cast<const R*>(at);
    // Moved on by masks too: `from_b ? 0 : 1` became a branch (taken half the time, at random).
    const std::uintptr_t mask = std::uintptr_t{0} - static_cast<std::uintptr_t>(from_b);
    a = reinterpret_cast<const R*>(reinterpret_cast<std::uintptr_t>(a) + (sizeof(R) & ~mask));
    b = reinterpret_cast<const R*>(reinterpret_cast<std::uintptr_t>(b) + (sizeof(R) & mask));
    add(r.lo, r.hi);
  }
  // The steps both runs can take without running out.
  [[nodiscard]] std::size_t safe_steps() const { return static_cast<std::size_t>(std::min(a_end - a, b_end - b)); }
  // Returns the end of what it wrote.
  [[gnu::always_inline]] R* finish() {
    while (a != a_end && b != b_end) step();
    for (; a != a_end; ++a) add(a->lo, a->hi);
    for (; b != b_end; ++b) add(b->lo, b->hi);
    *out++ = R{lo, hi};
    return out;
  }
};

// Merges two sorted runs of disjoint ranges into `out` as one union (`out` may be the first
// run itself when the second is empty, or hold both); returns the end of what it wrote. Long
// runs are split at the middle of the first: the ranges that start below it and those that
// start at or above it are merged as two unions at once, a step of each in turn (two chains
// of loads that do not wait for each other: a step waits mostly for its load), the upper one
// written after the lower one's inputs, then moved down, its first ranges joined to the lower
// one's last where that one reaches into them.
template <typename R>
R* merge_union(const R* a, const R* a_end, const R* b, const R* b_end, R* out) {
  if (a == a_end && b == b_end) return out;
  if (a_end - a < 32 || b_end - b < 32) {
    UnionMerge<R> one{a, a_end, b, b_end, out};
    one.start();
    return one.finish();
  }
  const R* const a_mid = a + (a_end - a) / 2;
  const R* const b_mid =
      std::lower_bound(b, b_end, a_mid->lo, [](const R& x, typename R::Coordinate lo) { return x.lo < lo; });
  R* const upper_out = out + (a_mid - a) + (b_mid - b);
  UnionMerge<R> lower{a, a_mid, b, b_mid, out};
  UnionMerge<R> upper{a_mid, a_end, b_mid, b_end, upper_out};
  lower.start();
  upper.start();
  for (std::size_t n = std::min(lower.safe_steps(), upper.safe_steps()); n > 4;
       n = std::min(lower.safe_steps(), upper.safe_steps())) {
    for (std::size_t k = 0; k < n; ++k) {
      lower.step();
      upper.step();
    }
  }
  R* const lower_end = lower.finish();
  R* const upper_end = upper.finish();
  R* from = upper_out;
  R& last = *(lower_end - 1);
  for (; from != upper_end && from->lo <= last.hi; ++from) last.hi = std::max(last.hi, from->hi);
  return std::copy(from, upper_end, lower_end);
}

}  // namespace

template <typename R>
std::span<const R> GreedyPlacer::union_of_rest(State<R>& state, std::size_t main, std::uint64_t& work) {
  namespace cost = greedy_cost;
  auto& runs = state.runs;
  auto& merged = state.merged;
  auto& loose = state.lists.loose;
  std::sort(loose.begin(), loose.end(), [](const R& x, const R& y) { return x.lo < y.lo; });
  work += cost::kRange * loose.size() * std::bit_width(loose.size());
  // Sorted ranges may touch or overlap: one merge with nothing makes them a union.
  const R* const loose_end = merge_union<R>(loose.data(), loose.data() + loose.size(), nullptr, nullptr, loose.data());
  runs.clear();
  if (loose_end != loose.data()) runs.push_back({loose.data(), 0, static_cast<std::size_t>(loose_end - loose.data())});
  for (std::size_t l = 0; l < state.lists.sorted.size(); ++l) {
    if (l != main) runs.push_back({state.lists.sorted[l]->begin(), 0, state.lists.sorted[l]->size()});
  }
  if (runs.empty()) return {};
  auto at = [&](const Run<R>& r) { return (r.base != nullptr ? r.base : merged.data()) + r.begin; };
  // The two shortest runs first (Huffman's order): a range is read again by every merge above
  // its run's, so the long lists (hundreds of ranges against a few) join last, and the
  // coalescing of the early merges shortens what the later ones read.
  std::size_t used = 0;
  while (runs.size() > 1) {
    std::size_t x = 0;
    std::size_t y = 1;
    if (runs[y].size < runs[x].size) std::swap(x, y);
    for (std::size_t r = 2; r < runs.size(); ++r) {
      if (runs[r].size < runs[x].size) {
        y = x;
        x = r;
      } else if (runs[r].size < runs[y].size) {
        y = r;
      }
    }
    const std::size_t in = runs[x].size + runs[y].size;
    if (merged.size() < used + in) merged.resize(std::max(2 * merged.size(), used + in));
    R* const out = merged.data() + used;
    const R* const end =
        merge_union<R>(at(runs[x]), at(runs[x]) + runs[x].size, at(runs[y]), at(runs[y]) + runs[y].size, out);
    work += cost::kRange * in;
    runs[x] = {nullptr, used, static_cast<std::size_t>(end - out)};
    used += runs[x].size;
    runs[y] = runs.back();
    runs.pop_back();
  }
  return {at(runs[0]), runs[0].size};
}

template <typename R>
std::uint64_t GreedyPlacer::place_one(State<R>& state, std::uint32_t item, Fit fit, std::uint64_t& work) {
  namespace cost = greedy_cost;
  const Item& it = prepared_.items[item];
  state.lists.clear();
  const Span* spans = prepared_.spans_of(item);
  for (std::uint32_t k = 0; k < it.span_count; ++k) work += state.index->gather(spans[k], state.lists);
  // Two sorted sequences to walk: the longest list (usually the stabbing full-cover union), and
  // the union of everything else: the start-slot ranges (loose, sorted here) and the other
  // lists, merged pairwise (O(R log lists)), coalescing as they go — the lists overlap much
  // (the same columns of buffers seen from several nodes), so later rounds and the walk read
  // a fraction of R.
  auto& lists = state.lists.sorted;
  std::size_t longest = 0;
  for (std::size_t l = 1; l < lists.size(); ++l) {
    if (lists[l]->size() > lists[longest]->size()) longest = l;
  }
  const BasicRangeUnion<R>* main = lists.empty() ? nullptr : lists[longest];
  // The lists lie in an index far larger than the caches. The main one is read only after the
  // rest is merged: all its lines are on their way in by then; the others' first lines, which
  // each merge would otherwise wait for in turn.
  if (prefetch_ && main != nullptr) {
    const char* const bytes = reinterpret_cast<const char*>(main->begin());
    const std::size_t length = main->size() * sizeof(R);
    for (std::size_t at = 0; at < length; at += 64) __builtin_prefetch(bytes + at);
  }
  for (const BasicRangeUnion<R>* list : lists) {
    if (prefetch_ && list != main) __builtin_prefetch(list->begin());
  }
  const std::span<const R> rest = union_of_rest(state, longest, work);
  GapWalk walk{.footprint = it.footprint >> granule_bits_,
               .alignment = std::max<std::uint64_t>(it.alignment >> granule_bits_, 1),
               .first_fit = fit == Fit::first};
  work += cost::kPlacement;
  if (fit == Fit::best && main != nullptr) return best_fit<R>({main->begin(), main->size()}, rest, walk, work);
  // Walk the gaps below, between and above the occupied ranges, in address order.
  const R* m = main != nullptr ? main->begin() : nullptr;
  const R* m_end = main != nullptr ? main->end() : nullptr;
  const R* other = rest.data();
  const R* other_end = rest.data() + rest.size();
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
