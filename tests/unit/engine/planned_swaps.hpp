// The swaps the engine's schedule tests plan by hand: one buffer's gap between two accesses,
// with the copy out right after the first and the copy back one item ahead of the second.
#pragma once

#include <cstdint>

#include "memtool/swapper/schedule.hpp"

namespace memtool::engine::test {

// `buffer` (an index into the iteration's buffers) out after its access at item `from_op`, back
// at item `to_op - 1`, ahead of its next access at `to_op` (unrolled: past the iteration's end
// it wraps into the next).
inline swapper::Swap swap_one_ahead(std::uint32_t buffer, std::uint64_t from_op, std::uint64_t to_op) {
  swapper::Swap swap = swapper::swap_of(swapper::Gap{buffer, 0, from_op, to_op});
  swap.in_at_op = to_op - 1;
  return swap;
}

}  // namespace memtool::engine::test
