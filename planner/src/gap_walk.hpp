// Finding the gap for one buffer among the occupied ranges of the buffers it conflicts with
// (greedy.hpp). GapWalk visits ranges in address order and keeps the lowest gap that holds the
// buffer (first fit) or the tightest, the lowest among equals (best fit). Best fit must see
// every gap, so best_fit() reads the long main list (usually the union of the buffers that
// cover the buffer's first section) by stretches: between two of the other ranges, the gaps
// are main's own, one subtraction each in a loop without dependencies between its steps,
// instead of a step of the merged walk per range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "gap_index.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

struct GapWalk {
  std::uint64_t footprint = 0;
  std::uint64_t alignment = 1;
  bool first_fit = false;
  std::uint64_t cursor = 0;  // the highest address occupied by the ranges visited
  // The gap chosen so far (its size and low end; UINT64_MAX: none).
  std::uint64_t best_gap = UINT64_MAX;
  std::uint64_t best_lo = UINT64_MAX;

  // One range, in order of their low ends; false to stop the walk (nothing later can win).
  template <typename R>
  bool step(const R& r) {
    if (r.lo > cursor && align_up(cursor, alignment) + footprint <= r.lo && r.lo - cursor < best_gap) {
      best_gap = r.lo - cursor;
      best_lo = cursor;
      if (first_fit || best_gap == footprint) return false;
    }
    cursor = std::max<std::uint64_t>(cursor, r.hi);
    return true;
  }
  // The offset: in the gap chosen, else on top of every range visited.
  [[nodiscard]] std::uint64_t offset() const { return align_up(best_lo != UINT64_MAX ? best_lo : cursor, alignment); }
};

// Best fit (walk.first_fit false, walk fresh) among `main` (sorted, disjoint, not touching)
// and `rest` (sorted by their low ends; they may overlap): the same answer as a GapWalk over
// both merged. Returns the offset; adds the work, in eighths of a unit (greedy_costs.hpp).
template <typename R>
std::uint64_t best_fit(std::span<const R> main, std::span<const R> rest, GapWalk& walk, std::uint64_t& work);

}  // namespace memtool::planner::detail
