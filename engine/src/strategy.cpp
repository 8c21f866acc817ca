// The strategy table (see strategy.hpp).
#include "memtool/engine/strategy.hpp"

#include <array>
#include <stdexcept>

namespace memtool::engine {
namespace {

constexpr std::array<StrategyInfo, 2> kStrategies = {{
    {"record", "observe and record: every allocation goes to the driver", false},
    {"pool", "serve each iteration from a pool planned from an observed one", true},
}};

}  // namespace

std::span<const StrategyInfo> strategies() { return kStrategies; }

const StrategyInfo* find_strategy(std::string_view name) {
  for (const StrategyInfo& s : kStrategies) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::unique_ptr<Resource> build_strategy(const StrategyOptions& options, Device& device, PeriodFeedback* feedback) {
  std::unique_ptr<Resource> stack;
  if (options.name == "record") {
    stack = make_device_resource(device, options.budget_bytes != 0);
  } else if (options.name == "pool") {
    auto pool = make_planned_pool(device, make_device_resource(device), options.pool, feedback);
    stack = make_fail_open(make_statistics(std::move(pool)), make_device_resource(device));
  } else {
    throw std::invalid_argument("unknown strategy '" + options.name + "'");
  }
  if (options.budget_bytes != 0) stack = make_budget_limit(std::move(stack), options.budget_bytes);
  return stack;
}

}  // namespace memtool::engine
