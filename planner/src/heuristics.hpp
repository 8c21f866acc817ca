// The orders the greedy heuristics place buffers in, each an O(n log n) sort with a total order
// (ties end on the buffer index, so every run is reproducible):
//  - size: largest footprint first, then longer live time, then earlier start (TFLite/XLA's
//    "greedy by size");
//  - size_by_start: largest first, ties by earlier start (SmartPool's order);
//  - lifetime: longest live time first, then larger;
//  - area: largest footprint × live time first;
//  - breadth: buffers alive at the busiest moments first (the peak live bytes over the buffer's
//    lifetime, descending), then larger — the idea of TFLite's "greedy by breadth";
//  - conflicts: most conflicting buffers first (counted by binary search over sorted endpoints),
//    then larger.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "greedy.hpp"
#include "prepared.hpp"

namespace memtool::planner::detail {

enum class Order { size, size_by_start, lifetime, area, breadth, conflicts };

[[nodiscard]] std::vector<std::uint32_t> heuristic_order(const Prepared& prepared, Order order);
// What heuristic_order costs, in work units (search_budget.hpp).
[[nodiscard]] std::uint64_t heuristic_order_work(const Prepared& prepared, Order order);

struct HeuristicSpec {
  std::string_view name;
  std::string_view description;
  Order order;
  Fit fit;
};

// The named heuristics, in registry order.
[[nodiscard]] const std::vector<HeuristicSpec>& heuristic_specs();

}  // namespace memtool::planner::detail
