// The strategy table (see strategy.hpp).
#include "memtool/engine/strategy.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"
#include "memtool/trace/name_table.hpp"
#include "small_cache.hpp"

namespace memtool::engine {
namespace {

constexpr std::array<StrategyInfo, 3> kStrategies = {{
    {"record", "observe and record: every allocation goes to the driver", false},
    {"pool", "serve each iteration from a pool planned from an observed one", true},
    {"swap", "keep the device within a budget: idle buffers to the host, back before use", false},
}};

// Swapping with no MEMTOOL_BUDGET: the device is the limit. What this context's device has free
// as memtool starts in it (the CUDA context's own memory is already taken; the total would
// promise bytes the driver cannot give), less MEMTOOL_SWAP_RESERVE for what neither memtool nor
// the program allocates on it (the driver's local memory for launches, modules, graphs).
std::uint64_t device_budget_for_swap(const StrategyOptions& options, Device& device) {
  std::uint64_t free_bytes = 0;
  std::uint64_t total = 0;
  if (device.memory_info(&free_bytes, &total) != kSuccess) {
    log(LogLevel::warn,
        "memtool swap: without MEMTOOL_BUDGET, and the device's memory unknown: nothing will be swapped");
    return 0;
  }
  const std::uint64_t available = std::min(free_bytes, total);
  const std::uint64_t reserve = options.swap.reserve_bytes;
  if (available <= reserve) {
    log(LogLevel::warn, fmt::format("memtool swap: without MEMTOOL_BUDGET: the device has {} B free, no more than "
                                    "MEMTOOL_SWAP_RESERVE ({} B): nothing will be swapped",
                                    available, reserve));
    return 0;
  }
  log(LogLevel::info, fmt::format("memtool swap: without MEMTOOL_BUDGET the budget is the device: {} B free, less "
                                  "MEMTOOL_SWAP_RESERVE ({} B): {} B",
                                  available, reserve, available - reserve));
  return available - reserve;
}

// MEMTOOL_BUDGET as a percentage: of this device's memory.
std::uint64_t budget_of(const StrategyOptions& options, Device& device) {
  if (options.budget_bytes != 0) return options.budget_bytes;
  if (options.budget_percent <= 0) return options.name == "swap" ? device_budget_for_swap(options, device) : 0;
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
