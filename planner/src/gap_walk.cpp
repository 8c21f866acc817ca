// best_fit: see gap_walk.hpp.
#include "gap_walk.hpp"

#include "greedy_costs.hpp"

namespace memtool::planner::detail {

template <typename R>
std::uint64_t best_fit(std::span<const R> main, std::span<const R> rest, GapWalk& walk, std::uint64_t& work) {
  namespace cost = greedy_cost;
  const R* m = main.data();
  const R* const m_end = m + main.size();
  const R* other = rest.data();
  const R* const other_end = other + rest.size();
  const std::uint64_t f = walk.footprint;
  std::uint64_t steps = 0;
  std::uint64_t scanned = 0;
  while (true) {
    const std::uint64_t next_lo = other != other_end ? other->lo : UINT64_MAX;
    const std::uint64_t below = m == main.data() ? 0 : (m - 1)->hi;
    if (m != m_end && walk.cursor == below && m->lo <= next_lo) {
      // Nothing visited reaches past main's last range visited: up to the next other range,
      // the gaps are main's own. A gap of `size` is tighter than the best when size - f
      // (wrapping below f) is under best_gap - f.
      std::uint64_t prev = below;
      std::uint64_t bound = walk.best_gap - f;
      const R* r = m;
      for (; r != m_end && r->lo <= next_lo; ++r) {
        const std::uint64_t size = r->lo - prev;
        if (size - f < bound && align_up(prev, walk.alignment) + f <= r->lo) {
          walk.best_gap = size;
          walk.best_lo = prev;
          bound = size - f;
          if (size == f) break;  // nothing tighter can hold it
        }
        prev = r->hi;
      }
      scanned += static_cast<std::uint64_t>(r - m);
      if (walk.best_gap == f) break;
      walk.cursor = prev;
      m = r;
      continue;
    }
    ++steps;
    if (other != other_end && (m == m_end || other->lo < m->lo)) {
      if (!walk.step(*other++)) break;
    } else if (m != m_end) {
      if (!walk.step(*m++)) break;
    } else {
      break;
    }
  }
  work += cost::kRange * steps + cost::kScanned * scanned;
  return walk.offset();
}

template std::uint64_t best_fit(std::span<const Range>, std::span<const Range>, GapWalk&, std::uint64_t&);
template std::uint64_t best_fit(std::span<const NarrowRange>, std::span<const NarrowRange>, GapWalk&, std::uint64_t&);

}  // namespace memtool::planner::detail
