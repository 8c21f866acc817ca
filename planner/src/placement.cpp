// The validity checker: a sweep over interval endpoints (frees before allocations at one time,
// as intervals are half-open) keeping the live buffers in an ordered set by offset. A buffer
// that starts living is checked against its two neighbours in address order only: the live set
// is disjoint by induction, so that is enough. O(I log I), never pairwise.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "memtool/planner/placement.hpp"
#include "prepared.hpp"

namespace memtool::planner {

ValidationResult validate(const trace::Problem& problem, const Placement& placement) {
  ValidationResult result;
  const auto& buffers = problem.buffers;
  if (placement.offsets.size() != buffers.size()) {
    result.message = fmt::format("{} offsets for {} buffers", placement.offsets.size(), buffers.size());
    return result;
  }
  struct Endpoint {
    std::uint64_t time;
    bool begins;
    std::uint32_t buffer;
  };
  std::vector<Endpoint> endpoints;
  std::vector<std::uint64_t> sizes(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = buffers[i];
    const std::uint64_t fp = footprint(b);
    const std::uint64_t off = placement.offsets[i];
    sizes[i] = fp;
    if (off % b.alignment != 0) {
      result.message =
          fmt::format("buffer {}: offset {} is not a multiple of its alignment {}", b.id, off, b.alignment);
      return result;
    }
    if (fp == 0) continue;
    if (off > UINT64_MAX - fp) {
      result.message = fmt::format("buffer {}: offset {} + size overflows", b.id, off);
      return result;
    }
    const auto intervals = detail::normalised_intervals(b);
    if (intervals.empty()) continue;
    result.required_pool = std::max(result.required_pool, off + fp);
    for (const auto& iv : intervals) {
      endpoints.push_back({iv.begin, true, static_cast<std::uint32_t>(i)});
      endpoints.push_back({iv.end, false, static_cast<std::uint32_t>(i)});
    }
  }
  if (result.required_pool > placement.pool_size) {
    result.message = fmt::format("pool size {} is smaller than the {} bytes the offsets need", placement.pool_size,
                                 result.required_pool);
    return result;
  }
  std::sort(endpoints.begin(), endpoints.end(), [](const Endpoint& x, const Endpoint& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.begins != y.begins) return !x.begins;  // frees first: [a,b) and [b,c) do not meet
    return x.buffer < y.buffer;
  });
  std::set<std::pair<std::uint64_t, std::uint32_t>> live;  // (offset, buffer)
  for (const auto& e : endpoints) {
    const std::uint64_t off = placement.offsets[e.buffer];
    if (!e.begins) {
      live.erase({off, e.buffer});
      continue;
    }
    const std::uint64_t top = off + sizes[e.buffer];
    auto next = live.lower_bound({off, 0});
    if (next != live.end() && next->first < top) {
      result.message = fmt::format("buffers {} and {} overlap in memory at time {}", buffers[e.buffer].id,
                                   buffers[next->second].id, e.time);
      return result;
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + sizes[prev->second] > off) {
        result.message = fmt::format("buffers {} and {} overlap in memory at time {}", buffers[prev->second].id,
                                     buffers[e.buffer].id, e.time);
        return result;
      }
    }
    live.emplace(off, e.buffer);
  }
  result.valid = true;
  return result;
}

}  // namespace memtool::planner
