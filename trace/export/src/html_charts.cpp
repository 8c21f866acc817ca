// The HTML report's SVG pictures (see html_parts.hpp). Coordinates are whole pixels and shapes
// render with crispEdges, so a pixel inside a shape has exactly the shape's colour.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "html_parts.hpp"
#include "plan_layout.hpp"
#include "window_walk.hpp"

namespace memtool::trace::detail {
namespace {

constexpr int kLeft = 80;  // room for the byte axis
constexpr int kTop = 10;

// A y axis for [0, max] bytes: five ticks with their sizes, and the scale to pixels.
struct ByteAxis {
  std::uint64_t max = 1;
  int height = 1;
  [[nodiscard]] int y(std::uint64_t bytes) const {
    return kTop + height -
           static_cast<int>(static_cast<double>(std::min(bytes, max)) / static_cast<double>(max) * height);
  }
  [[nodiscard]] std::string ticks(int x0, int x1) const {
    std::string out;
    for (int i = 0; i <= 4; ++i) {
      const std::uint64_t value = max / 4 * static_cast<std::uint64_t>(i);
      const int yy = y(value);
      out += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#dddddd" shape-rendering="crispEdges"/>)", x0,
                         yy, x1, yy);
      out += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" class="axis">{}</text>)", x0 - 6, yy + 4,
                         html_escape(human_bytes(value)));
    }
    return out;
  }
};

std::uint64_t nonzero(std::uint64_t v) { return v == 0 ? 1 : v; }

}  // namespace

