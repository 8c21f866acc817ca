// export_html: one self-contained HTML page (inline SVG, CSS and a small script; nothing is
// fetched) with what a run did with GPU memory: the summary, live bytes over time with the
// iteration starts, the per-iteration table, the largest buffers at the peak, the pool plan of
// one iteration as an offset-over-time picture beside what PyTorch's caching allocator and the
// other baselines would reserve, and the swap schedule when one is given.
//
// The script shows a tooltip for every element with a data-tip, and writes the page-pixel boxes
// of the elements with a data-probe into <pre id="memtool-layout"> as JSON, so a headless
// browser's DOM dump says where to look in its screenshot (tests/cli/export/check_html.py).
#include <fmt/format.h>

#include <algorithm>

#include "html_parts.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "window_walk.hpp"

namespace memtool::trace {
namespace {

using detail::html_escape;

constexpr std::string_view kStyle = R"(body{font-family:sans-serif;margin:16px;color:#222;width:1100px}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td.l,th.l{text-align:left}.axis{font-size:11px;fill:#444}.note{font-size:12px;color:#555}
#tip{position:fixed;display:none;background:#ffffe0;border:1px solid #888;padding:3px 6px;font-size:12px;pointer-events:none}
)";

constexpr std::string_view kScript = R"(<script>
(function () {
  var tip = document.getElementById('tip');
  document.addEventListener('mousemove', function (e) {
    var t = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!t) { tip.style.display = 'none'; return; }
    tip.textContent = t.getAttribute('data-tip');
    tip.style.left = (e.clientX + 12) + 'px';
    tip.style.top = (e.clientY + 12) + 'px';
    tip.style.display = 'block';
  });
  var boxes = {};
  document.querySelectorAll('[data-probe]').forEach(function (el) {
    var r = el.getBoundingClientRect();
    boxes[el.getAttribute('data-probe')] = {x: r.left + window.scrollX, y: r.top + window.scrollY,
      width: r.width, height: r.height, fill: el.getAttribute('fill')};
  });
  document.getElementById('memtool-layout').textContent = JSON.stringify(boxes);
})();
</script>
)";

// The first frame that is the program's own (not memtool's, the driver's or the runtime's).
std::string allocation_site(detail::FrameTable& frames, StackId stack) {
  const auto& list = frames.frames(stack);
  for (const ExportFrame& f : list) {
    // Symbolised raw frames name their object in the text: "cuMemAlloc_v2+0x12 (libmemtool.so)".
    const auto in = [&](std::string_view object) {
      return f.filename.find(object) != std::string::npos || f.name.find(object) != std::string::npos;
    };
    const bool plumbing = f.name.starts_with("memtool") || f.name.starts_with("cuMem") || in("libmemtool") ||
                          in("libcuda") || in("libcudart");
    if (!plumbing) return f.filename.empty() ? f.name : fmt::format("{} ({}:{})", f.name, f.filename, f.line);
  }
  return list.empty() ? std::string{} : list.front().name;
}

class HtmlReport {
 public:
  HtmlReport(const ExportSource& source, const ExportOptions& options, EventWindow window, ByteSink& out)
      : source_(source),
        model_(source.model),
        iterations_(source.iterations),
        options_(options),
        window_(window),
        out_(out),
        frames_(source.model, options.frames) {}

  void write() {
    curve_ = live_bytes_curve(model_);
    peak_ = peak_live_bytes(curve_, window_.first, window_.end);
    for (std::size_t k = 0; k < iterations_.spans.size(); ++k) {
      const IterationSpan& s = iterations_.spans[k];
      if (s.first_event >= window_.first && s.first_event < window_.end) in_window_.push_back(k);
    }
    out_.write(
        fmt::format("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memtool: "
                    "{}</title><style>{}</style></head><body>\n",
                    html_escape(source_.name), kStyle));
    summary();
    progress(1);
    live_section();
    progress(2);
    iteration_table();
    largest_buffers();
    progress(3);
    plan_section();
    swap_section();
    out_.write("<div id=\"tip\"></div>\n<pre id=\"memtool-layout\" hidden></pre>\n");
    out_.write(kScript);
    out_.write("</body></html>\n");
    progress(4);
  }

