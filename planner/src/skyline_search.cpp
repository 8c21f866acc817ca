// Skyline branch and bound (decision version: fit everything under a capacity C).
//
// State: a floor per section (the top of the placed buffers there; also raised by decisions to
// waste space) and the unplaced bytes per section. Every node looks at the lowest floor m among
// sections that still have unplaced buffers, and the maximal run G of sections around it whose
// floor is m; L is G's first section. Push any solution down (gravity) and one of two things is
// true in section L:
//  - some buffer sits at offset m there: it covers L and lies within G (its skyline is m) —
//    branch on each such buffer;
//  - nothing does: the lowest buffer d over L then either reaches out of G (so it sits at or
//    above a neighbour run's floor) or rests on a buffer e higher than m in G (so it sits at
//    or above m + the smallest unplaced size) — raise L's floor to the least of those (space
//    wasted) and go on.
// The two branches cover every solution, so the search is exact when it runs to the end.
// Placing a buffer raises floors and lowers unplaced bytes by the same amount, so the bound
// "floor + unplaced bytes ≤ C" only needs checking where space is wasted.
// Requires one interval per buffer (spans contiguous) and one alignment for all (floors stay
// aligned): skyline_search_applies says when.
#include "skyline_search.hpp"

#include <algorithm>

namespace memtool::planner::detail {

namespace {

class Skyline {
 public:
  Skyline(const Prepared& p, std::uint64_t capacity, SearchBudget& budget, int ordering, std::uint64_t node_limit)
      : p_(p), capacity_(capacity), budget_(budget), nodes_left_(node_limit), floor_(p.section_count, 0), rem_(p.load),
        starting_(p.section_count) {
    for (std::uint32_t i = 0; i < p.items.size(); ++i) {
      if (p.items[i].footprint == 0) continue;
      starting_[p.spans_of(i)[0].first].push_back(i);
      ++unplaced_;
    }
    // Ordering 0: larger buffers first, then those reaching further; 1: the reverse priority;
    // 2: largest area (size × sections) first.
    for (auto& list : starting_) {
      std::sort(list.begin(), list.end(), [&](std::uint32_t x, std::uint32_t y) {
        const std::uint64_t ex = p.spans_of(x)[0].end;
        const std::uint64_t ey = p.spans_of(y)[0].end;
        const std::uint64_t sx = p.items[x].footprint;
        const std::uint64_t sy = p.items[y].footprint;
        if (ordering == 2) {
          const auto ax = static_cast<long double>(sx) * static_cast<long double>(ex - p.spans_of(x)[0].first);
          const auto ay = static_cast<long double>(sy) * static_cast<long double>(ey - p.spans_of(y)[0].first);
          if (ax != ay) return ax > ay;
        }
        if (ordering == 1 && ex != ey) return ex > ey;
        if (sx != sy) return sx > sy;
        if (ex != ey) return ex > ey;
        return x < y;
      });
    }
    placed_.assign(p.items.size(), 0);
    offsets_.assign(p.items.size(), 0);
  }

  SearchResult run() {
    SearchResult result;
    result.pool = capacity_;
    for (std::uint32_t t = 0; t < p_.section_count; ++t) {
      if (rem_[t] > capacity_) {
        result.exhausted_space = true;  // infeasible at this capacity
        return result;
      }
    }
    const Outcome outcome = dfs();
    if (outcome == Outcome::found) {
      result.improved = true;
      result.offsets = offsets_;
      result.pool = 0;
      for (std::uint32_t i = 0; i < p_.items.size(); ++i) {
        if (p_.items[i].footprint != 0) result.pool = std::max(result.pool, offsets_[i] + p_.items[i].footprint);
      }
    } else if (outcome == Outcome::infeasible) {
      result.exhausted_space = true;
    }
    return result;
  }

 private:
  enum class Outcome { found, infeasible, stopped };

  // Wasting space (branch 2) is the last thing a node does, so it loops instead of recursing:
  // the recursion depth stays at the number of buffers, however many raises a path makes.
  Outcome dfs() {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> raised;  // (section, floor before)
    const Outcome outcome = node(raised);
    for (auto it = raised.rbegin(); it != raised.rend(); ++it) floor_[it->first] = it->second;
    return outcome;
  }

