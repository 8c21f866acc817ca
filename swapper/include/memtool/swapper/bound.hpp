// The bound: a peak no schedule can go below without stalling the iteration.
//
// With zero stall every op runs at its base time. A buffer can be absent at time t only inside
// one of its gaps, after a copy-out that started no earlier than the end of the gap's first
// access and took at least latency + size / bandwidth, and before a copy-in of the same length
// that ends by the start of the next access. So at t the device holds at least the live bytes
// minus the bytes of the buffers whose window [end(from) + out time, start(to) - in time] contains
// t. The copy engines tighten it: the buffers out at t whose gaps began after time a were all
// copied out within [a, t], at most d2h_bandwidth * (t - a) bytes, and those whose gaps end
// before time c must all come back within [t, c]. For each t the most bytes that can be out is at
// most the smallest of these capacities plus the bytes they leave unconstrained (bytes are treated
// as divisible, which only loosens the bound). The bound is the maximum over op start times of the
// live bytes minus that. It holds for every schedule the simulator accepts, so no strategy's
// zero-stall peak is below it.
#pragma once

#include <cstdint>

#include "memtool/swapper/iteration.hpp"

namespace memtool::swapper {

struct Bound {
  std::uint64_t peak_bytes = 0;  // no zero-stall schedule's peak is lower
  std::uint32_t op = 0;          // where it is reached
  std::uint64_t live_bytes = 0;  // live there without swapping
  std::uint64_t plain_peak_bytes = 0;
};

[[nodiscard]] Bound bound(const Iteration& iteration, const Link& link);

}  // namespace memtool::swapper
