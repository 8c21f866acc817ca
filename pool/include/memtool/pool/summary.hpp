// What pool mode reports: the accounting behind a consistent cuMemGetInfo, the counters of the
// run (MEMTOOL_SUMMARY=FILE gets them as one JSON object), and the exit line.
#pragma once

#include <cstdint>
#include <string>

namespace memtool::pool {

// Bytes as the engine sees them at one moment.
struct MemInfo {
  std::uint64_t pool_reserved = 0;  // sum of the pool allocations (current and draining ones)
  std::uint64_t pool_in_use = 0;    // footprints of pooled buffers the program holds
  std::uint64_t passed_through_live = 0;  // requested bytes of live buffers from the real allocator

  // cuMemGetInfo as the program would see it without the pool: the driver counts the whole
  // pool as used, but only `pool_in_use` of it is the program's.
  [[nodiscard]] std::uint64_t program_free(std::uint64_t driver_free) const {
    return driver_free + (pool_reserved - pool_in_use);
  }
};

struct Summary {
  std::string strategy = "pool";
  std::string state;                    // observe / plan / apply / disabled at the time
  std::uint64_t iterations_planned = 0;  // iterations served from a plan
  std::uint64_t pool_bytes = 0;          // size of the current pool (0 if none)
  std::uint64_t lower_bound_bytes = 0;   // LB of the last plan's problem
  std::uint64_t allocs_from_pool = 0;
  std::uint64_t allocs_passed_through = 0;  // real allocator (observing, persistent, misses)
  std::uint64_t misses = 0;   // allocations in APPLY the plan could not serve
  std::uint64_t refusals = 0;  // misses because the planned range was live (invariant 1)
  std::uint64_t replans = 0;   // plans dropped for drift (each followed by a new plan)
  std::uint64_t plans_made = 0;
  std::uint64_t plan_failures = 0;       // planner threw or produced an invalid plan
  std::uint64_t pool_alloc_failures = 0;  // the pool's own allocation failed
  std::uint64_t stream_waits = 0;         // cuStreamWaitEvent issued for cross-stream reuse
  std::uint64_t events_recorded = 0;
  std::uint64_t peak_device_bytes_with_pool = 0;     // pools + live passed-through bytes
  std::uint64_t peak_device_bytes_without_pool = 0;  // peak of live requested bytes (observed)
};

// One JSON object (no trailing newline).
[[nodiscard]] std::string to_json(const Summary& summary);
// Writes to_json to `path`; false if the file could not be written.
bool write_summary_file(const Summary& summary, const std::string& path);
// The exit line: peak with and without the pool, pool size against LB, counters.
[[nodiscard]] std::string summary_line(const Summary& summary);

}  // namespace memtool::pool
