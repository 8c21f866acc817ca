// What the op timer measured of one iteration's work items (op_timer.hpp), for the swapper's
// input (swap_observation.hpp: swapper::Op's duration_ns, host_ns and syncs).
#pragma once

#include <cstdint>
#include <vector>

namespace memtool::engine::detail {

struct ItemTimes {
  std::vector<double> gpu_ns;   // per item: the GPU's time (op_timer.hpp)
  std::vector<double> host_ns;  // per item: the program's own host time to the next item
  std::vector<bool> syncs;      // per item: the program waited for the GPU before the next item
  // host_ns and syncs were measured with memtool's own host time taken out, and gpu_ns on the
  // GPU's clock (timing events): the swapper may run the host on its own timeline.
  bool host_timed = false;
  // The ended iteration's host clock from its first item to its end, and what of it was memtool's
  // and the program's synchronisations' (not the shorter of two: for the log).
  double wall_ns = 0;
  double memtool_ns = 0;
  double sync_wait_ns = 0;
};

}  // namespace memtool::engine::detail
