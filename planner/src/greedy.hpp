// The greedy placer every heuristic shares: buffers are placed one by one in a given order, each
// into a gap between the address ranges of already-placed buffers it conflicts with (best fit:
// the tightest gap; first fit: the lowest), or on top of them all when no gap fits. The gaps
// come from a GapIndex (gap_index.hpp): merged, sorted lists of the occupied ranges, walked in
// address order, so a placement costs O(log S + the occupied runs its lifetime sees) instead of
// a visit and a sort of every placed buffer it conflicts with.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gap_index.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

enum class Fit { best, first };

struct GreedyResult {
  std::vector<std::uint64_t> offsets;  // per item
  std::uint64_t pool = 0;
  std::uint64_t work = 0;  // conflicts visited: the deterministic cost measure
};

class GreedyPlacer {
 public:
  explicit GreedyPlacer(const Prepared& prepared);
  // Places `order` (item indices; items with no footprint may be left out: they go to 0).
  // Stops early, returning pool = UINT64_MAX, as soon as the pool would exceed `give_up_above`.
  GreedyResult place(std::span<const std::uint32_t> order, Fit fit, std::uint64_t give_up_above = UINT64_MAX);

 private:
  std::uint64_t place_one(std::uint32_t item, Fit fit, std::uint64_t& work);

  const Prepared& prepared_;
  GapIndex index_;
  std::vector<std::uint64_t> offsets_;
  GapIndex::Lists lists_;               // scratch: the occupied ranges
  std::vector<std::size_t> runs_;       // scratch: sorted runs in lists_.loose
  std::vector<Range> merged_;           // scratch: merging them
};

}  // namespace memtool::planner::detail
