// export_html_ranks: one self-contained page for a job's ranks — the rank table the CLI wrote
// (its text, as it is) and each rank's live bytes over time, every chart starting at the same
// iteration's first event and spanning the same number of events, so the ranks' steps line up
// one above the other and a rank that differs (an extra buffer, a rank cut short) shows.
#include <fmt/format.h>

#include <algorithm>

#include "html_parts.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "text.hpp"

namespace memtool::trace {
namespace {

using detail::html_escape;

constexpr std::string_view kRankStyle = R"(body{font-family:sans-serif;margin:16px;color:#222;width:1100px}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:20px 0 6px}.axis{font-size:11px;fill:#444}
.note{font-size:12px;color:#555}pre{font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto}
)";

// The chart's first event for a rank: its aligned iteration's start (0 without iterations).
std::uint64_t aligned_first(const RankHtmlInput& rank) {
  const auto& spans = rank.source.iterations.spans;
  return rank.aligned_iteration < spans.size() ? spans[rank.aligned_iteration].first_event : 0;
}

// Ids and probe names made unique per rank (every chart is drawn by the one-run chart code).
std::string per_rank_ids(std::string svg, std::uint32_t rank) {
  const auto replace_all = [&svg](std::string_view from, const std::string& to) {
    for (std::size_t at = svg.find(from); at != std::string::npos; at = svg.find(from, at + to.size())) {
      svg.replace(at, from.size(), to);
    }
  };
  replace_all(R"(id="live-chart")", fmt::format(R"(id="live-chart-rank-{}")", rank));
  replace_all(R"(data-probe=")", fmt::format(R"(data-probe="rank-{}-)", rank));
  return svg;
}

}  // namespace

ExportStats export_html_ranks(std::string_view title, std::string_view overview, std::span<const RankHtmlInput> ranks,
                              ByteSink& out) {
  std::uint64_t span = 1;  // events drawn per chart: the longest rank's, from its aligned start
  for (const RankHtmlInput& rank : ranks) {
    const std::uint64_t events = rank.source.model.event_count();
    span = std::max(span, events - std::min(events, aligned_first(rank)));
  }
  out.write("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
  out.write(html_escape(title));
  out.write("</title><style>");
  out.write(kRankStyle);
  out.write("</style></head><body>\n<h1>");
  out.write(html_escape(title));
  out.write("</h1>\n<h2>Ranks</h2>\n<pre id=\"rank-table\">");
  out.write(html_escape(overview));
  out.write(
      "</pre>\n<h2>Live bytes of each rank, steps aligned</h2>\n<p class=\"note\">Each chart starts at the first event "
      "of the same iteration in every rank and spans the same number of events; red marks: iteration starts; the dot: "
      "the rank's peak. Each chart has its own byte scale.</p>\n");
  ExportStats stats;
  for (const RankHtmlInput& rank : ranks) {
    const TraceModel& model = rank.source.model;
    std::vector<std::uint64_t> curve = live_bytes_curve(model);
    const std::uint64_t first = aligned_first(rank);
    curve.resize(std::max<std::uint64_t>(curve.size(), first + span),
                 0);  // a rank that stopped early: nothing live after
    detail::LiveChartInput chart;
    chart.curve = curve;
    chart.first = first;
    chart.end = first + span;
    for (const IterationSpan& s : rank.source.iterations.spans) {
      if (s.first_event >= chart.first && s.first_event < chart.end) chart.iteration_starts.push_back(s.first_event);
    }
    const LiveBytesPeak peak = peak_live_bytes(curve, chart.first, chart.end);
    chart.peak_event = peak.event;
    chart.peak_bytes = peak.bytes;
    const std::string aligned = rank.source.iterations.spans.empty()
                                    ? std::string("no iteration found: drawn from its first event")
                                    : fmt::format("iteration {} starts at event {}", rank.aligned_iteration, first);
    out.write(fmt::format("<h2 id=\"rank-{}\">Rank {}: {}</h2>\n<p class=\"note\">peak {} at event {}; {}{}</p>\n",
                          rank.rank, rank.rank, html_escape(rank.source.name), html_escape(human_bytes(peak.bytes)),
                          peak.event, aligned, rank.note.empty() ? "" : "; " + html_escape(rank.note)));
    out.write(per_rank_ids(detail::live_chart_svg(chart), rank.rank));
    out.write("\n");
    stats.records += 1;
    stats.end_event = std::max(stats.end_event, chart.end);
  }
  out.write("</body></html>\n");
  stats.bytes_written = out.bytes_written();
  return stats;
}

}  // namespace memtool::trace
