// Normalisation of a Problem into the planner's internal view (see prepared.hpp).
#include "prepared.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "memtool/planner/placement.hpp"

namespace memtool::planner {

namespace {
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 62;
}

std::uint64_t footprint(const trace::BufferRequest& buffer) {
  const std::uint64_t a = buffer.alignment;
  if (a == 0 || (a & (a - 1)) != 0) {
    throw std::invalid_argument(fmt::format("buffer {}: alignment {} is not a power of two", buffer.id, a));
  }
  if (buffer.size > kMaxBytes || a > kMaxBytes) {
    throw std::invalid_argument(fmt::format("buffer {}: size {} or alignment {} over 2^62", buffer.id,
                                            buffer.size, a));
  }
  return detail::align_up(buffer.size, a);
}

namespace detail {

std::vector<trace::LiveInterval> normalised_intervals(const trace::BufferRequest& buffer) {
  std::vector<trace::LiveInterval> in;
  in.reserve(buffer.intervals.size());
  for (const auto& iv : buffer.intervals) {
    if (iv.begin < iv.end) in.push_back(iv);
  }
  std::sort(in.begin(), in.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
  std::vector<trace::LiveInterval> out;
  for (const auto& iv : in) {
    if (!out.empty() && iv.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, iv.end);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

Prepared prepare(const trace::Problem& problem) {
  constexpr std::size_t kMaxCount = std::size_t{1} << 31;
  if (problem.buffers.size() >= kMaxCount) throw std::invalid_argument("too many buffers");
  Prepared p;
  p.items.resize(problem.buffers.size());
  std::vector<trace::LiveInterval> intervals;
  std::vector<std::uint32_t> owner;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const auto& b = problem.buffers[i];
    Item& item = p.items[i];
    item.footprint = footprint(b);
    item.alignment = b.alignment;
    item.crosses_iteration = b.crosses_iteration;
    auto norm = normalised_intervals(b);
    if (norm.empty()) item.footprint = 0;  // never live: occupies nothing
    if (item.footprint == 0) continue;
    p.total_footprint += item.footprint;
    if (p.total_footprint > kMaxBytes) throw std::invalid_argument("sum of buffer sizes over 2^62");
    item.begin = norm.front().begin;
    item.first_span = static_cast<std::uint32_t>(intervals.size());
    item.span_count = static_cast<std::uint32_t>(norm.size());
    for (const auto& iv : norm) {
      item.live_time += iv.end - iv.begin;
      intervals.push_back(iv);
      owner.push_back(static_cast<std::uint32_t>(i));
    }
    if (intervals.size() >= kMaxCount) throw std::invalid_argument("too many intervals");
  }
  p.times.reserve(intervals.size() * 2);
  for (const auto& iv : intervals) {
    p.times.push_back(iv.begin);
    p.times.push_back(iv.end);
  }
  std::sort(p.times.begin(), p.times.end());
  p.times.erase(std::unique(p.times.begin(), p.times.end()), p.times.end());
  p.section_count = p.times.empty() ? 0 : static_cast<std::uint32_t>(p.times.size() - 1);
  auto index_of = [&](std::uint64_t t) {
    return static_cast<std::uint32_t>(std::lower_bound(p.times.begin(), p.times.end(), t) - p.times.begin());
  };
  p.spans.resize(intervals.size());
  std::vector<std::uint64_t> add(p.section_count + 1, 0), sub(p.section_count + 1, 0);
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    Span s{index_of(intervals[k].begin), index_of(intervals[k].end)};
    p.spans[k] = s;
    add[s.first] += p.items[owner[k]].footprint;
    sub[s.end] += p.items[owner[k]].footprint;
  }
  p.load.assign(p.section_count, 0);
  std::uint64_t live = 0;
  for (std::uint32_t k = 0; k < p.section_count; ++k) {
    live = live + add[k] - sub[k];
    p.load[k] = live;
    p.lower_bound = std::max(p.lower_bound, live);
  }
  return p;
}

std::uint64_t prepare_work(const Prepared& p) {
  const std::uint64_t spans = p.spans.size();
  return spans * 20 * static_cast<std::uint64_t>(std::bit_width(spans)) + 40 * p.items.size();
}

}  // namespace detail

std::uint64_t lower_bound(const trace::Problem& problem) { return detail::prepare(problem).lower_bound; }

}  // namespace memtool::planner
