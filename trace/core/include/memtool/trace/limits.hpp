// Bounds every reader and analysis shares, so that no sum of sizes memtool computes can wrap.
#pragma once

#include <cstdint>

namespace memtool::trace {

// The most bytes memtool accounts for: one buffer, the bytes live at one time, and the sum of
// a planning problem's buffers (planner/ works up to it). 2^62 is far beyond any device, and
// a handful of such sums still fit in 64 bits. Inputs that go past it are refused with an
// error naming the event (TraceModel, the importers) or the line (planner CSV).
inline constexpr std::uint64_t kMaxAccountedBytes = std::uint64_t{1} << 62;

}  // namespace memtool::trace
