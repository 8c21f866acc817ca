// Strategies: what MEMTOOL_STRATEGY names, each a stack of resources (resources.hpp) built
// here. Adding a strategy is its resources' files, one entry in the table in strategy.cpp and
// its options line in libmemtool's options.def; the handlers never change.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "memtool/engine/resources.hpp"

namespace memtool::engine {

struct StrategyInfo {
  std::string_view name;
  std::string_view description;
  bool plans = false;  // needs the observer's iteration windows
};

[[nodiscard]] std::span<const StrategyInfo> strategies();
[[nodiscard]] const StrategyInfo* find_strategy(std::string_view name);

struct StrategyOptions {
  std::string name = "record";
  PoolOptions pool;
  std::uint64_t budget_bytes = 0;  // 0: no budget
  double budget_percent = 0;       // of the device's memory, when budget_bytes is 0
  SwapOptions swap;                // swap: budget_bytes is copied in
};

// The stack for `options.name` over `device`; `feedback` hears what plans learn about the
// iteration (the observer). Throws std::invalid_argument for an unknown name.
[[nodiscard]] std::unique_ptr<Resource> build_strategy(const StrategyOptions& options, Device& device,
                                                       PeriodFeedback* feedback);

}  // namespace memtool::engine
