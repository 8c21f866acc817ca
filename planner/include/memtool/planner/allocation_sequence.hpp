// The order in which an allocator replays a problem's buffers (engine::simulate_baselines runs
// the baseline allocators, engine resources, in it): time runs forward through the problem's
// interval endpoints; at one time, frees (intervals ending then) come before allocations
// (intervals starting then), each group in buffer order. A buffer with several intervals is
// freed and allocated again (as a swapped buffer would be). Sizes are the buffers' sizes, not
// footprints: each allocator rounds them its own way.
#pragma once

#include <cstdint>
#include <vector>

#include "memtool/trace/problem.hpp"

namespace memtool::planner {

struct AllocationEvent {
  bool allocate = true;      // false: free
  std::uint32_t buffer = 0;  // index into problem.buffers
  std::uint64_t size = 0;
};

[[nodiscard]] std::vector<AllocationEvent> allocation_sequence(const trace::Problem& problem);

}  // namespace memtool::planner
