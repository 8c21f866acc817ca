// The placement of last resort, for when the budget cannot pay for a greedy run to its end:
// buffers placed in time order by an online best-fit allocator (as a caching allocator would,
// each buffer held over the hull of its intervals) above a base address, so nothing they get
// overlaps what lies below. O(m log m) for m buffers, a few hundred nanoseconds each, whatever
// the number live at once; the pool is the live peak of those buffers plus the allocator's
// fragmentation. `best` uses it to finish a first heuristic the time limit cut short.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "prepared.hpp"

namespace memtool::planner::detail {

// Sets offsets[i] for every item i of `items` with a footprint (all at or above `base`) and
// returns the top of what it placed (`base` when nothing).
std::uint64_t sweep_fill(const Prepared& prepared, std::span<const std::uint32_t> items, std::uint64_t base,
                         std::vector<std::uint64_t>& offsets);

// What sweep_fill costs for `count` items, in work units (search_budget.hpp): an upper estimate,
// so a caller that keeps it in reserve can always afford it.
[[nodiscard]] std::uint64_t sweep_fill_work(std::uint64_t count);

}  // namespace memtool::planner::detail
