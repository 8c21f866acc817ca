// The replay of `memtool simulate` (in the spirit of rmm's replay benchmark): every event of a
// loaded trace or snapshot, in order, against one resource on its own simulated device —
// allocations and frees, the buffers each launch, copy and memset touches, synchronisations
// and iteration marks — and what the device held meanwhile.
//
// Baselines (engine/baselines.hpp) are called as libmemtool.so's runtime calls a strategy's
// stack; the planned pool runs inside the Engine (observer and runtime, as in the process), with
// step finding and planning on the calling thread so that a replay is deterministic. Device
// memory is counted at the driver's granularity (SimDevice::driver_footprint) for all of them.
// Pinned host allocations are not device memory and are skipped; managed and VMM allocations
// are replayed as device allocations. A failed allocation is counted and its buffer skipped
// (its free and its accesses) — the replay goes on, as a program that survives it would.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memtool/engine/summary.hpp"
#include "memtool/trace/model.hpp"

namespace memtool::cli {

struct SimulationOptions {
  std::vector<std::string> resources;     // names of engine::simulated_resources()
  std::optional<std::uint64_t> capacity;  // device bytes; none: unlimited
  bool progress = true;                   // progress lines on stderr for large inputs
  // Events [first, end) of the last complete training iteration, if one was found: the steady
  // state, where a plan has had its chance (the whole run's peak is often the warm-up's).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> steady_iteration;
};

struct ResourceOutcome {
  std::string name;
  std::uint64_t peak_reserved_bytes = 0;                    // the most device memory held at once
  std::uint64_t peak_live_bytes = 0;                        // the most bytes of live buffers it served at once
  std::optional<std::uint64_t> steady_peak_reserved_bytes;  // the most held during the steady iteration
  std::optional<std::uint64_t> failed_at_event;             // event index of the first failed allocation
  std::uint64_t allocations = 0;                            // device allocations replayed (served or failed)
  std::uint64_t failed_allocations = 0;
  std::optional<engine::Summary> pool;  // planned-pool: the engine's summary at the end

  // Peak reserved over peak live; 0 when nothing was live.
  [[nodiscard]] double fragmentation() const;
};

// One outcome per requested resource, in the order asked. Throws std::invalid_argument for an
// unknown resource name.
[[nodiscard]] std::vector<ResourceOutcome> simulate_trace(const trace::TraceModel& model,
                                                          const SimulationOptions& options);

}  // namespace memtool::cli