std::string html_escape(std::string_view raw) {
  const std::string text = utf8_clean(raw);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string_view plan_colour(std::uint64_t buffer_id) {
  static constexpr std::array<std::string_view, 8> kPalette{"#8cd17d", "#b6992d", "#499894", "#86bcb6",
                                                            "#d37295", "#fabfd2", "#b07aa1", "#d4a6c8"};
  return kPalette[(buffer_id * 0x9e3779b97f4a7c15ULL >> 61) % kPalette.size()];
}

std::string live_chart_svg(const LiveChartInput& in) {
  constexpr int kWidth = 900, kHeight = 260;
  const std::uint64_t events = in.end > in.first ? in.end - in.first : 0;
  const std::uint64_t columns = std::min<std::uint64_t>(kWidth, nonzero(events));
  std::vector<std::uint64_t> column_max(columns, 0);
  for (std::uint64_t e = in.first; e < in.end; ++e) {
    auto& c = column_max[(e - in.first) * columns / events];
    c = std::max(c, in.curve[e]);
  }
  const ByteAxis axis{nonzero(in.peak_bytes), kHeight};
  const auto x_of = [&](std::uint64_t e) {
    return kLeft + static_cast<int>(static_cast<double>(e - in.first) / static_cast<double>(nonzero(events)) * kWidth);
  };
  std::string svg = fmt::format(R"(<svg id="live-chart" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                                kLeft + kWidth + 20, kTop + kHeight + 40);
  svg += axis.ticks(kLeft, kLeft + kWidth);
  // The area: a step per column, closed along the x axis.
  std::string points = fmt::format("{},{}", kLeft, axis.y(0));
  const double column_width = static_cast<double>(kWidth) / static_cast<double>(columns);
  for (std::uint64_t c = 0; c < columns; ++c) {
    const int x0 = kLeft + static_cast<int>(static_cast<double>(c) * column_width);
    const int x1 = kLeft + static_cast<int>(static_cast<double>(c + 1) * column_width);
    const int yy = axis.y(column_max[c]);
    points += fmt::format(" {},{} {},{}", x0, yy, x1, yy);
  }
  points += fmt::format(" {},{}", kLeft + kWidth, axis.y(0));
  svg += fmt::format(R"(<polygon data-probe="live-area" points="{}" fill="{}" shape-rendering="crispEdges"/>)", points,
                     kLiveColour);
  // Iteration starts; at most 400 drawn, evenly chosen, so a long run stays readable.
  const std::size_t stride = std::max<std::size_t>(1, (in.iteration_starts.size() + 399) / 400);
  for (std::size_t k = 0; k < in.iteration_starts.size(); k += stride) {
    const int x = x_of(in.iteration_starts[k]);
    svg += fmt::format(
        R"(<rect data-probe="mark-{}" class="mark" x="{}" y="{}" width="2" height="{}" fill="{}" shape-rendering="crispEdges" data-tip="iteration {} starts at event {}"/>)",
        k, x, kTop, kHeight, kMarkColour, k, in.iteration_starts[k]);
  }
  const int peak_x = x_of(in.peak_event);
  svg +=
      fmt::format(R"(<circle data-probe="peak" cx="{}" cy="{}" r="4" fill="#000000" data-tip="peak {} at event {}"/>)",
                  peak_x, axis.y(in.peak_bytes), html_escape(human_bytes(in.peak_bytes)), in.peak_event);
  svg += fmt::format(
      R"(<text x="{}" y="{}" class="axis">event {}</text><text x="{}" y="{}" text-anchor="end" class="axis">event {}</text>)",
      kLeft, kTop + kHeight + 16, in.first, kLeft + kWidth, kTop + kHeight + 16, in.end);
  svg += "</svg>";
  return svg;
}

std::string plan_chart_svg(const PoolPlanView& plan) {
  constexpr int kWidth = 640, kHeight = 300, kBarsLeft = kLeft + kWidth + 40, kBarWidth = 36, kBarGap = 14;
  struct Bar {
    std::string name;
    std::uint64_t bytes;
    std::string_view colour;
    std::string probe;
  };
  std::vector<Bar> bars{{fmt::format("pool ({})", plan.algorithm), plan.pool_bytes, kPoolColour, "bar-pool"},
                        {"lower bound", plan.lower_bound_bytes, kLiveColour, "bar-lower-bound"}};
  for (const auto& b : plan.baselines) {
    bars.push_back(
        {b.name, b.peak_reserved_bytes, b.name == "pytorch" ? kPytorchColour : kBaselineColour, "bar-" + b.name});
  }
  std::uint64_t top = 1;
  for (const Bar& b : bars) top = std::max(top, b.bytes);
  const ByteAxis axis{top, kHeight};
  const std::uint64_t horizon = nonzero(plan.problem.time_horizon);
  const auto x_of = [&](std::uint64_t t) {
    return kLeft + static_cast<int>(static_cast<double>(t) / static_cast<double>(horizon) * kWidth);
  };
  const int width = kBarsLeft + static_cast<int>(bars.size()) * (kBarWidth + kBarGap) + 20;
  std::string svg = fmt::format(R"(<svg id="plan-chart" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                                width, kTop + kHeight + 110);
  svg += axis.ticks(kLeft, kLeft + kWidth);
  // The largest rectangle gets a probe, so tests know one place that must have its colour.
  const std::vector<PlanRect> rects = plan_rects(plan);
  std::size_t largest = rects.size();
  for (std::size_t r = 0; r < rects.size(); ++r) {
    const auto area = [&](const PlanRect& p) {
      return static_cast<double>(p.end - p.begin) * static_cast<double>(p.footprint);
    };
    if (largest == rects.size() || area(rects[r]) > area(rects[largest])) largest = r;
  }
  for (std::size_t r = 0; r < rects.size(); ++r) {
    const PlanRect& p = rects[r];
    const auto& request = plan.problem.buffers[p.buffer];
    const std::uint64_t id = plan_buffer_trace_id(request.id);
    const int x0 = x_of(p.begin);
    const int x1 = std::max(x0 + 1, x_of(p.end));
    const int y1 = axis.y(p.offset);
    const int y0 = std::min(y1 - 1, axis.y(p.offset + p.footprint));
    svg += fmt::format(
        R"(<rect{} x="{}" y="{}" width="{}" height="{}" fill="{}" shape-rendering="crispEdges" data-tip="buffer {}: {} at offset {}, events {}..{} of the iteration{}"/>)",
        r == largest ? R"( data-probe="plan-largest")" : "", x0, y0, x1 - x0, y1 - y0, plan_colour(id), id,
        html_escape(human_bytes(request.size)), p.offset, p.begin, p.end,
        request.crosses_iteration ? " (crosses the iteration boundary)" : "");
  }
  const int pool_y = axis.y(plan.pool_bytes);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="1" fill="{}" shape-rendering="crispEdges"/>)", kLeft,
                     pool_y, kWidth, kPoolColour);
  svg += fmt::format(
      R"(<text x="{}" y="{}" class="axis">event 0 of iteration {}</text><text x="{}" y="{}" text-anchor="end" class="axis">event {}</text>)",
      kLeft, kTop + kHeight + 16, plan.iteration, kLeft + kWidth, kTop + kHeight + 16, plan.problem.time_horizon);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int x = kBarsLeft + static_cast<int>(i) * (kBarWidth + kBarGap);
    const int y = std::min(axis.y(0) - 1, axis.y(b.bytes));
    svg += fmt::format(
        R"(<rect data-probe="{}" x="{}" y="{}" width="{}" height="{}" fill="{}" shape-rendering="crispEdges" data-tip="{}: {}"/>)",
        b.probe, x, y, kBarWidth, axis.y(0) - y, b.colour, html_escape(b.name), html_escape(human_bytes(b.bytes)));
    svg += fmt::format(R"svg(<text class="axis" transform="translate({},{}) rotate(60)">{} {}</text>)svg", x + 4,
                       axis.y(0) + 12, html_escape(b.name), html_escape(human_bytes(b.bytes)));
  }
  svg += "</svg>";
  return svg;
}

