// The alloc/free order the baselines replay (see allocation_sequence.hpp).
#include <algorithm>
#include <tuple>

#include "memtool/planner/allocation_sequence.hpp"
#include "prepared.hpp"

namespace memtool::planner {

std::vector<AllocationEvent> allocation_sequence(const trace::Problem& problem) {
  struct Keyed {
    std::uint64_t time;
    bool allocate;
    std::uint32_t buffer;
  };
  std::vector<Keyed> keyed;
  for (std::uint32_t i = 0; i < problem.buffers.size(); ++i) {
    for (const auto& iv : detail::normalised_intervals(problem.buffers[i])) {
      keyed.push_back({iv.begin, true, i});
      keyed.push_back({iv.end, false, i});
    }
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& x, const Keyed& y) {
    return std::tuple(x.time, x.allocate, x.buffer) < std::tuple(y.time, y.allocate, y.buffer);
  });
  std::vector<AllocationEvent> events;
  events.reserve(keyed.size());
  for (const auto& k : keyed) events.push_back({k.allocate, k.buffer, problem.buffers[k.buffer].size});
  return events;
}

}  // namespace memtool::planner
