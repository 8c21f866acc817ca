// The strategy table (see strategy.hpp).
#include "memtool/engine/strategy.hpp"

#include <array>
#include <stdexcept>

#include "memtool/trace/name_table.hpp"
#include "small_cache.hpp"

namespace memtool::engine {
namespace {

constexpr std::array<StrategyInfo, 3> kStrategies = {{
    {"record", "observe and record: every allocation goes to the driver", false},
    {"pool", "serve each iteration from a pool planned from an observed one", true},
    {"swap", "keep the device within a budget: idle buffers to the host, back before use", false},
}};

// MEMTOOL_BUDGET as a percentage: of this device's memory.
std::uint64_t budget_of(const StrategyOptions& options, Device& device) {
  if (options.budget_bytes != 0 || options.budget_percent <= 0) return options.budget_bytes;
  std::uint64_t free_bytes = 0;
  std::uint64_t total = 0;
  if (device.memory_info(&free_bytes, &total) != kSuccess) return 0;
  return static_cast<std::uint64_t>(static_cast<double>(total) * options.budget_percent / 100.0);
}

}  // namespace

std::span<const StrategyInfo> strategies() { return kStrategies; }

const StrategyInfo* find_strategy(std::string_view name) { return trace::find_named(strategies(), name); }

std::unique_ptr<Resource> build_strategy(const StrategyOptions& options, Device& device, PeriodFeedback* feedback) {
  std::unique_ptr<Resource> stack;
  const std::uint64_t budget = budget_of(options, device);
  if (options.name == "swap") {
    // The swapper meets the budget by moving memory; it refuses nothing.
    SwapOptions swap = options.swap;
    swap.budget_bytes = budget;
    // What it does not swap: small cuMemAlloc buffers cached, so that their frees wait for the
    // program's streams only, not for the swap copies (small_cache.hpp).
    auto swapper = make_swap(device, detail::make_small_cache(device, swap.min_bytes), swap);
    return make_fail_open(make_statistics(std::move(swapper)), make_device_resource(device));
  }
  if (options.name == "record") {
    stack = make_device_resource(device, budget != 0);
  } else if (options.name == "pool") {
    auto pool = make_planned_pool(device, make_device_resource(device), options.pool, feedback);
    stack = make_fail_open(make_statistics(std::move(pool)), make_device_resource(device));
  } else {
    throw std::invalid_argument("unknown strategy '" + options.name + "'");
  }
  if (budget != 0) stack = make_budget_limit(std::move(stack), budget);
  return stack;
}

}  // namespace memtool::engine
