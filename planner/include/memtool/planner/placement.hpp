// A plan's result (an offset per buffer and the pool size), the lower bound every plan is
// measured against, and the checker that proves a plan valid. Conventions shared by every
// algorithm and baseline in planner/:
//  - A buffer occupies its size rounded up to its alignment (its *footprint*), starting at its
//    offset, which is a multiple of its alignment. Allocators reserve whole aligned blocks too,
//    and it makes LB a true lower bound when alignments differ.
//  - A buffer is live over the union of its half-open intervals; two buffers conflict when any
//    of their intervals intersect; conflicting buffers' footprints must not overlap.
//  - Empty intervals are ignored and a buffer's overlapping or touching intervals are merged.
//  - crosses_iteration buffers: their intervals are their occupancy within one period of the
//    cyclic (steady-state) view — the producer splits a lifetime that wraps into [alloc, T) and
//    [0, free). The checker and LB use the intervals as given; only `smartpool` reserves the
//    paper's doubled region for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtool/trace/problem.hpp"

namespace memtool::planner {

struct Placement {
  std::vector<std::uint64_t> offsets;  // offsets[i] belongs to problem.buffers[i]
  std::uint64_t pool_size = 0;         // bytes the one pool allocation needs
};

// Size rounded up to the alignment. Throws std::invalid_argument for an alignment that is not a
// power of two or a size too large to round.
[[nodiscard]] std::uint64_t footprint(const trace::BufferRequest& buffer);

// LB: the largest sum of footprints live at one time. No placement can use less.
// Throws std::invalid_argument for a malformed problem (see prepare rules in placement.hpp).
[[nodiscard]] std::uint64_t lower_bound(const trace::Problem& problem);

struct ValidationResult {
  bool valid = false;
  std::string message;              // empty when valid; else the first violation found
  std::uint64_t required_pool = 0;  // largest offset + footprint over all buffers
};

// Proves a placement valid: one aligned offset per buffer, pool_size covers every footprint,
// and no two conflicting buffers overlap. A sweep over time with an ordered set of live
// address ranges: O(I log I) for I intervals.
[[nodiscard]] ValidationResult validate(const trace::Problem& problem, const Placement& placement);

}  // namespace memtool::planner
