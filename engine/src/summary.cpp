// Summary → JSON (for MEMTOOL_SUMMARY) and the one-line exit report. Hand-written JSON: the
// fields are numbers and fixed-alphabet strings, but for the verify mismatch (a kernel's name)
// and the state's reason (free text), which are escaped.
#include "memtool/engine/summary.hpp"

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

namespace memtool::engine {
namespace {

// Free text (a kernel's name, a planner's error message): quotes and controls escaped.
std::string json_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string to_json(const Summary& s) {
  return fmt::format(
      "{{\"strategy\":\"{}\",\"state\":\"{}\",\"period_allocations\":{},\"period_events\":{},"
      "\"period_peak_bytes\":{},\"periods_rejected\":{},\"iterations_planned\":{},\"pool_bytes\":{},"
      "\"lower_bound_bytes\":{},\"allocs_from_pool\":{},\"allocs_passed_through\":{},"
      "\"misses\":{},\"refusals\":{},\"replans\":{},\"plans_made\":{},\"plan_failures\":{},"
      "\"pool_alloc_failures\":{},\"pool_reclaims\":{},\"exports_refused\":{},\"stream_waits\":{},\"events_recorded\":{"
      "},"
      "\"peak_device_bytes_with_pool\":{},\"peak_device_bytes_without_pool\":{},\"budget_bytes\":{},"
      "\"budget_refusals\":{},\"allocation_failures\":{},\"peak_device_bytes\":{},\"bytes_swapped_out\":{},"
      "\"bytes_swapped_in\":{},\"swap_ins_ahead\":{},\"swap_ins_on_demand\":{},\"host_bytes\":{},"
      "\"swap_mode\":\"{}\",\"swap_ins_late\":{},\"swap_ins_failed\":{},\"allocations_on_host\":{},\"stall_ns\":{},"
      "\"swap_policy\":\"{}\",\"swap_schedules\":{},\"swap_schedule_drops\":{},\"swap_schedules_rejected\":{},\"swap_"
      "outs_scheduled\":{},"
      "\"swap_ins_scheduled\":{},\"swap_link_to_host_bytes_per_s\":{},\"swap_link_to_device_bytes_per_s\":{},"
      "\"swap_link_source\":\"{}\",\"swap_schedule\":\"{}\",\"swap_candidates_timed\":{},"
      "\"period_graph_launches\":{},\"captures\":{},\"captured_work\":{},\"graph_launches\":{},"
      "\"opaque_graph_launches\":{},\"graph_memory_allocations\":{},\"graph_memory_bytes\":{},"
      "\"capture_detours\":{},"
      "\"swap_leaves_called_off\":{},\"swap_pinned\":{},\"swap_items_reaching_all\":{},\"swap_verify_checks\":{},"
      "\"swap_host_waits_refused\":{},\"swap_held_for_value_waits\":{},"
      "\"swap_verify_mismatches\":{},\"swap_verify_first_mismatch\":\"{}\","
      "\"state_reason\":\"{}\",\"allocs_in_planned_steps\":{},\"worst_step_served\":{:.6f},"
      "\"swap_iterations_selecting\":{}}}",
      s.strategy, s.state, s.period_allocations, s.period_events, s.period_peak_bytes, s.periods_rejected,
      s.iterations_planned, s.pool_bytes, s.lower_bound_bytes, s.allocs_from_pool, s.allocs_passed_through, s.misses,
      s.refusals, s.replans, s.plans_made, s.plan_failures, s.pool_alloc_failures, s.pool_reclaims, s.exports_refused,
      s.stream_waits, s.events_recorded, s.peak_device_bytes_with_pool, s.peak_device_bytes_without_pool,
      s.budget_bytes, s.budget_refusals, s.allocation_failures, s.peak_device_bytes, s.bytes_swapped_out,
      s.bytes_swapped_in, s.swap_ins_ahead, s.swap_ins_on_demand, s.host_bytes, s.swap_mode, s.swap_ins_late,
      s.swap_ins_failed, s.allocations_on_host, s.stall_ns, s.swap_policy, s.swap_schedules, s.swap_schedule_drops,
      s.swap_schedules_rejected, s.swap_outs_scheduled, s.swap_ins_scheduled, s.swap_link_to_host_bytes_per_s,
      s.swap_link_to_device_bytes_per_s, s.swap_link_source, s.swap_schedule, s.swap_candidates_timed,
      s.period_graph_launches, s.captures, s.captured_work, s.graph_launches, s.opaque_graph_launches,
      s.graph_memory_allocations, s.graph_memory_bytes, s.capture_detours, s.swap_leaves_called_off, s.swap_pinned,
      s.swap_items_reaching_all, s.swap_verify_checks, s.swap_host_waits_refused, s.swap_held_for_value_waits,
      s.swap_verify_mismatches, json_escaped(s.swap_verify_first_mismatch), json_escaped(s.state_reason),
      s.allocs_in_planned_steps, s.worst_step_served, s.swap_iterations_selecting);
}

bool write_summary_file(const Summary& summary, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  const std::string text = to_json(summary) + "\n";
  const bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const int saved = errno;
  const bool closed = std::fclose(file) == 0;
  if (!ok) errno = saved;
  return closed && ok;
}

std::string summary_line(const Summary& s) {
  if (s.strategy == "swap") {
    const std::string verified = s.swap_verify_checks == 0
                                     ? std::string()
                                     : fmt::format("; verify: {} checksums, {} buffers changed behind memtool's back",
                                                   s.swap_verify_checks, s.swap_verify_mismatches);
    const std::string chosen = s.swap_iterations_selecting == 0
                                   ? std::string()
                                   : fmt::format("; {} applies, chosen after {} iterations timed", s.swap_schedule,
                                                 s.swap_iterations_selecting);
    return fmt::format(
        "memtool swap ({}, {}): device peak {} B with memtool (budget {} B), {} B of live buffers at most; {} B "
        "swapped out, {} B in ({} on the schedule, {} ahead of use by the rule, {} late, {} on demand); {} B on the "
        "host at most; {:.1f} ms waited{}{}",
        s.swap_mode.empty() ? "off" : s.swap_mode, s.swap_policy.empty() ? "belady" : s.swap_policy,
        s.peak_device_bytes, s.budget_bytes, s.peak_device_bytes_without_pool, s.bytes_swapped_out, s.bytes_swapped_in,
        s.swap_ins_scheduled, s.swap_ins_ahead, s.swap_ins_late, s.swap_ins_on_demand, s.host_bytes,
        static_cast<double>(s.stall_ns) / 1e6, chosen, verified);
  }
  const std::string step = s.period_allocations == 0
                               ? std::string("no iteration planned")
                               : fmt::format("iteration of {} allocations ({} events, up to {} B live)",
                                             s.period_allocations, s.period_events, s.period_peak_bytes);
  return fmt::format(
             "memtool {}: {}; device peak {} B with memtool, {} B without; pool {} B (LB {} B); "
             "{} iterations planned, {} allocations from pool, {} passed through, {} misses, {} re-plans",
             s.strategy, step, s.peak_device_bytes_with_pool, s.peak_device_bytes_without_pool, s.pool_bytes,
             s.lower_bound_bytes, s.iterations_planned, s.allocs_from_pool, s.allocs_passed_through, s.misses,
             s.replans) +
         (s.state_reason.empty() ? std::string() : "; " + s.state + ": " + s.state_reason);
}

}  // namespace memtool::engine
