// The planner's internal view of a Problem: intervals normalised (sorted, empty ones dropped,
// touching ones merged), sizes turned into footprints, time compressed into *sections* (the
// stretches between consecutive interval endpoints), and LB. Every algorithm starts from it.
#pragma once

#include <cstdint>
#include <vector>

#include "memtool/trace/problem.hpp"

namespace memtool::planner::detail {

// A live interval in section coordinates: sections [first, end).
struct Span {
  std::uint32_t first = 0;
  std::uint32_t end = 0;
};

struct Item {
  std::uint64_t footprint = 0;  // 0: occupies nothing, conflicts with nothing
  std::uint64_t alignment = 1;
  std::uint32_t first_span = 0;  // into Prepared::spans
  std::uint32_t span_count = 0;
  std::uint64_t begin = 0;      // earliest live time
  std::uint64_t live_time = 0;  // total length of its intervals
  bool crosses_iteration = false;
};

struct Prepared {
  std::vector<Item> items;           // same index as problem.buffers
  std::vector<Span> spans;           // of items with a footprint
  std::vector<std::uint64_t> times;  // sorted distinct endpoints; section k = [times[k], times[k+1])
  std::uint32_t section_count = 0;
  std::vector<std::uint64_t> load;  // live footprint bytes per section
  std::uint64_t lower_bound = 0;
  std::uint64_t total_footprint = 0;

  [[nodiscard]] const Span* spans_of(std::uint32_t item) const { return spans.data() + items[item].first_span; }
};

// Throws std::invalid_argument: alignment 0 or not a power of two, a footprint over 2^62, the
// sum of footprints over 2^62 (so no placement arithmetic can overflow), more than 2^31 buffers
// or intervals.
[[nodiscard]] Prepared prepare(const trace::Problem& problem);

// What prepare() cost, in work units (search_budget.hpp): mostly sorting the endpoints and
// finding each one's section.
[[nodiscard]] std::uint64_t prepare_work(const Prepared& prepared);

// Alignment helpers (alignment is a power of two).
[[nodiscard]] inline std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

// Normalised intervals of one buffer (sorted, non-empty, disjoint and not touching).
[[nodiscard]] std::vector<trace::LiveInterval> normalised_intervals(const trace::BufferRequest& buffer);

}  // namespace memtool::planner::detail
