// Learning from one iteration: a swap-in that arrived late has its trigger moved earlier, by
// enough ops (at their base durations) to cover the lateness observed plus a margin, never before
// its own swap-out. A pure function: the executor measures each swap-in's lateness (its event
// against the consumer's launch) and hands the next iteration the adjusted schedule.
#pragma once

#include <span>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/schedule.hpp"

namespace memtool::swapper {

struct AdjustOptions {
  double margin = 0.25;  // move by lateness * (1 + margin) of op time
};

// lateness_ns[i] belongs to schedule.swaps[i] (SwapTiming::lateness_ns: > 0 late, <= 0 on time).
// Throws std::invalid_argument when the sizes differ.
[[nodiscard]] Schedule adjust(const Iteration& iteration, const Schedule& schedule, std::span<const double> lateness_ns,
                              const AdjustOptions& options = {});

}  // namespace memtool::swapper
