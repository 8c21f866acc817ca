// plan(): the strategy table and what every strategy starts from (plan.hpp, strategies.hpp).
#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "memtool/swapper/plan.hpp"
#include "memtool/trace/name_table.hpp"
#include "strategies.hpp"

namespace memtool::swapper {
namespace {

constexpr std::array<StrategyInfo, 6> kStrategies{{
    {"paper-doa", "AutoSwap: gaps spanning the peak ranked by duration of absence"},
    {"paper-aoa", "AutoSwap: ranked by area of absence (duration minus transfers, times size)"},
    {"paper-wdoa", "AutoSwap: ranked by the load above the budget summed over the absence"},
    {"paper-vote", "AutoSwap: majority vote of the three ranks"},
    {"save-on-cpu", "PyTorch save_on_cpu: every saved activation copied on the compute stream"},
    {"ours", "greedy by over-budget byte-time per link time, each swap checked by the simulator"},
}};

}  // namespace

std::span<const StrategyInfo> strategies() { return kStrategies; }

const StrategyInfo* find_strategy(std::string_view name) { return trace::find_named(strategies(), name); }

namespace detail {

bool spans_peak(const PlanInput& input, const Gap& gap, std::uint64_t* position) {
  const std::uint64_t n = input.iteration.ops.size();
  for (std::uint64_t p = input.peak_op; p < gap.to_op; p += n) {
    if (p > gap.from_op) {
      if (position != nullptr) *position = p;
      return true;
    }
  }
  return false;
}

PlanResult evaluate(const PlanInput& input, Schedule schedule, Simulator& simulator) {
  PlanResult result;
  result.simulation = simulator.run_trusted(input.iteration, schedule, input.link, input.options.simulate);
  result.schedule = std::move(schedule);
  result.budget_met = input.budget_bytes == 0 || result.simulation.peak_bytes <= input.budget_bytes;
  result.simulations = 1;
  return result;
}

}  // namespace detail

PlanResult plan(const Iteration& iteration, const Link& link, std::uint64_t budget_bytes, std::string_view strategy,
                const PlanOptions& options) {
  if (find_strategy(strategy) == nullptr) {
    throw std::invalid_argument("swapper: unknown strategy '" + std::string(strategy) +
                                "' (known: " + trace::names_of(strategies()) + ")");
  }
  if (std::string e = validate(iteration); !e.empty()) throw std::invalid_argument("swapper: " + e);
  if (std::string e = validate(link); !e.empty()) throw std::invalid_argument("swapper: " + e);

  detail::PlanInput input{
      iteration,           link, budget_bytes, options, BaseTimeline(iteration), live_bytes_per_op(iteration), 0,
      find_gaps(iteration)};
  if (!input.load.empty()) {
    input.peak_op =
        static_cast<std::uint32_t>(std::max_element(input.load.begin(), input.load.end()) - input.load.begin());
  }
  PlanResult result;
  if (strategy == "paper-doa")
    result = detail::plan_paper(input, detail::PaperScore::doa);
  else if (strategy == "paper-aoa")
    result = detail::plan_paper(input, detail::PaperScore::aoa);
  else if (strategy == "paper-wdoa")
    result = detail::plan_paper(input, detail::PaperScore::wdoa);
  else if (strategy == "paper-vote")
    result = detail::plan_paper(input, detail::PaperScore::vote);
  else if (strategy == "save-on-cpu")
    result = detail::plan_save_on_cpu(input);
  else
    result = detail::plan_ours(input);
  result.schedule.strategy = std::string(strategy);
  for (PlanResult::Alternative& alt : result.alternatives) alt.schedule.strategy = std::string(strategy);
  if (result.construction.empty()) result.construction = std::string(strategy);
  return result;
}

}  // namespace memtool::swapper
