// Our strategy's incremental greedy (ours_context.hpp), with the simulator in the loop.
//
// A target T starts a little below the current peak (never below the budget); the objective is
// E(T), the byte-time above it. Candidates are every gap of every swappable buffer, ranked by the
// part of E(T) their zero-stall window could remove (from the end of a copy-out issued right after
// the last access to the latest start of a copy-in that arrives in time; over each stretch above T
// a swap removes at most its size) per nanosecond of link time, and tried in that order with every
// swap-in re-timed. A swap is kept when the simulation shows E(T) smaller, the peak not higher and
// no new stall. When no such swap is left and stall is allowed (stick-to-limit), a few of the best
// candidates are also tried with their copy-out waited for where their gap first goes over T and
// their swap-in held back until after its last over-T stretch, and the one removing the most
// byte-time per nanosecond of added stall is kept. Once E(T) is 0, T moves down again.
#include <algorithm>
#include <cmath>
#include <string>

#include "ours_context.hpp"

namespace memtool::swapper::detail {
namespace {

constexpr double kTargetStep = 0.95;      // each target 5% below the peak reached
constexpr std::size_t kPassLength = 64;   // candidates tried before ranking again
constexpr std::size_t kRejectRun = 32;    // consecutive rejections that end a pass
constexpr std::size_t kStallTrials = 12;  // candidates tried with stall per round

class Greedy {
 public:
  Greedy(OursContext& context, State& state, std::uint32_t limit)
      : c_(context), state_(state), used_(context.candidates.size(), false), limit_(limit) {
    for (const Planned& p : state.planned) used_[p.candidate] = true;
  }

  void run() {
    const std::uint64_t budget = c_.input.budget_bytes;
    while (c_.n > 0 && !spent()) {
      const std::uint64_t peak = state_.simulation.peak_bytes;
      if (budget != 0 && peak <= budget) return;
      std::uint64_t target = std::max(budget, static_cast<std::uint64_t>(static_cast<double>(peak) * kTargetStep));
      if (target >= peak) target = peak == 0 ? 0 : peak - 1;
      c_.rescore(state_, target);
      reach_target();
      // Out of reach (a peak while ops wait for copies has no op time, hence no E: also out of reach).
      if (state_.excess > 0 || state_.simulation.peak_bytes > target) return;
    }
  }

 private:
  [[nodiscard]] bool spent() const { return c_.out_of_simulations() || c_.simulations() >= limit_; }

  [[nodiscard]] bool improves(const State& trial, bool zero_stall_only) const {
    const Simulation& now = state_.simulation;
    if (trial.excess >= state_.excess || trial.simulation.peak_bytes > now.peak_bytes) return false;
    if (!c_.within_allowance(trial)) return false;
    return !zero_stall_only || trial.simulation.stall_ns <= now.stall_ns + c_.tolerance_ns;
  }

  void try_with(const Planned& extra) {
    trial_.planned = state_.planned;
    trial_.planned.push_back(extra);
    c_.evaluate(trial_, state_, state_.target);
  }

  void rank_candidates(std::vector<std::uint32_t>& order, bool with_stall) {
    order.clear();
    rank_.resize(c_.candidates.size());
    for (std::uint32_t k = 0; k < c_.candidates.size(); ++k) {
      if (used_[k]) continue;
      const Candidate& c = c_.candidates[k];
      const double from = c_.end(state_, c.gap.from_op) + c.out_ns;
      const double to = c_.start(state_, c.gap.to_op) - (with_stall ? 0.0 : c.in_ns);
      const double gain = c_.removable(state_, c.size, from, to);
      if (gain <= 0) continue;
      rank_[k] = gain / (c.out_ns + c.in_ns);
      order.push_back(k);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return rank_[a] > rank_[b]; });
  }

  // Zero-stall passes until one keeps nothing; then, with stall allowed, one stall swap and again.
  void reach_target() {
    std::vector<std::uint32_t> order;
    while (state_.excess > 0 && !spent()) {
      bool kept = false;
      rank_candidates(order, false);
      std::size_t rejected = 0;
      for (std::size_t i = 0; i < order.size() && i < kPassLength && state_.excess > 0; ++i) {
        if (spent()) return;
        try_with(c_.plain(order[i]));
        if (improves(trial_, true)) {
          std::swap(state_, trial_);
          used_[order[i]] = true;
          kept = true;
          rejected = 0;
        } else if (++rejected >= kRejectRun) {
          break;
        }
      }
      if (kept) continue;
      if (c_.allowance_ns <= state_.simulation.stall_ns + c_.tolerance_ns || !keep_one_stall_swap(order)) return;
    }
  }

  bool keep_one_stall_swap(std::vector<std::uint32_t>& order) {
    rank_candidates(order, true);
    double best_value = 0;
    std::vector<Planned> best;
    std::uint32_t best_candidate = 0;
    for (std::size_t i = 0; i < order.size() && i < kStallTrials; ++i) {
      const Candidate& c = c_.candidates[order[i]];
      const double last_over =
          c_.over_inside(state_, c_.end(state_, c.gap.from_op), c_.start(state_, c.gap.to_op)).second;
      if (std::isnan(last_over)) continue;
      const std::uint64_t lo = c.gap.from_op + 1;
      Planned waited = c_.plain(order[i]);
      Planned late_in = waited;
      late_in.earliest_in = std::clamp(c_.op_at(state_, last_over, lo, c.gap.to_op) + 1, lo, c.gap.to_op);
      for (const Planned* variant : {&waited, &late_in}) {
        if (spent()) break;
        try_with(*variant);
        c_.add_waits(trial_);
        if (!improves(trial_, false)) continue;
        const double stall = std::max(1.0, trial_.simulation.stall_ns - state_.simulation.stall_ns);
        const double value = (state_.excess - trial_.excess) / stall;
        if (value > best_value) {
          best_value = value;
          best = trial_.planned;
          best_candidate = order[i];
        }
      }
    }
    if (best.empty()) return false;
    state_.planned = std::move(best);
    c_.simulate(state_, state_.target);
    used_[best_candidate] = true;
    return true;
  }

  OursContext& c_;
  State& state_;
  State trial_;
  std::vector<bool> used_;
  std::vector<double> rank_;
  std::uint32_t limit_;
};

}  // namespace

void greedy_improve(OursContext& context, State& state, std::uint32_t simulation_limit) {
  const std::string construction = state.construction;  // trial states swapped in carry none
  Greedy(context, state, simulation_limit).run();
  state.construction = construction;
}

}  // namespace memtool::swapper::detail
