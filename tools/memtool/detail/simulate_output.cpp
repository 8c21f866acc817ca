// Rendering of `memtool simulate` (see simulate_output.hpp).
#include "detail/simulate_output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "detail/text_format.hpp"

namespace memtool::cli {
namespace {

// Four decimals are plenty for a ratio and keep the output stable and short.
double rounded_ratio(double value) { return std::round(value * 10000.0) / 10000.0; }

}  // namespace

std::string render_simulation_text(const SimulationReport& report) {
  std::string out = fmt::format("memtool simulate: {} ({}), {} events\n", report.input, report.description,
                                group_thousands(report.events));
  out += fmt::format("  device capacity: {}\n",
                     report.capacity ? human_bytes_exact(*report.capacity) : std::string("unlimited"));
  if (report.steady_iteration) {
    out += fmt::format("  last iteration: events {} to {} (peak reserved there: the steady state)\n",
                       group_thousands(report.steady_iteration->first),
                       group_thousands(report.steady_iteration->second - 1));
  }
  out += "\n";
  TextTable table({"resource", "peak reserved", "peak live", "reserved/live", "last iteration", "allocations", "failed",
                   "first failure"},
                  {true});
  for (const ResourceOutcome& o : report.outcomes) {
    table.add_row(
        {o.name, human_bytes_exact(o.peak_reserved_bytes), human_bytes_exact(o.peak_live_bytes),
         o.peak_live_bytes == 0 ? std::string("-") : fmt::format("{:.4f}", o.fragmentation()),
         o.steady_peak_reserved_bytes ? human_bytes(*o.steady_peak_reserved_bytes) : std::string("-"),
         group_thousands(o.allocations), group_thousands(o.failed_allocations),
         o.failed_at_event ? fmt::format("event {}", group_thousands(*o.failed_at_event)) : std::string("-")});
  }
  out += table.render();
  for (const ResourceOutcome& o : report.outcomes) {
    if (!o.pool) continue;
    const engine::Summary& s = *o.pool;
    out += fmt::format(
        "\n{}: {}; {} of {} allocations served from the pool, {} plan(s), pool {}\n", o.name,
        s.period_allocations != 0 ? fmt::format("a step of {} allocations ({} events)",
                                                group_thousands(s.period_allocations), group_thousands(s.period_events))
                                  : std::string("no step found"),
        group_thousands(s.allocs_from_pool), group_thousands(o.allocations), s.plans_made, human_bytes(s.pool_bytes));
  }
  return out;
}

std::string render_simulation_json(const SimulationReport& report) {
  nlohmann::ordered_json resources = nlohmann::ordered_json::array();
  for (const ResourceOutcome& o : report.outcomes) {
    nlohmann::ordered_json r;
    r["name"] = o.name;
    r["peak_reserved_bytes"] = o.peak_reserved_bytes;
    r["peak_live_bytes"] = o.peak_live_bytes;
    r["fragmentation"] = rounded_ratio(o.fragmentation());
    r["failed_at_event"] = o.failed_at_event ? nlohmann::ordered_json(*o.failed_at_event) : nlohmann::ordered_json();
    r["steady_peak_reserved_bytes"] =
        o.steady_peak_reserved_bytes ? nlohmann::ordered_json(*o.steady_peak_reserved_bytes) : nlohmann::ordered_json();
    r["allocations"] = o.allocations;
    r["failed_allocations"] = o.failed_allocations;
    if (o.pool) {
      r["pool"] = {{"period_allocations", o.pool->period_allocations},
                   {"allocations_from_pool", o.pool->allocs_from_pool},
                   {"plans_made", o.pool->plans_made},
                   {"pool_bytes", o.pool->pool_bytes}};
    }
    resources.push_back(std::move(r));
  }
  nlohmann::ordered_json j;
  j["resources"] = std::move(resources);
  return j.dump(2) + "\n";
}

}  // namespace memtool::cli
