// What the swap policy counts (MEMTOOL_STRATEGY=swap): its moves, its waits, its host bytes and
// device peaks, its schedules. They go into the run's summary (add_to) and, per iteration at
// MEMTOOL_LOG=debug, into one line of what the iteration moved and who moved it (iteration_line,
// against the counts at the last boundary). Plain counts: the swap policy's lock guards them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "memtool/engine/summary.hpp"

namespace memtool::engine::detail {

struct SwapCounters {
  std::uint64_t bytes_swapped_out = 0;
  std::uint64_t swap_outs = 0;
  std::uint64_t bytes_swapped_in = 0;
  std::uint64_t swap_ins_on_demand = 0;
  std::uint64_t swap_ins_ahead = 0;
  std::uint64_t swap_ins_late = 0;
  std::uint64_t swap_ins_failed = 0;
  std::uint64_t born_on_host = 0;
  std::uint64_t host_bytes = 0;  // peak bytes on the host
  std::uint64_t host_bytes_now = 0;
  std::uint64_t stream_waits = 0;
  std::uint64_t iterations_planned = 0;
  std::uint64_t peak_device_bytes = 0;
  std::uint64_t peak_device_bytes_without_pool = 0;
  std::uint64_t allocation_failures = 0;
  std::uint64_t exports_refused = 0;
  std::uint64_t exports_pinned = 0;
  std::uint64_t held_for_value_waits = 0;  // placements kept on the host to hold the budget (hold_budget)
  std::uint64_t schedules = 0;
  std::uint64_t schedule_drops = 0;
  std::uint64_t schedules_rejected = 0;
  std::uint64_t candidates_timed = 0;      // ours' trials that reached a verdict
  std::uint64_t iterations_selecting = 0;  // iterations timed from a plan to the selector's choice
  std::uint64_t swap_outs_scheduled = 0;
  std::uint64_t swap_ins_scheduled = 0;
  std::uint64_t leaves_called_off = 0;   // a copy out under way, called off for work that may reach it
  std::uint64_t pinned = 0;              // buffers whose address escaped: never moved again
  std::uint64_t items_reaching_all = 0;  // work items that may reach any buffer

  // `bytes` more on the host, and its peak.
  void to_host(std::uint64_t bytes) {
    host_bytes_now += bytes;
    host_bytes = std::max(host_bytes, host_bytes_now);
  }
  // `bytes` off the host (back on the device, freed, or a move called off).
  void off_host(std::uint64_t bytes) { host_bytes_now -= std::min(host_bytes_now, bytes); }

  // The counts into the run's summary.
  void add_to(Summary& s) const {
    s.bytes_swapped_out += bytes_swapped_out;
    s.bytes_swapped_in += bytes_swapped_in;
    s.swap_ins_on_demand += swap_ins_on_demand;
    s.swap_ins_ahead += swap_ins_ahead;
    s.swap_ins_late += swap_ins_late;
    s.swap_ins_failed += swap_ins_failed;
    s.allocations_on_host += born_on_host;
    s.swap_schedules += schedules;
    s.swap_schedule_drops += schedule_drops;
    s.swap_schedules_rejected += schedules_rejected;
    s.swap_outs_scheduled += swap_outs_scheduled;
    s.swap_ins_scheduled += swap_ins_scheduled;
    s.swap_candidates_timed += candidates_timed;
    s.swap_iterations_selecting += iterations_selecting;
    s.host_bytes = std::max(s.host_bytes, host_bytes);
    s.stream_waits += stream_waits;
    s.iterations_planned += iterations_planned;
    s.peak_device_bytes = std::max(s.peak_device_bytes, peak_device_bytes);
    s.peak_device_bytes_with_pool = std::max(s.peak_device_bytes_with_pool, peak_device_bytes);
    s.peak_device_bytes_without_pool = std::max(s.peak_device_bytes_without_pool, peak_device_bytes_without_pool);
    s.allocation_failures += allocation_failures;
    s.exports_refused += exports_refused;
    s.swap_leaves_called_off += leaves_called_off;
    s.swap_pinned += pinned;
    s.swap_items_reaching_all += items_reaching_all;
    s.swap_held_for_value_waits += held_for_value_waits;
  }

  // What the iteration that just ended moved, and who moved it: the counts since `a` (those at
  // the last boundary); `who` ran it, `waited_ns` the host waited in it.
  [[nodiscard]] std::string iteration_line(const SwapCounters& a, std::string_view who, double iteration_ns,
                                           double waited_ns) const {
    return fmt::format(
        "memtool swap: iteration {} ({}): {:.1f} ms on the host; {} out ({} on the schedule, {} B), {} in "
        "({} on the schedule, {} ahead by the rule, {} on demand, {} late); {:.1f} ms waited",
        iterations_planned, who, iteration_ns / 1e6, swap_outs - a.swap_outs,
        swap_outs_scheduled - a.swap_outs_scheduled, bytes_swapped_out - a.bytes_swapped_out,
        (swap_ins_scheduled - a.swap_ins_scheduled) + (swap_ins_ahead - a.swap_ins_ahead) +
            (swap_ins_on_demand - a.swap_ins_on_demand),
        swap_ins_scheduled - a.swap_ins_scheduled, swap_ins_ahead - a.swap_ins_ahead,
        swap_ins_on_demand - a.swap_ins_on_demand, swap_ins_late - a.swap_ins_late, waited_ns / 1e6);
  }
};

}  // namespace memtool::engine::detail