 private:
  void progress(std::uint64_t step) {
    if (options_.progress) options_.progress(step, 4);
  }

  void summary() {
    const auto& stats = model_.stats();
    std::string text = fmt::format(
        "<h1>memtool report: {}</h1>\n<p id=\"summary\">Events {} to {} of {}: {} allocations, {} frees, {} launches. ",
        html_escape(source_.name), window_.first, window_.end, model_.event_count(), stats.allocs, stats.frees,
        stats.launches);
    if (iterations_.found()) {
      text += fmt::format("{} iterations ({}), {} events each. ", iterations_.spans.size(),
                          iterations_.source == IterationSource::marks ? "marked by the program" : "detected",
                          iterations_.period_events);
    } else {
      text += "No repeating iteration found. ";
    }
    const auto peak_iteration = iterations_.iteration_of(peak_.event);
    text += fmt::format("Peak live bytes <b id=\"peak-bytes\">{}</b> ({} B) at event {}{}.</p>\n",
                        html_escape(human_bytes(peak_.bytes)), peak_.bytes, peak_.event,
                        peak_iteration ? fmt::format(", iteration {}", *peak_iteration) : "");
    out_.write(text);
  }

  void live_section() {
    detail::LiveChartInput chart;
    chart.curve = curve_;
    chart.first = window_.first;
    chart.end = window_.end;
    for (std::size_t k : in_window_) chart.iteration_starts.push_back(iterations_.spans[k].first_event);
    chart.peak_event = peak_.event;
    chart.peak_bytes = peak_.bytes;
    out_.write(
        "<h2>Live bytes over time</h2>\n<p class=\"note\">Bytes the program asked for and has not freed, after each "
        "event; "
        "red marks: iteration starts; the dot: the peak.</p>\n");
    out_.write(detail::live_chart_svg(chart));
    out_.write("\n");
  }

