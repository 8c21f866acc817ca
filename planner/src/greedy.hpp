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

 private:
  // Adds its work to `work`, in eighths of a unit (greedy_costs.hpp).
  std::uint64_t place_one(std::uint32_t item, Fit fit, std::uint64_t& work);

  const Prepared& prepared_;
  std::optional<GapIndex> index_;  // built by the first run that places a buffer in the gaps (its cost charged there)
  std::vector<std::uint64_t> offsets_;
  GapIndex::Lists lists_;               // scratch: the occupied ranges
  // The union of the occupied ranges but those of list `main` of lists_.sorted (valid until the
  // next call); adds its work.
  std::span<const Range> union_of_rest(std::size_t main, std::uint64_t& work);
  // A sorted run to merge: `size` ranges from base + begin, or from merged_ + begin when base
  // is null (merged_ may move as it grows).
  struct Run {
    const Range* base = nullptr;
    std::size_t begin = 0;
    std::size_t size = 0;
  };
  std::vector<Run> runs_;       // scratch: the runs left to merge
  std::vector<Range> merged_;  // scratch: every merge's output, one after another
};

}  // namespace memtool::planner::detail
