// A swap schedule: which gaps of which buffers go to host memory, and where in the op sequence
// their copies are issued. The executor (in the process) and the simulator read the same
// struct, so a schedule means the same thing in both:
//   - swap-out: issued when op `out_after_op` has been issued on the compute stream; an event
//     recorded there orders the copy after that op, on the device-to-host engine (FIFO);
//   - the buffer's device bytes are free for others once the copy-out has finished;
//   - optionally, op `out_wait_op` waits for the copy-out (so that the memory is free before it
//     runs: the paper's stick-to-limit synchronisation);
//   - swap-in: issued when op `in_at_op` is issued, ordered after the ops before it (an event
//     recorded just before it) and after the copy-out; its bytes are occupied from its start;
//   - the consumer (the gap's next access, op `gap.to_op`) waits on the swap-in's event.
// Positions are unrolled (see candidates.hpp): from_op <= out_after_op < in_at_op <= to_op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtool/swapper/candidates.hpp"
#include "memtool/swapper/iteration.hpp"

namespace memtool::swapper {

inline constexpr std::uint64_t kNoWait = ~std::uint64_t{0};

struct Swap {
  Gap gap;
  std::uint64_t out_after_op = 0;
  std::uint64_t in_at_op = 0;
  std::uint64_t out_wait_op = kNoWait;  // out_after_op < out_wait_op <= gap.to_op, or kNoWait
  friend bool operator==(const Swap&, const Swap&) = default;
};

struct Schedule {
  std::string strategy;
  std::vector<Swap> swaps;
};

// The swap of `gap` with the widest triggers: out right after the last access, in when the
// next access is issued (a synchronous swap-in: valid, never early).
[[nodiscard]] Swap swap_of(const Gap& gap);

// Empty when every swap is well formed against the iteration: the gap is one of its buffer's
// gaps (find_gaps), the buffer is swappable, the triggers lie in the gap in order, and no two
// swaps use the same gap. Else what is wrong, naming the swap.
[[nodiscard]] std::string validate(const Iteration& iteration, const Schedule& schedule);

}  // namespace memtool::swapper
