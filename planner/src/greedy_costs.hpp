// What the greedy placer's steps cost, in eighths of a work unit (search_budget.hpp: a unit is
// 2 ns on the development machine), so that a run's work follows its CPU time and a budget
// can stop it on time. Fitted to the thread CPU time of every heuristic on 15 problems (random
// DL-like ones of 10 k to 300 k buffers, multi-interval ones with 750 live at once, the real
// fixtures; the least of five runs each), then raised a tenth so that iterated greedy on the
// DL-like problems keeps the pace of the exact search's units: most runs within 0.8–1.3 of
// their CPU time (bench_planner --calibrate prints the comparison). What a step costs grows
// with the problem once the index outgrows the caches, hence the size factor.
#pragma once

#include <bit>
#include <cstdint>
#include <iterator>

namespace memtool::planner::detail::greedy_cost {

inline constexpr std::uint64_t kPlacement = 750;   // per buffer placed: its lookups, the walk's setup
inline constexpr std::uint64_t kSlotRead = 62;     // a slot of the index read by a gather
inline constexpr std::uint64_t kRange = 10;        // a range copied, merged, sorted (per log step) or walked
inline constexpr std::uint64_t kScanned = 4;       // a range of best fit's main list read between two others
inline constexpr std::uint64_t kSlotWrite = 15;    // a slot filled at an insert
inline constexpr std::uint64_t kUnionInsert = 15;  // one range into a union: its binary search
inline constexpr std::uint64_t kMoved = 31;        // a union's range moved by an insert
inline constexpr std::uint64_t kBatchRange = 220;  // a range through a batch merge of a start union
inline constexpr std::uint64_t kPerItem = 8;       // per buffer of the problem per run (clear, copy out)
inline constexpr std::uint64_t kEighths = 8;

// The size factor, in tenths, by the problem's size in bits: 1 up to 16 k buffers, then a
// step of 1.4 (the index and the problem outgrow the L2 cache: dl-like 30 k read 1.2-1.3
// times its CPU time at 1.2, when 10 k and 100 k read 1.0), then about a tenth per doubling.
[[nodiscard]] inline std::uint64_t size_tenths(std::uint64_t items) {
  constexpr std::uint64_t kByBits[] = {14, 15, 16, 17, 19, 21};  // 15 to 20 bits
  const auto bits = static_cast<std::uint64_t>(std::bit_width(items));
  if (bits <= 14) return 10;
  return bits - 15 < std::size(kByBits) ? kByBits[bits - 15] : kByBits[std::size(kByBits) - 1] + (bits - 20);
}

// Eighths of work, at a size factor in tenths, to work units.
[[nodiscard]] inline std::uint64_t to_units(std::uint64_t eighths, std::uint64_t tenths) {
  return eighths / kEighths * tenths / 10;
}

}  // namespace memtool::planner::detail::greedy_cost