  Outcome node(std::vector<std::pair<std::uint32_t, std::uint64_t>>& raised) {
    for (;;) {
      if (unplaced_ == 0) return Outcome::found;
      if (nodes_left_ == 0 || budget_.exhausted()) return Outcome::stopped;
      --nodes_left_;
      if (!effective_floors_fit()) return Outcome::infeasible;
      // Lowest floor among sections with unplaced bytes (leftmost on ties), and its run.
      std::uint32_t lowest = UINT32_MAX;
      for (std::uint32_t t = 0; t < p_.section_count; ++t) {
        if (rem_[t] != 0 && (lowest == UINT32_MAX || floor_[t] < floor_[lowest])) lowest = t;
      }
      budget_.spend(p_.section_count);
      const std::uint64_t m = floor_[lowest];
      std::uint32_t first = lowest;
      while (first > 0 && floor_[first - 1] == m) --first;
      std::uint32_t end = lowest + 1;
      while (end < p_.section_count && floor_[end] == m) ++end;
      // Sections of the run before `lowest` have nothing left to place: the branch is about
      // `lowest`, the first section of the run that still needs filling.
      const std::uint32_t target_section = lowest;
      std::uint64_t smallest = UINT64_MAX;
      // Branch 1: a buffer covering target_section, within [first, end), at offset m.
      for (std::uint32_t s = first; s <= target_section; ++s) {
        for (std::uint32_t i : starting_[s]) {
          if (placed_[i]) continue;
          smallest = std::min(smallest, p_.items[i].footprint);
          const Span span = p_.spans_of(i)[0];
          if (span.end <= target_section || span.end > end) continue;
          if (m + p_.items[i].footprint > capacity_) continue;
          place(i, m, span);
          const Outcome outcome = dfs();
          unplace(i, m, span);
          if (outcome != Outcome::infeasible) return outcome;
        }
      }
      // Branch 2: nothing at m in target_section.
      std::uint64_t raise = UINT64_MAX;
      if (first > 0 && rem_[first - 1] != 0) raise = std::min(raise, floor_[first - 1]);
      if (end < p_.section_count && rem_[end] != 0) raise = std::min(raise, floor_[end]);
      for (std::uint32_t s = target_section + 1; s < end && smallest != 0; ++s) {
        for (std::uint32_t i : starting_[s]) {
          if (!placed_[i]) smallest = std::min(smallest, p_.items[i].footprint);
        }
      }
      if (smallest != UINT64_MAX) raise = std::min(raise, m + smallest);
      if (raise == UINT64_MAX || raise + rem_[target_section] > capacity_) return Outcome::infeasible;
      raised.emplace_back(target_section, m);
      floor_[target_section] = raise;
    }
  }

  // A section's unplaced buffers all sit at or above their own skyline offset (the highest floor
  // over their span), so the section's effective floor is the least of those: with the unplaced
  // bytes stacked on it, it must fit under the capacity.
  bool effective_floors_fit() {
    if (unplaced_ > 256) return true;  // a pass over every unplaced span: only near the leaves
    effective_.assign(p_.section_count, UINT64_MAX);
    std::uint64_t work = p_.section_count;
    for (std::uint32_t s = 0; s < p_.section_count; ++s) {
      for (std::uint32_t i : starting_[s]) {
        if (placed_[i]) continue;
        const Span span = p_.spans_of(i)[0];
        std::uint64_t sky = 0;
        for (std::uint32_t t = span.first; t < span.end; ++t) sky = std::max(sky, floor_[t]);
        for (std::uint32_t t = span.first; t < span.end; ++t) effective_[t] = std::min(effective_[t], sky);
        work += 2 * (span.end - span.first);
      }
    }
    budget_.spend(work);
    for (std::uint32_t t = 0; t < p_.section_count; ++t) {
      if (rem_[t] != 0 && effective_[t] + rem_[t] > capacity_) return false;
    }
    return true;
  }

  void place(std::uint32_t i, std::uint64_t offset, Span span) {
    const std::uint64_t size = p_.items[i].footprint;
    placed_[i] = 1;
    offsets_[i] = offset;
    --unplaced_;
    for (std::uint32_t t = span.first; t < span.end; ++t) {
      floor_[t] = offset + size;
      rem_[t] -= size;
    }
    budget_.spend(span.end - span.first + 1);
  }

  void unplace(std::uint32_t i, std::uint64_t offset, Span span) {
    const std::uint64_t size = p_.items[i].footprint;
    placed_[i] = 0;
    ++unplaced_;
    for (std::uint32_t t = span.first; t < span.end; ++t) {
      floor_[t] = offset;
      rem_[t] += size;
    }
  }

  const Prepared& p_;
  std::uint64_t capacity_;
  SearchBudget& budget_;
  std::uint64_t nodes_left_;
  std::vector<std::uint64_t> floor_, rem_, effective_;
  std::vector<std::vector<std::uint32_t>> starting_;
  std::vector<std::uint8_t> placed_;
  std::vector<std::uint64_t> offsets_;
  std::uint32_t unplaced_ = 0;
};

}  // namespace

bool skyline_search_applies(const Prepared& p) {
  std::uint64_t alignment = 0;
  for (const Item& it : p.items) {
    if (it.footprint == 0) continue;
    if (it.span_count != 1) return false;
    if (alignment == 0) alignment = it.alignment;
    if (it.alignment != alignment) return false;
  }
  return true;
}

SearchResult skyline_search(const Prepared& p, std::uint64_t target, SearchBudget& budget) {
  // Round-robin over the orderings with node limits doubling each round (restarts), so that
  // one unlucky early choice cannot eat the whole budget.
  std::uint64_t items = 0;
  for (const Item& it : p.items) items += it.footprint != 0 ? 1 : 0;
  for (std::uint64_t limit = std::max<std::uint64_t>(2, items); !budget.exhausted(); limit *= 2) {
    bool stopped = false;
    for (int ordering = 0; ordering < 3 && !budget.exhausted(); ++ordering) {
      Skyline search(p, target, budget, ordering, limit);
      auto result = search.run();
      if (result.improved || result.exhausted_space) return result;
      stopped = true;
    }
    if (!stopped) break;
  }
  SearchResult none;
  none.pool = target;
  return none;
}

}  // namespace memtool::planner::detail
