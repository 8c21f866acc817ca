// make_plan: planner → checked placement → per-entry offsets.
#include "plan_task.hpp"

#include <exception>

#include <fmt/format.h>

#include "memtool/planner/algorithm.hpp"

namespace memtool::engine::detail {

PlanOutcome make_plan(const IterationWindow& window, const PoolOptions& options) {
  PlanOutcome outcome;
  try {
    const trace::Problem& problem = window.problem;
    planner::Placement placement;
    if (options.plan_override) {
      placement = options.plan_override(problem);
    } else {
      const planner::Algorithm* algorithm = planner::find_algorithm(options.algorithm);
      if (algorithm == nullptr) {
        outcome.error = fmt::format("unknown planner algorithm '{}'", options.algorithm);
        return outcome;
      }
      planner::PlanOptions plan_options;
      plan_options.time_limit_seconds = options.plan_time_limit_seconds;
      placement = algorithm->plan(problem, plan_options);
    }
    if (placement.offsets.size() != problem.buffers.size()) {
      outcome.error = "plan has the wrong number of offsets";
      return outcome;
    }
    if (options.validate_plan) {
      const planner::ValidationResult check = planner::validate(problem, placement);
      if (!check.valid) {
        outcome.error = "invalid plan: " + check.message;
        return outcome;
      }
    }
    ReadyPlan plan;
    plan.pool_size = placement.pool_size;
    plan.lower_bound = planner::lower_bound(problem);
    plan.entries.reserve(window.entries.size());
    for (const WindowEntry& e : window.entries) {
      PlannedEntry p{e.size, e.kind, e.stream, e.pooled, {}, 0};
      if (e.pooled) {
        const auto first = static_cast<std::size_t>(e.problem_index);
        for (std::size_t i = first; i < first + e.slots; ++i) p.offsets.push_back(placement.offsets[i]);
        p.footprint = planner::footprint(problem.buffers[first]);
      }
      plan.entries.push_back(p);
    }
    if (plan.pool_size == 0) {
      outcome.error = "plan needs no pool";
      return outcome;
    }
    outcome.plan = std::move(plan);
  } catch (const std::exception& e) {
    outcome.error = fmt::format("planner failed: {}", e.what());
  }
  return outcome;
}

}  // namespace memtool::engine::detail

namespace memtool::engine {

void prepare_planner(const PoolOptions& options) {
  trace::Problem problem;
  problem.name = "memtool warm-up";
  trace::BufferRequest request;
  request.size = 512;
  request.alignment = 512;
  request.intervals.push_back({0, 1});
  problem.buffers.push_back(request);
  problem.time_horizon = 1;
  if (const planner::Algorithm* found = planner::find_algorithm(options.algorithm)) {
    planner::PlanOptions plan_options;
    plan_options.time_limit_seconds = 0.01;
    (void)found->plan(problem, plan_options);
    (void)planner::lower_bound(problem);
  }
}

}  // namespace memtool::engine
