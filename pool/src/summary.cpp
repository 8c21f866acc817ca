// Summary → JSON (for MEMTOOL_SUMMARY) and the one-line exit report. Hand-written JSON: the
// fields are numbers and two fixed-alphabet strings, so no escaping beyond quotes is needed.
#include "memtool/pool/summary.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace memtool::pool {

std::string to_json(const Summary& s) {
  return fmt::format(
      "{{\"strategy\":\"{}\",\"state\":\"{}\",\"iterations_planned\":{},\"pool_bytes\":{},"
      "\"lower_bound_bytes\":{},\"allocs_from_pool\":{},\"allocs_passed_through\":{},"
      "\"misses\":{},\"refusals\":{},\"replans\":{},\"plans_made\":{},\"plan_failures\":{},"
      "\"pool_alloc_failures\":{},\"stream_waits\":{},\"events_recorded\":{},"
      "\"peak_device_bytes_with_pool\":{},\"peak_device_bytes_without_pool\":{}}}",
      s.strategy, s.state, s.iterations_planned, s.pool_bytes, s.lower_bound_bytes,
      s.allocs_from_pool, s.allocs_passed_through, s.misses, s.refusals, s.replans, s.plans_made,
      s.plan_failures, s.pool_alloc_failures, s.stream_waits, s.events_recorded,
      s.peak_device_bytes_with_pool, s.peak_device_bytes_without_pool);
}

bool write_summary_file(const Summary& summary, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  const std::string text = to_json(summary) + "\n";
  const bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  return std::fclose(file) == 0 && ok;
}

std::string summary_line(const Summary& s) {
  return fmt::format(
      "memtool pool: device peak {} B with pool, {} B without; pool {} B (LB {} B); "
      "{} iterations planned, {} allocations from pool, {} passed through, {} misses, {} re-plans",
      s.peak_device_bytes_with_pool, s.peak_device_bytes_without_pool, s.pool_bytes,
      s.lower_bound_bytes, s.iterations_planned, s.allocs_from_pool, s.allocs_passed_through,
      s.misses, s.replans);
}

}  // namespace memtool::pool
