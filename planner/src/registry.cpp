// The registry of planning algorithms: smartpool (and its first-fit option), the named greedy
// heuristics, and best.
#include <array>
#include <memory>
#include <string>

#include "best.hpp"
#include "greedy.hpp"
#include "heuristics.hpp"
#include "memtool/planner/algorithm.hpp"
#include "prepared.hpp"
#include "smartpool.hpp"

namespace memtool::planner {

namespace {

class SmartPool final : public Algorithm {
 public:
  explicit SmartPool(bool first_fit) : first_fit_(first_fit) {}
  [[nodiscard]] std::string_view name() const override { return first_fit_ ? "smartpool-ff" : "smartpool"; }
  [[nodiscard]] std::string_view description() const override {
    return first_fit_
               ? "SmartPool (Zhang et al. 2019) with its first-fit option"
               : "SmartPool (Zhang et al. 2019): largest first, best-fitting gap, cross-iteration region doubled";
  }
  [[nodiscard]] Placement plan(const trace::Problem& problem, const PlanOptions& options) const override {
    return detail::smartpool_plan(detail::prepare(problem), first_fit_ || options.first_fit);
  }

 private:
  bool first_fit_;
};

class Heuristic final : public Algorithm {
 public:
  explicit Heuristic(const detail::HeuristicSpec& spec) : spec_(spec) {}
  [[nodiscard]] std::string_view name() const override { return spec_.name; }
  [[nodiscard]] std::string_view description() const override { return spec_.description; }
  [[nodiscard]] Placement plan(const trace::Problem& problem, const PlanOptions& /*options*/) const override {
    const auto prepared = detail::prepare(problem);
    detail::GreedyPlacer placer(prepared);
    auto run = placer.place(detail::heuristic_order(prepared, spec_.order), spec_.fit);
    Placement placement;
    placement.offsets = std::move(run.offsets);
    placement.offsets.resize(prepared.items.size(), 0);
    placement.pool_size = run.pool;
    return placement;
  }

 private:
  detail::HeuristicSpec spec_;
};

class Best final : public Algorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "best"; }
  [[nodiscard]] std::string_view description() const override {
    return "best heuristic, then iterated greedy and branch and bound within the time limit, down to LB";
  }
  [[nodiscard]] Placement plan(const trace::Problem& problem, const PlanOptions& options) const override {
    return detail::best_plan(problem, options);
  }
};

struct Registry {
  std::vector<std::unique_ptr<Algorithm>> owned;
  std::vector<const Algorithm*> view;
  Registry() {
    owned.push_back(std::make_unique<SmartPool>(false));
    owned.push_back(std::make_unique<SmartPool>(true));
    for (const auto& spec : detail::heuristic_specs()) owned.push_back(std::make_unique<Heuristic>(spec));
    owned.push_back(std::make_unique<Best>());
    for (const auto& a : owned) view.push_back(a.get());
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

std::span<const Algorithm* const> algorithms() { return registry().view; }

const Algorithm* find_algorithm(std::string_view name) {
  for (const Algorithm* a : registry().view) {
    if (a->name() == name) return a;
  }
  return nullptr;
}

std::string_view default_algorithm() { return "best"; }

}  // namespace memtool::planner