std::string swap_chart_svg(const SwapScheduleView& swaps, std::uint64_t first, std::uint64_t end) {
  constexpr int kWidth = 900, kRow = 14;
  const std::uint64_t events = nonzero(end > first ? end - first : 0);
  const auto x_of = [&](std::uint64_t e) {
    const std::uint64_t clamped = std::clamp(e, first, first + events);
    return kLeft + static_cast<int>(static_cast<double>(clamped - first) / static_cast<double>(events) * kWidth);
  };
  std::vector<std::uint64_t> row_end;  // per row: end event of its last transfer
  std::string rects;
  for (std::size_t i = 0; i < swaps.transfers.size(); ++i) {
    const SwapTransfer& t = swaps.transfers[i];
    if (t.end_event <= first || t.begin_event >= end) continue;
    std::size_t row = 0;
    while (row < row_end.size() && row_end[row] > t.begin_event) ++row;
    if (row == row_end.size()) row_end.push_back(0);
    row_end[row] = t.end_event;
    const int x0 = x_of(t.begin_event);
    rects += fmt::format(
        R"(<rect{} x="{}" y="{}" width="{}" height="{}" fill="{}" shape-rendering="crispEdges" data-tip="swap {} of buffer {} ({}), events {}..{}"/>)",
        i == 0 ? R"( data-probe="swap-first")" : "", x0, kTop + static_cast<int>(row) * kRow,
        std::max(1, x_of(t.end_event) - x0), kRow - 2, t.to_host ? kSwapOutColour : kSwapInColour,
        t.to_host ? "out" : "in", t.buffer.value(), html_escape(human_bytes(t.bytes)), t.begin_event, t.end_event);
  }
  const int height = kTop + static_cast<int>(std::max<std::size_t>(row_end.size(), 1)) * kRow + 10;
  return fmt::format(R"(<svg id="swap-chart" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">{}</svg>)",
                     kLeft + kWidth + 20, height, rects);
}

}  // namespace memtool::trace::detail
