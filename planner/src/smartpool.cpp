// SmartPool as its authors implemented it: buffers coloured in order of size (largest first,
// ties by earlier arrival), each into the best-fitting gap (or, as an option, the first gap)
// left by already-placed buffers whose lifetimes intersect its own, else on top of them.
// Cross-iteration buffers are coloured first, among themselves, and their region is doubled (a
// primary and a backup slot, since copies from consecutive iterations can be alive together);
// every other buffer is coloured above that doubled region.
//
// Differences from the original, none of which changes a placement: the n×n adjacency matrix
// is replaced by an interval index that yields the same conflicting neighbours (so 100 k
// buffers do not need 10^10 bytes), and offsets respect each buffer's alignment (SINGA's blocks
// had none).
#include "smartpool.hpp"

#include <algorithm>

#include "greedy.hpp"

namespace memtool::planner::detail {

Placement smartpool_plan(const Prepared& p, bool first_fit) {
  std::vector<std::uint32_t> cross, normal;
  for (std::uint32_t i = 0; i < p.items.size(); ++i) {
    if (p.items[i].footprint == 0) continue;
    (p.items[i].crosses_iteration ? cross : normal).push_back(i);
  }
  auto paper_order = [&](std::uint32_t x, std::uint32_t y) {
    if (p.items[x].footprint != p.items[y].footprint) return p.items[x].footprint > p.items[y].footprint;
    if (p.items[x].begin != p.items[y].begin) return p.items[x].begin < p.items[y].begin;
    return x < y;
  };
  std::sort(cross.begin(), cross.end(), paper_order);
  std::sort(normal.begin(), normal.end(), paper_order);
  const Fit fit = first_fit ? Fit::first : Fit::best;
  GreedyPlacer placer(p);

  Placement placement;
  placement.offsets.assign(p.items.size(), 0);
  std::uint64_t base = 0;
  if (!cross.empty()) {
    auto region = placer.place(cross, fit);
    for (std::uint32_t i : cross) placement.offsets[i] = region.offsets[i];
    base = 2 * region.pool;  // primary + backup slot
  }
  std::uint64_t max_alignment = 1;
  for (std::uint32_t i : normal) max_alignment = std::max(max_alignment, p.items[i].alignment);
  base = align_up(base, max_alignment);
  std::uint64_t pool = base;
  if (!normal.empty()) {
    auto upper = placer.place(normal, fit);
    for (std::uint32_t i : normal) placement.offsets[i] = base + upper.offsets[i];
    pool = base + upper.pool;
  }
  placement.pool_size = pool;
  return placement;
}

}  // namespace memtool::planner::detail
