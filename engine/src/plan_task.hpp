// Turning an iteration window into a plan the pool can apply: run the planner (or the
// injected plan function), check the placement, and lay the offsets out per entry. Runs on the
// planner thread; touches nothing the pool owns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "memtool/engine/window.hpp"

namespace memtool::engine::detail {

struct PlannedEntry {
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;
  StreamId stream = 0;
  bool pooled = false;
  std::vector<std::uint64_t> offsets;  // one per slot; the first free one is handed out
  std::uint64_t footprint = 0;
};

struct ReadyPlan {
  std::vector<PlannedEntry> entries;  // entries[k]: the k-th allocation of an iteration
  std::uint64_t pool_size = 0;
  std::uint64_t lower_bound = 0;
  std::uint64_t period = 0;  // ticks per iteration of the window it was made from
};

struct PlanOutcome {
  std::optional<ReadyPlan> plan;
  std::string error;  // why there is no plan
};

[[nodiscard]] PlanOutcome make_plan(const IterationWindow& window, const PoolOptions& options);

}  // namespace memtool::engine::detail
