// Well-formedness of a schedule against its iteration (schedule.hpp).
#include "memtool/swapper/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace memtool::swapper {

Swap swap_of(const Gap& gap) {
  Swap swap;
  swap.gap = gap;
  swap.out_after_op = gap.from_op;
  swap.in_at_op = gap.to_op;
  return swap;
}

std::string validate(const Iteration& iteration, const Schedule& schedule) {
  std::vector<Gap> gaps = find_gaps(iteration);
  const auto key = [](const Gap& g) { return std::tuple(g.buffer, g.after_access, g.from_op, g.to_op); };
  const auto less = [&](const Gap& a, const Gap& b) { return key(a) < key(b); };
  std::sort(gaps.begin(), gaps.end(), less);
  std::vector<Gap> used;
  used.reserve(schedule.swaps.size());
  for (std::size_t s = 0; s < schedule.swaps.size(); ++s) {
    const Swap& swap = schedule.swaps[s];
    const Gap& gap = swap.gap;
    if (gap.buffer >= iteration.buffers.size()) {
      return fmt::format("swap {}: buffer {} of {}", s, gap.buffer, iteration.buffers.size());
    }
    if (!std::binary_search(gaps.begin(), gaps.end(), gap, less)) {
      return fmt::format(
          "swap {}: buffer {} has no gap after its access {} from op {} to op {} (not swappable, "
          "or not two consecutive accesses)",
          s, gap.buffer, gap.after_access, gap.from_op, gap.to_op);
    }
    if (swap.out_after_op < gap.from_op || swap.out_after_op >= swap.in_at_op || swap.in_at_op > gap.to_op) {
      return fmt::format("swap {}: triggers out after op {}, in at op {} outside the gap [{}, {}] or out of order", s,
                         swap.out_after_op, swap.in_at_op, gap.from_op, gap.to_op);
    }
    if (swap.out_wait_op != kNoWait && (swap.out_wait_op <= swap.out_after_op || swap.out_wait_op > gap.to_op)) {
      return fmt::format("swap {}: op {} waits for a copy-out issued after op {} (gap ends at op {})", s,
                         swap.out_wait_op, swap.out_after_op, gap.to_op);
    }
    used.push_back(gap);
  }
  std::sort(used.begin(), used.end(), less);
  const auto dup = std::adjacent_find(used.begin(), used.end());
  if (dup != used.end()) {
    return fmt::format("two swaps of buffer {} in its gap from op {} to op {}", dup->buffer, dup->from_op, dup->to_op);
  }
  return {};
}

}  // namespace memtool::swapper
