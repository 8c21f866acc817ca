// The pieces of the HTML report: escaping, the page's colours, and the three SVG pictures
// (live bytes over time, the pool plan beside the baselines, the swap schedule). Each picture is
// drawn at fixed pixel sizes so that the page looks the same everywhere, and marks the elements a
// test (or a reader's script) wants to find with data-probe names. Private to trace/export.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/trace/export.hpp"

namespace memtool::trace::detail {

// Colours, named once: the page's legend and the tests' pixel checks use the same values.
inline constexpr std::string_view kLiveColour = "#4e79a7";
inline constexpr std::string_view kMarkColour = "#e15759";
inline constexpr std::string_view kPoolColour = "#59a14f";
inline constexpr std::string_view kPytorchColour = "#f28e2c";
inline constexpr std::string_view kBaselineColour = "#9c755f";
inline constexpr std::string_view kSwapOutColour = "#edc949";
inline constexpr std::string_view kSwapInColour = "#76b7b2";

[[nodiscard]] std::string html_escape(std::string_view text);
// A buffer's colour in the plan picture (stable per buffer id, never one of the colours above).
[[nodiscard]] std::string_view plan_colour(std::uint64_t buffer_id);

// Live bytes after each event of [first, end) (`curve` is live_bytes_curve of the whole trace),
// at most one column per pixel (each column the maximum of its events, so no peak is lost),
// iteration starts as vertical marks, the peak as a dot.
struct LiveChartInput {
  std::span<const std::uint64_t> curve;
  std::uint64_t first = 0;
  std::uint64_t end = 0;
  std::vector<std::uint64_t> iteration_starts;  // absolute event indices inside the window
  std::uint64_t peak_event = 0;
  std::uint64_t peak_bytes = 0;
};
[[nodiscard]] std::string live_chart_svg(const LiveChartInput& input);

// The plan as rectangles in (event, offset), and beside it, on the same byte scale, bars for
// the pool, the lower bound and each baseline's peak reserved bytes.
[[nodiscard]] std::string plan_chart_svg(const PoolPlanView& plan);

// The swap schedule's transfers over the window's events, one row per overlapping transfer.
[[nodiscard]] std::string swap_chart_svg(const SwapScheduleView& swaps, std::uint64_t first, std::uint64_t end);

}  // namespace memtool::trace::detail
