// Re-planning the pool for a swap schedule (the paper's SwapPool): the simulator's peak counts
// live bytes; a real pool must also place them. A swapped buffer's lifetime splits into
// residencies (stretches on the device with no copy in between); this packs them into one pool
// with the planner and says what that costs over the live bytes. A simulation that held a
// budget (SimulateOptions::hold_budget_bytes) also splits them at the executor's rule's swaps.
//
// Time is the simulator's measured iteration, taken as periodic with its length T (the steady
// state the simulator measures): a residency runs from the start of the op its buffer is
// allocated before, or from the start of a copy-in, to the end of the op it is freed after, or
// to the end of a copy-out (the bytes are free for others from then on, as in the simulator).
// The period is cut at the iteration's start: a residency that runs through it (a persistent
// buffer's, a crossing buffer's, or one around a wrapped swap) is one planner buffer with the
// two intervals [begin, T) and [0, end - T), marked crosses_iteration, so iteration after
// iteration reuses the same offsets. The planner's time is the rank of each distinct event time
// (times within a nanosecond-fraction tolerance are one), so releases before allocations at an
// equal time come for free with half-open intervals.
//
// Two packings of the same residencies:
//   (a) free: each residency has its own offset. A buffer swapped back in may land elsewhere:
//       right for an executor that remaps (VMM: the program's address stays, the physical pages
//       change) or that hands out the new pointer;
//   (b) same address: all residencies of a buffer share one offset (the paper's rule, and what
//       an executor without remapping needs, as the program keeps its pointer). The planner
//       takes that natively: one buffer with several intervals.
// Both are valid placements checked by the planner's validator; the lower bound (the most
// footprint bytes resident at once) is the same for both: the simulator's peak plus at most the
// alignment padding (the residencies are its occupancy), unless a residency shorter than the
// tolerance is held to the next event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/schedule.hpp"
#include "memtool/swapper/simulate.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::swapper {

struct SwapPoolOptions {
  std::string algorithm = "best";   // a planner algorithm (planner/README.md)
  double time_limit_seconds = 1.0;  // per packing (the planner's deterministic work budget)
  std::uint64_t alignment = 512;    // of every buffer, as `memtool plan` (1: exact bytes)
  bool same_address = true;         // also pack (b)
};

// One stretch a buffer spends on the device between two copies (or its allocation and free).
struct Residency {
  std::uint32_t buffer = 0;               // index into Iteration::buffers
  double begin_ns = 0;                    // from the measured iteration's start, in [0, period)
  double end_ns = 0;                      // > begin_ns; above the period when it runs through the next start
  std::uint64_t offset = 0;               // (a)
  std::uint64_t offset_same_address = 0;  // (b); equal for every residency of a buffer
  [[nodiscard]] bool wraps(double period_ns) const { return end_ns > period_ns; }
};

struct SwapPool {
  double period_ns = 0;
  std::vector<Residency> residencies;         // by buffer, and along the period within a buffer
  std::uint64_t lower_bound_bytes = 0;        // most footprint bytes resident at once
  std::uint64_t pool_bytes = 0;               // (a)
  std::uint64_t pool_bytes_same_address = 0;  // (b); 0 when not asked for
};

// The residencies of every buffer under the schedule, with their times (offsets left 0).
// `simulation` must be the schedule's (Simulator::run on the same iteration and schedule).
// Throws std::invalid_argument when it is not (sizes differ) or the iteration is empty.
[[nodiscard]] std::vector<Residency> residencies(const Iteration& iteration, const Schedule& schedule,
                                                 const Simulation& simulation);

// The planner problem of those residencies: (a) one buffer per residency, or (b) one per
// iteration buffer holding all of its residencies. Buffer ids: the residency's index (a) or the
// iteration buffer's index (b).
[[nodiscard]] trace::Problem pool_problem(const Iteration& iteration, const std::vector<Residency>& residencies,
                                          double period_ns, std::uint64_t alignment, bool same_address);

// Residencies, lower bound and both packings. Throws std::invalid_argument as residencies(), or
// for an unknown algorithm.
[[nodiscard]] SwapPool plan_swap_pool(const Iteration& iteration, const Schedule& schedule,
                                      const Simulation& simulation, const SwapPoolOptions& options = {});

}  // namespace memtool::swapper
