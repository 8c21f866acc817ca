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
    throw std::invalid_argument(fmt::format("buffer {}: size {} or alignment {} over 2^62", buffer.id, buffer.size, a));
  }
  return detail::align_up(buffer.size, a);
}

namespace detail {

namespace {

// Normalises `buffer`'s intervals into `out` (emptied first), reusing its memory.
void normalise_into(const trace::BufferRequest& buffer, std::vector<trace::LiveInterval>& out) {
  out.clear();
  if (buffer.intervals.size() == 1) {  // the common case: nothing to sort or merge
    if (buffer.intervals[0].begin < buffer.intervals[0].end) out.push_back(buffer.intervals[0]);
    return;
  }
  for (const auto& iv : buffer.intervals) {
    if (iv.begin < iv.end) out.push_back(iv);
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
  std::size_t kept = 0;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (kept != 0 && out[k].begin <= out[kept - 1].end) {
      out[kept - 1].end = std::max(out[kept - 1].end, out[k].end);
    } else {
      out[kept++] = out[k];
    }
  }
  out.resize(kept);
}

}  // namespace

std::vector<trace::LiveInterval> normalised_intervals(const trace::BufferRequest& buffer) {
  std::vector<trace::LiveInterval> out;
  normalise_into(buffer, out);
  return out;
}

Prepared prepare(const trace::Problem& problem) {
  constexpr std::size_t kMaxCount = std::size_t{1} << 31;
  if (problem.buffers.size() >= kMaxCount) throw std::invalid_argument("too many buffers");
  Prepared p;
  p.items.resize(problem.buffers.size());
  std::vector<trace::LiveInterval> intervals;
  std::vector<std::uint32_t> owner;
  intervals.reserve(problem.buffers.size());
  owner.reserve(problem.buffers.size());
  std::vector<trace::LiveInterval> norm;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const auto& b = problem.buffers[i];
    Item& item = p.items[i];
    item.footprint = footprint(b);
    item.alignment = b.alignment;
    item.crosses_iteration = b.crosses_iteration;
    normalise_into(b, norm);
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
  // Sections: every endpoint sorted once with its place (2k: the begin of interval k, 2k + 1
  // its end), then numbered in one pass — no search per endpoint.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> endpoints;
  endpoints.reserve(intervals.size() * 2);
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    endpoints.emplace_back(intervals[k].begin, static_cast<std::uint32_t>(2 * k));
    endpoints.emplace_back(intervals[k].end, static_cast<std::uint32_t>(2 * k + 1));
  }
  std::sort(endpoints.begin(), endpoints.end());
  p.spans.resize(intervals.size());
  p.times.reserve(endpoints.size());
  for (const auto& [time, place] : endpoints) {
    if (p.times.empty() || p.times.back() != time) p.times.push_back(time);
    const auto section = static_cast<std::uint32_t>(p.times.size() - 1);
    (place % 2 == 0 ? p.spans[place / 2].first : p.spans[place / 2].end) = section;
  }
  p.times.shrink_to_fit();
  p.section_count = p.times.empty() ? 0 : static_cast<std::uint32_t>(p.times.size() - 1);
  std::vector<std::uint64_t> add(p.section_count + 1, 0), sub(p.section_count + 1, 0);
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    add[p.spans[k].first] += p.items[owner[k]].footprint;
    sub[p.spans[k].end] += p.items[owner[k]].footprint;
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
  return spans * 6 * static_cast<std::uint64_t>(std::bit_width(spans)) + 18 * p.items.size();
}

}  // namespace detail

std::uint64_t lower_bound(const trace::Problem& problem) { return detail::prepare(problem).lower_bound; }

}  // namespace memtool::planner