  void iteration_table() {
    out_.write("<h2>Iterations</h2>\n");
    if (in_window_.empty()) {
      out_.write("<p class=\"note\">No iteration in this window.</p>\n");
      return;
    }
    const auto summaries = summarize_iterations(model_, iterations_, curve_);
    std::string t =
        "<table id=\"iteration-table\"><tr><th>iteration</th><th>first event</th><th>events</th><th>allocations</th>"
        "<th>frees</th><th>peak live</th><th>live at end</th><th class=\"l\">note</th></tr>\n";
    constexpr std::size_t kMaxRows = 500;
    for (std::size_t i = 0; i < in_window_.size() && i < kMaxRows; ++i) {
      const IterationSummary& s = summaries[in_window_[i]];
      const IterationSpan& span = iterations_.spans[s.index];
      const char* note = span.warm_up ? "warm-up" : (span.complete ? "" : "incomplete");
      t += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-bytes=\"{}\">{}</td><td>{}</td><td "
          "class=\"l\">{}</td></tr>\n",
          s.index, s.first_event, span.length(), s.allocs, s.frees, s.peak.bytes,
          html_escape(human_bytes(s.peak.bytes)), html_escape(human_bytes(s.live_at_end)), note);
      out_.write(t);
      t.clear();
    }
    t += "</table>\n";
    if (in_window_.size() > kMaxRows)
      t += fmt::format("<p class=\"note\">{} more iterations not shown.</p>\n", in_window_.size() - kMaxRows);
    out_.write(t);
  }

  void largest_buffers() {
    const auto ids = largest_live_at(model_, peak_.event, options_.rows);
    std::string t = fmt::format(
        "<h2>Largest buffers at the peak (event {})</h2>\n<table id=\"largest-table\"><tr><th>buffer</th><th>size</th>"
        "<th>allocated at</th><th>freed at</th><th>iteration</th><th class=\"l\">stream</th><th class=\"l\">allocated "
        "by</th></tr>\n",
        peak_.event);
    for (BufferId id : ids) {
      const BufferRecord& b = model_.buffer(id);
      const auto iteration = iterations_.iteration_of(b.alloc_event);
      const std::string freed = b.freed() ? std::to_string(b.free_event) : "never";
      const std::string it =
          is_persistent(b, iterations_) ? "persistent" : (iteration ? std::to_string(*iteration) : "-");
      t += fmt::format(
          "<tr><td>{}</td><td data-bytes=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">0x{:x}</td><td "
          "class=\"l\">{}</td></tr>\n",
          id.value(), b.size, html_escape(human_bytes(b.size)), b.alloc_event, freed, it, b.stream.value(),
          html_escape(allocation_site(frames_, b.stack)));
    }
    t += "</table>\n";
    out_.write(t);
  }

  void plan_section() {
    out_.write("<h2>Pool plan</h2>\n");
    const PoolPlanView* plan = options_.plan;
    if (plan == nullptr) {
      out_.write(
          "<p class=\"note\">No pool plan: the input has no iteration to plan, or planning was not asked for.</p>\n");
      return;
    }
    std::string p = fmt::format(
        "<p id=\"plan-summary\">Iteration {} planned by <b>{}</b>: pool <b>{}</b> ({} B) for {} buffers; lower bound "
        "{} ({} B).",
        plan->iteration, html_escape(plan->algorithm), html_escape(human_bytes(plan->pool_bytes)), plan->pool_bytes,
        plan->problem.buffers.size(), html_escape(human_bytes(plan->lower_bound_bytes)), plan->lower_bound_bytes);
    for (const auto& b : plan->baselines) {
      p += fmt::format(" {} would reserve {} ({} B).", html_escape(b.name),
                       html_escape(human_bytes(b.peak_reserved_bytes)), b.peak_reserved_bytes);
    }
    p += "</p>\n<p class=\"note\">Each rectangle is one buffer: left to right its lifetime in the iteration's events, "
         "bottom to top "
         "its place in the pool. The bars on the right use the same byte scale.</p>\n";
    out_.write(p);
    out_.write(detail::plan_chart_svg(*plan));
    out_.write("\n");
  }

  void swap_section() {
    const SwapScheduleView* swaps = options_.swaps;
    if (swaps == nullptr) return;  // no swapper output: nothing to draw
    std::uint64_t out = 0;
    std::uint64_t in = 0;
    for (const SwapTransfer& t : swaps->transfers) (t.to_host ? out : in) += t.bytes;
    out_.write(
        fmt::format("<h2>Swap schedule</h2>\n<p id=\"swap-summary\">{}: budget {}, {} transfers, {} out, {} in "
                    "(yellow: to the host, teal: back).</p>\n",
                    html_escape(swaps->name), html_escape(human_bytes(swaps->budget_bytes)), swaps->transfers.size(),
                    html_escape(human_bytes(out)), html_escape(human_bytes(in))));
    out_.write(detail::swap_chart_svg(*swaps, window_.first, window_.end));
    out_.write("\n");
  }

  const ExportSource& source_;
  const TraceModel& model_;
  const Iterations& iterations_;
  const ExportOptions& options_;
  EventWindow window_;
  ByteSink& out_;
  detail::FrameTable frames_;
  std::vector<std::uint64_t> curve_;
  LiveBytesPeak peak_;
  std::vector<std::size_t> in_window_;  // iterations starting in the window
};

}  // namespace

ExportStats export_html(const ExportSource& source, const ExportOptions& options, ByteSink& out) {
  const EventWindow window = export_window(source, options);
  HtmlReport report(source, options, window, out);
  report.write();
  ExportStats stats;
  stats.first_event = window.first;
  stats.end_event = window.end;
  for (const BufferRecord& b : source.model.buffers()) {
    if (b.alloc_event < window.end && b.free_event > window.first) ++stats.buffers;  // live in the window
  }
  stats.bytes_written = out.bytes_written();
  return stats;
}

}  // namespace memtool::trace
