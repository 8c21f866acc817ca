// A pool-planning problem (dynamic storage allocation): buffers with sizes, alignments and
// live intervals in an abstract time (event index). Produced from traces (one iteration's
// lifetimes) or read from MiniMalloc-style CSV; solved by planner/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memtool::trace {

// Half-open [begin, end) in event-index time, as MiniMalloc's CSV (`lower` inclusive,
// `upper` exclusive).
struct LiveInterval {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  friend bool operator==(const LiveInterval&, const LiveInterval&) = default;
};

struct BufferRequest {
  std::uint64_t id = 0;  // the caller's id (CSV id, or the buffer's id in the trace)
  std::uint64_t size = 0;
  std::uint64_t alignment = 1;  // power of two; offsets must be multiples of it
  // One or more disjoint intervals, sorted, that must share one offset (a swapped buffer
  // comes back to the same address).
  std::vector<LiveInterval> intervals;
  // Alive across the iteration boundary (allocated in one iteration, freed in the next): in
  // the cyclic view copies from consecutive iterations can be alive at once.
  bool crosses_iteration = false;
};

struct Problem {
  std::string name;  // where it came from (file, iteration), for messages
  std::vector<BufferRequest> buffers;
  std::uint64_t time_horizon = 0;  // one past the largest interval end
};

}  // namespace memtool::trace
