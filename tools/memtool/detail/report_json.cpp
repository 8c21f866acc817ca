// The JSON rendering of `memtool report` (fields documented in README.md).
#include <nlohmann/json.hpp>

#include "detail/report_data.hpp"

namespace memtool::cli {
namespace {

nlohmann::json buffer_json(const BufferRow& r) {
  nlohmann::json j{
      {"id", r.id.value()},
      {"size", r.size},
      {"alloc_event", r.alloc_event},
      {"free_event", r.free_event == trace::kNever ? nlohmann::json(nullptr) : nlohmann::json(r.free_event)},
      {"persistent", r.persistent}};
  j["iteration"] = r.alloc_iteration ? nlohmann::json(*r.alloc_iteration) : nlohmann::json(nullptr);
  if (!r.site.empty()) j["site"] = r.site;
  if (!r.kernels.empty()) j["kernels"] = r.kernels;
  return j;
}

nlohmann::json buffers_json(const std::vector<BufferRow>& rows) {
  auto list = nlohmann::json::array();
  for (const auto& r : rows) list.push_back(buffer_json(r));
  return list;
}

nlohmann::json gpu_json(const GpuReport& g) {
  const auto& w = g.window;
  nlohmann::json kernels = nlohmann::json::array();
  for (std::size_t i = 0; i < w.kernels.size(); ++i) {
    kernels.push_back({{"name", g.kernel_names[i]},
                       {"launches", w.kernels[i].launches},
                       {"total_ns", w.kernels[i].total_ns},
                       {"max_ns", w.kernels[i].max_ns}});
  }
  nlohmann::json streams = nlohmann::json::array();
  for (const auto& s : w.streams) {
    streams.push_back({{"device", s.device},
                       {"cupti_stream", s.cupti_stream},
                       {"handle", s.handle},
                       {"items", s.items},
                       {"busy_ns", s.busy_ns},
                       {"idle_ns", s.idle_ns},
                       {"gaps", s.gaps},
                       {"longest_gap_ns", s.longest_gap_ns}});
  }
  nlohmann::json engines = nlohmann::json::array();
  for (const auto& e : w.copy_engines) {
    engines.push_back({{"direction", std::string(trace::to_string(e.direction))},
                       {"copies", e.copies},
                       {"bytes", e.bytes},
                       {"busy_ns", e.busy_ns}});
  }
  return {{"busy_ns", w.busy_ns},
          {"span_ns", w.span_ns},
          {"timed_launches", w.timed_launches},
          {"timed_copies", w.timed_copies},
          {"timed_memsets", w.timed_memsets},
          {"unjoined", g.unjoined},
          {"mismatched", g.mismatched},
          {"kernels", kernels},
          {"streams", streams},
          {"copy_engines", engines}};
}

}  // namespace

std::string render_report_json(const ReportData& d) {
  nlohmann::json j;
  j["input"] = d.input;
  j["input_kind"] = d.input_kind;
  j["total_events"] = d.total_events;
  j["total_allocs"] = d.total_allocs;
  j["total_frees"] = d.total_frees;
  j["total_launches"] = d.total_launches;
  j["iteration_source"] = d.iteration_source;
  j["iteration_period"] = d.period_events;
  j["iteration_period_allocs"] = d.period_allocs;
  j["steady_start_event"] = d.steady_start;
  j["gpu_timed_launches"] = d.gpu.timed_launches;
  j["graph_launches"] = d.anomalies.graph_launches;
  j["opaque_graph_launches"] = d.anomalies.opaque_graph_launches;
  j["iteration_period_graph_launches"] = d.period_graph_launches;
  j["captures"] = d.anomalies.captures;
  j["captured_work"] = d.anomalies.captured_work;
  j["graph_memory_allocations"] = d.anomalies.graph_memory_allocations;
  j["graph_memory_bytes"] = d.anomalies.graph_memory_bytes;
  j["graphs_with_memory"] = d.anomalies.graphs_with_memory;
  auto iterations = nlohmann::json::array();
  for (std::size_t i = d.selected_first; i < d.selected_end; ++i) {
    const auto& it = d.iterations[i];
    iterations.push_back(
        {{"index", i},
         {"gpu_busy_ns", d.gpu.present ? nlohmann::json(d.gpu.iteration_busy_ns[i]) : nlohmann::json(nullptr)},
         {"first_event", it.first_event},
         {"events", it.end_event - it.first_event},
         {"allocs", it.allocs},
         {"frees", it.frees},
         {"peak_live_bytes", it.peak.bytes},
         {"peak_event", it.peak.event},
         {"live_at_start_bytes", it.live_at_start},
         {"live_at_end_bytes", it.live_at_end},
         {"warmup", it.warm_up},
         {"complete", d.iteration_notes[i] != "incomplete"}});
  }
  j["iterations"] = std::move(iterations);
  j["iteration_count"] = d.iterations.size();
  j["steady_state_peak_live_bytes"] = d.steady_state_peak;
  j["peak_live_bytes"] = d.peak.bytes;
  j["peak_event"] = d.peak.event;
  j["live_at_end_bytes"] = d.live_at_end;
  j["persistent_bytes"] = d.persistent_bytes;
  j["persistent_buffers"] = d.persistent_buffers;
  j["leaked_bytes"] = d.leaked_bytes;
  j["leaked_buffers"] = d.leaked_buffers;
  if (d.reserved_peak) j["reserved_peak_bytes"] = *d.reserved_peak;
  if (d.caching_allocator_warning) j["warnings"] = {*d.caching_allocator_warning};
  j["largest_at_peak"] = buffers_json(d.largest_at_peak);
  j["longest_lifetimes"] = buffers_json(d.longest_lifetimes);
  j["leaks"] = buffers_json(d.leaks);
  if (d.gpu.present) j["gpu"] = gpu_json(d.gpu);
  j["anomalies"] = {{"unknown_frees", d.anomalies.unknown_frees},
                    {"allocations_over_live", d.anomalies.reused_live_addresses},
                    {"unresolved_touches", d.anomalies.unresolved_touches}};
  return j.dump(2) + "\n";
}

}  // namespace memtool::cli
