// What the greedy placer's steps cost, in eighths of a work unit (search_budget.hpp: a unit is
// 2 ns on the development machine), so that a run's work follows its CPU time and a budget
// can stop it on time. Fitted to the thread CPU time of every heuristic on 15 problems (random
// DL-like ones of 10 k to 300 k buffers, multi-interval ones with 750 live at once, the real
// fixtures; the least of five runs each, bench_planner --calibrate prints the comparison):
// 95% of the runs within 0.75–1.35 of their CPU time. What a step costs grows with the
// problem once the index outgrows the caches, hence the size factor.
#pragma once

#include <bit>
#include <cstdint>

namespace memtool::planner::detail::greedy_cost {

inline constexpr std::uint64_t kPlacement = 680;     // per buffer placed: its lookups, the walk's setup
inline constexpr std::uint64_t kSlotRead = 56;       // a slot of the index read by a gather
inline constexpr std::uint64_t kRange = 7;           // a range copied, merged, sorted (per log step) or walked
inline constexpr std::uint64_t kSlotWrite = 14;       // a slot filled at an insert
inline constexpr std::uint64_t kUnionInsert = 14;     // one range into a union: its binary search
inline constexpr std::uint64_t kMoved = 28;          // a union's range moved by an insert
inline constexpr std::uint64_t kBatchRange = 200;    // a range through a batch merge of a start union
inline constexpr std::uint64_t kPerItem = 7;         // per buffer of the problem per run (clear, copy out)
inline constexpr std::uint64_t kEighths = 8;

// The size factor, in fifths: 1 up to 32 k buffers, then +1/5 per doubling.
[[nodiscard]] inline std::uint64_t size_fifths(std::uint64_t items) {
  const auto bits = static_cast<std::uint64_t>(std::bit_width(items));
  return 5 + (bits > 15 ? bits - 15 : 0);
}

// Eighths of work, at a size factor in fifths, to work units.
[[nodiscard]] inline std::uint64_t to_units(std::uint64_t eighths, std::uint64_t fifths) {
  return eighths / kEighths * fifths / 5;
}

}  // namespace memtool::planner::detail::greedy_cost
