// The planner's one interface: every algorithm takes a Problem and returns a Placement, and all
// of them are reachable by name from one registry (used by `memtool plan`, the conformance
// tests and the benchmarks).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/planner/placement.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::planner {

struct PlanOptions {
  // Search budget for improving algorithms (`best`). It is turned into a fixed amount of work
  // (kWorkUnitsPerSecond in planner/src/search_budget.hpp) so that the result depends only on
  // the input and this number, never on the machine's speed or load. Every step is charged and
  // a run the budget cannot pay for is cut short, so `best` keeps to it at any size above its
  // floor (prepare, one order and a sweep: about 0.13 s at 100 k buffers; planner/README.md).
  double time_limit_seconds = 1.0;
  // The pool size the caller must not exceed (the device memory they have; MiniMalloc's
  // `capacity`), 0 for none. `best` first looks for a plan within it, then for smaller ones;
  // when it finds none the plan it returns is larger. The heuristics ignore it.
  std::uint64_t capacity_bytes = 0;
  // Where a greedy heuristic puts a buffer among the gaps left by placed conflicting buffers:
  // the tightest gap that fits (best fit) or the lowest one (first fit). Only `smartpool`
  // consults it; the named heuristics fix their own rule.
  bool first_fit = false;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual std::string_view description() const = 0;
  // Throws std::invalid_argument for a malformed problem. Never returns an invalid placement.
  [[nodiscard]] virtual Placement plan(const trace::Problem& problem, const PlanOptions& options) const = 0;
};

// Every algorithm, in a fixed order: smartpool first (the paper's baseline), the heuristics,
// then `best`.
[[nodiscard]] std::span<const Algorithm* const> algorithms();
// nullptr when unknown.
[[nodiscard]] const Algorithm* find_algorithm(std::string_view name);
// The default algorithm's name ("best").
[[nodiscard]] std::string_view default_algorithm();

}  // namespace memtool::planner
