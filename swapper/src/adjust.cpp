// The learning hook (adjust.hpp).
#include "memtool/swapper/adjust.hpp"

#include <stdexcept>

namespace memtool::swapper {

Schedule adjust(const Iteration& iteration, const Schedule& schedule, std::span<const double> lateness_ns,
                const AdjustOptions& options) {
  if (lateness_ns.size() != schedule.swaps.size()) {
    throw std::invalid_argument("swapper: adjust needs one lateness per swap");
  }
  const std::size_t n = iteration.ops.size();
  Schedule adjusted = schedule;
  for (std::size_t s = 0; s < adjusted.swaps.size(); ++s) {
    if (!(lateness_ns[s] > 0) || n == 0) continue;
    Swap& swap = adjusted.swaps[s];
    const double needed = lateness_ns[s] * (1.0 + options.margin);
    double gained = 0;
    // Issuing at op j - 1 instead of j makes the copy ready when op j - 2 ends: op j - 1 earlier.
    while (swap.in_at_op > swap.out_after_op + 1 && gained < needed) {
      --swap.in_at_op;
      gained += static_cast<double>(iteration.ops[swap.in_at_op % n].duration_ns);
    }
  }
  return adjusted;
}

}  // namespace memtool::swapper
