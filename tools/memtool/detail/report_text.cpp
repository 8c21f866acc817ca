// The text rendering of `memtool report`: a one-screen summary, then the per-iteration table,
// the live-bytes chart and the buffer tables.
#include <fmt/format.h>

#include "detail/report_data.hpp"
#include "detail/text_format.hpp"

namespace memtool::cli {
namespace {

std::string event_text(std::uint64_t event) {
  return event == trace::kNever ? std::string("-") : group_thousands(event);
}

// Nanoseconds for people: 850 ns, 12.3 us, 4.56 ms, 1.23 s.
std::string duration_text(std::uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  const auto v = static_cast<double>(ns);
  if (ns < 1000000) return fmt::format("{:.1f} us", v / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.2f} s", v / 1e9);
}

std::string iteration_text(const std::optional<std::size_t>& iteration) {
  return iteration ? fmt::format("iteration {}", *iteration) : std::string("before the first iteration");
}

void summary_section(const ReportData& d, std::string& out) {
  out += fmt::format("memtool report: {}\n", d.input);
  out += fmt::format("  input              {}\n", d.input_description);
  out +=
      fmt::format("  events             {} ({} allocations, {} frees, {} launches)\n", group_thousands(d.total_events),
                  group_thousands(d.total_allocs), group_thousands(d.total_frees), group_thousands(d.total_launches));
  if (d.period_events > 0) {
    const std::size_t steady = d.iterations.size() - d.warmup_iterations - d.incomplete_iterations;
    out += fmt::format(
        "  iterations         {} steady from event {}, found by {}: period {} events ({} allocations){}{}\n", steady,
        group_thousands(d.steady_start), d.iteration_source == "marks" ? "iteration marks" : "the detector",
        group_thousands(d.period_events), group_thousands(d.period_allocs),
        d.warmup_iterations ? fmt::format("; {} warm-up", d.warmup_iterations) : std::string{},
        d.incomplete_iterations ? fmt::format("; {} incomplete at the end", d.incomplete_iterations) : std::string{});
  } else {
    out += "  iterations         none found (no repeating pattern and no iteration marks)\n";
  }
  out += fmt::format("  peak live bytes    {} at event {}, {}\n", human_bytes_exact(d.peak.bytes),
                     group_thousands(d.peak.event), iteration_text(d.peak_iteration));
  if (d.period_events > 0) out += fmt::format("  steady-state peak  {}\n", human_bytes_exact(d.steady_state_peak));
  out += fmt::format("  persistent         {} in {} buffers (allocated before the loop, alive through it)\n",
                     human_bytes_exact(d.persistent_bytes), group_thousands(d.persistent_buffers));
  out += fmt::format("  leaked             {} in {} buffers (allocated in the loop, never freed)\n",
                     human_bytes_exact(d.leaked_bytes), group_thousands(d.leaked_buffers));
  out += fmt::format("  live at end        {}\n", human_bytes_exact(d.live_at_end));
  if (d.reserved_peak)
    out += fmt::format("  reserved peak      {} (segments of PyTorch's caching allocator)\n",
                       human_bytes_exact(*d.reserved_peak));
  const auto& a = d.anomalies;
  if (a.graph_launches != 0 || a.captures != 0) {
    out += fmt::format("  CUDA graphs        {} launches{}, {} per iteration; {} captures ({} operations captured)\n",
                       group_thousands(a.graph_launches),
                       a.opaque_graph_launches
                           ? fmt::format(" ({} of graphs memtool could not read)", a.opaque_graph_launches)
                           : std::string{},
                       d.period_graph_launches, a.captures, group_thousands(a.captured_work));
    out += fmt::format("  graph memory       {} allocations, {} in {} graphs (the driver's: never pooled or swapped)\n",
                       group_thousands(a.graph_memory_allocations), human_bytes_exact(a.graph_memory_bytes),
                       a.graphs_with_memory);
  }
  if (a.unknown_frees || a.reused_live_addresses || a.unresolved_touches)
    out += fmt::format(
        "  anomalies          {} frees of unknown addresses, {} allocations over live "
        "buffers, {} launch pointers outside any buffer\n",
        a.unknown_frees, a.reused_live_addresses, a.unresolved_touches);
}

void iteration_section(const ReportData& d, std::size_t rows, std::string& out) {
  if (d.iterations.empty()) return;
  out += fmt::format("\nIterations {}–{} of {}\n", d.selected_first, d.selected_end == 0 ? 0 : d.selected_end - 1,
                     d.iterations.size());
  std::vector<std::string> header{"iter",  "first event", "events",      "allocs",
                                  "frees", "peak live",   "live at end", "change"};
  std::vector<bool> left(header.size(), false);
  if (d.gpu.present) {
    header.emplace_back("gpu busy");
    left.push_back(false);
  }
  header.emplace_back("note");
  left.push_back(true);
  TextTable table(header, left);
  const std::size_t selected = d.selected_end - d.selected_first;
  const std::size_t head = selected > rows ? rows / 2 : selected;
  const std::size_t tail_from = selected > rows ? d.selected_end - (rows - head) : d.selected_end;
  for (std::size_t i = d.selected_first; i < d.selected_end; ++i) {
    if (i == d.selected_first + head && i < tail_from) {
      table.add_row({"…", fmt::format("({} more)", tail_from - i)});
      i = tail_from - 1;
      continue;
    }
    const auto& it = d.iterations[i];
    const auto change = static_cast<std::int64_t>(it.live_at_end) - static_cast<std::int64_t>(it.live_at_start);
    std::vector<std::string> row{
        std::to_string(i),           group_thousands(it.first_event), group_thousands(it.end_event - it.first_event),
        group_thousands(it.allocs),  group_thousands(it.frees),       human_bytes(it.peak.bytes),
        human_bytes(it.live_at_end), human_bytes_delta(change)};
    if (d.gpu.present) row.push_back(duration_text(d.gpu.iteration_busy_ns[i]));
    row.push_back(d.iteration_notes[i]);
    table.add_row(row);
  }
  out += table.render();
}

// GPU times (CUPTI): what the selection's launches, copies and memsets did on the GPU.
void gpu_section(const ReportData& d, std::string& out) {
  if (!d.gpu.present) return;
  const auto& w = d.gpu.window;
  out += "\nGPU time (CUPTI; the iterations shown, or the whole run)\n";
  out += fmt::format("  busy               {} of {} from the first start to the last end ({:.1f}%)\n",
                     duration_text(w.busy_ns), duration_text(w.span_ns),
                     w.span_ns == 0 ? 0.0 : 100.0 * static_cast<double>(w.busy_ns) / static_cast<double>(w.span_ns));
  out += fmt::format("  timed              {} launches, {} copies, {} memsets", group_thousands(w.timed_launches),
                     group_thousands(w.timed_copies), group_thousands(w.timed_memsets));
  if (d.gpu.unjoined != 0 || d.gpu.mismatched != 0) {
    out += fmt::format("; {} GPU records name no recorded call ({} name an unknown one)",
                       group_thousands(d.gpu.unjoined + d.gpu.mismatched), group_thousands(d.gpu.mismatched));
  }
  out += "\n";
  if (!w.kernels.empty()) {
    out += "\nLongest kernels (total GPU time)\n";
    TextTable table({"kernel", "launches", "total", "mean", "longest"}, {true, false, false, false, false});
    for (std::size_t i = 0; i < w.kernels.size(); ++i) {
      const auto& k = w.kernels[i];
      table.add_row({d.gpu.kernel_names[i].empty() ? std::string("?") : d.gpu.kernel_names[i],
                     group_thousands(k.launches), duration_text(k.total_ns),
                     duration_text(k.launches == 0 ? 0 : k.total_ns / k.launches), duration_text(k.max_ns)});
    }
    out += table.render();
  }
  if (!w.streams.empty()) {
    out += "\nStreams (idle: gaps between a stream's GPU work, from its first start to its last end)\n";
    TextTable table({"device", "stream", "handle", "items", "busy", "idle", "gaps", "longest gap"});
    for (const auto& s : w.streams) {
      table.add_row({std::to_string(s.device), std::to_string(s.cupti_stream), fmt::format("{:#x}", s.handle),
                     group_thousands(s.items), duration_text(s.busy_ns), duration_text(s.idle_ns),
                     group_thousands(s.gaps), duration_text(s.longest_gap_ns)});
    }
    out += table.render();
  }
  if (!w.copy_engines.empty()) {
    out += "\nCopy engines (busy: the union of each direction's copies)\n";
    TextTable table({"direction", "copies", "bytes", "busy"}, {true, false, false, false});
    for (const auto& e : w.copy_engines) {
      table.add_row({std::string(trace::to_string(e.direction)), group_thousands(e.copies), human_bytes(e.bytes),
                     duration_text(e.busy_ns)});
    }
    out += table.render();
  }
}

void chart_section(const ReportData& d, std::string& out) {
  out += fmt::format("\nLive bytes over time (events {}–{}; '|' marks iteration starts, '@' the peak)\n",
                     group_thousands(d.curve_first_event),
                     group_thousands(d.curve_first_event + (d.curve.empty() ? 0 : d.curve.size() - 1)));
  out += ascii_chart(d.curve, d.curve_markers, ChartOptions{});
}

void buffer_section(const std::string& title, const std::vector<BufferRow>& rows, std::string& out) {
  if (rows.empty()) return;
  out += fmt::format("\n{}\n", title);
  TextTable table({"buffer", "size", "bytes", "allocated", "freed", "lifetime", "iteration", "site / kernels"},
                  {false, false, false, false, false, false, true, true});
  for (const auto& r : rows) {
    std::string where = r.site;
    if (!r.kernels.empty()) where += (where.empty() ? "" : "; ") + std::string("kernels: ") + r.kernels;
    const std::string lifetime =
        r.free_event == trace::kNever ? std::string("to end") : group_thousands(r.free_event - r.alloc_event);
    std::string iteration = r.persistent        ? std::string("persistent")
                            : r.alloc_iteration ? std::to_string(*r.alloc_iteration)
                                                : std::string("prologue");
    table.add_row({fmt::format("#{}", r.id.value()), human_bytes(r.size), group_thousands(r.size),
                   group_thousands(r.alloc_event), event_text(r.free_event), lifetime, iteration, where});
  }
  out += table.render();
}

}  // namespace

std::string render_report_text(const ReportData& d) {
  std::string out;
  summary_section(d, out);
  iteration_section(d, std::max<std::size_t>(d.largest_at_peak.size(), 10), out);
  gpu_section(d, out);
  chart_section(d, out);
  buffer_section(fmt::format("Largest buffers live at the peak (event {})", group_thousands(d.peak.event)),
                 d.largest_at_peak, out);
  buffer_section("Longest lifetimes (persistent buffers left out; in events)", d.longest_lifetimes, out);
  buffer_section("Leaks (allocated in the loop, never freed)", d.leaks, out);
  return out;
}

}  // namespace memtool::cli
