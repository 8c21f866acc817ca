// The greedy placer every heuristic shares: buffers are placed one by one in a given order, each
// into a gap between the address ranges of already-placed buffers it conflicts with (best fit:
// the tightest gap; first fit: the lowest), or on top of them all when no gap fits. The gaps
// come from a GapIndex (gap_index.hpp): merged, sorted lists of the occupied ranges, walked in
// address order, so a placement costs O(log S + the occupied runs its lifetime sees) instead of
// a visit and a sort of every placed buffer it conflicts with.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gap_index.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

enum class Fit { best, first };

struct GreedyResult {
  std::vector<std::uint64_t> offsets;  // per item
  std::uint64_t pool = 0;
  std::uint64_t work = 0;  // the deterministic cost measure (search_budget.hpp), all of the run's work
  // The work limit cut the run short (the rest of the order then went to sweep_fill, or there
  // is no plan); `placed`: how many of the order the gaps placed before any stop.
  bool cut = false;
  std::size_t placed = 0;
};

// When a run stops before its end.
struct GreedyStops {
  // The pool would exceed it: no plan (pool = UINT64_MAX). For runs that only count if better.
  std::uint64_t above = UINT64_MAX;
  // The run's work (with what finishing would cost) would pass it: with `finish`, the rest of
  // the order goes above what is placed, by sweep_fill (a plan within the limit); without, no
  // plan (pool = UINT64_MAX).
  std::uint64_t work = UINT64_MAX;
  bool finish = false;
};

class GreedyPlacer {
 public:
  explicit GreedyPlacer(const Prepared& prepared);
  // Places `order` (item indices; items with no footprint may be left out: they go to 0),
  // unless `stops` end it early. The work counts everything, the index's construction too
  // when this run builds it.
  GreedyResult place(std::span<const std::uint32_t> order, Fit fit, GreedyStops stops = {});
  // Whether the index keeps 8-byte ranges in granules (the largest power of two that divides
  // every footprint) rather than 16-byte ones in bytes: until a range ends past 2^32 granules,
  // when the run starts again wide and the placer stays so. The same placements either way,
  // each the same arithmetic scaled by the granule; half the bytes to stream through the
  // caches, which is most of a placement's time on large problems.
  [[nodiscard]] bool narrow() const { return narrow_; }

 private:
  // A sorted run to merge: `size` ranges from base + begin, or from the merge output + begin
  // when base is null (the output may move as it grows).
  template <typename R>
  struct Run {
    const R* base = nullptr;
    std::size_t begin = 0;
    std::size_t size = 0;
  };
  // The index and the scratch of one range type.
  template <typename R>
  struct State {
    std::optional<GapIndex<R>>
        index;  // built by the first run that places a buffer in the gaps (its cost charged there)
    typename GapIndex<R>::Lists lists;  // scratch: the occupied ranges
    std::vector<Run<R>> runs;           // scratch: the runs left to merge
    std::vector<R> merged;              // scratch: every merge's output, one after another
  };

  template <typename R>
  GreedyResult place_in(State<R>& state, std::span<const std::uint32_t> order, Fit fit, GreedyStops stops);
  // The offset in granules; adds its work to `work`, in eighths of a unit (greedy_costs.hpp).
  template <typename R>
  std::uint64_t place_one(State<R>& state, std::uint32_t item, Fit fit, std::uint64_t& work);
  // The union of the occupied ranges but those of list `main` of state.lists.sorted (valid
  // until the next call); adds its work.
  template <typename R>
  std::span<const R> union_of_rest(State<R>& state, std::size_t main, std::uint64_t& work);

  const Prepared& prepared_;
  std::uint32_t granule_bits_ = 0;  // every footprint is a multiple of 2^granule_bits_ bytes
  bool narrow_ = true;
  bool narrow_overflow_ = false;  // set by a narrow run that met a range past 2^32 granules
  bool prefetch_ = false;         // the index is larger than the caches
  State<Range> wide_state_;
  State<NarrowRange> narrow_state_;
  std::vector<std::uint64_t> offsets_;
};

}  // namespace memtool::planner::detail
