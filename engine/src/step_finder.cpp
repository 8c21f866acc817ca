// StepFinder: the detector's proposals checked against the live bytes and the recent past
// (see step_finder.hpp).
#include "memtool/engine/step_finder.hpp"

#include <algorithm>
#include <bit>

namespace memtool::engine {
namespace {

constexpr std::uint64_t kAllocationBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kGraphBit = std::uint64_t{1} << 62;
constexpr std::uint64_t kFlags = kAllocationBit | kGraphBit;

std::uint64_t ring_size(const StepFinderOptions& o) {
  const std::uint64_t need = 2 * std::max<std::uint64_t>(o.detector.max_period, 8) + o.coverage_horizon;
  return std::bit_ceil(need);
}

}  // namespace

StepFinder::StepFinder(const StepFinderOptions& options) : options_(options), detector_(options.detector) {
  options_.confirm_periods = std::max<std::uint32_t>(options_.confirm_periods, 2);
  const std::uint64_t size = ring_size(options_);
  mask_ = size - 1;
  tokens_.assign(size, 0);
  lives_.assign(size, 0);
}

std::uint64_t StepFinder::live_at(std::uint64_t tick) const { return lives_[tick & mask_] & ~kFlags; }
std::uint64_t StepFinder::token_at(std::uint64_t tick) const { return tokens_[tick & mask_]; }
bool StepFinder::allocation_at(std::uint64_t tick) const { return (lives_[tick & mask_] & kAllocationBit) != 0; }
bool StepFinder::graph_launch_at(std::uint64_t tick) const { return (lives_[tick & mask_] & kGraphBit) != 0; }

bool StepFinder::push(std::uint64_t token, std::uint64_t live_bytes, bool allocation, bool graph_launch) {
  tokens_[ticks_ & mask_] = token;
  lives_[ticks_ & mask_] = (live_bytes & ~kFlags) | (allocation ? kAllocationBit : 0) | (graph_launch ? kGraphBit : 0);
  ++ticks_;
  detector_.push(token);
  const auto proposal = detector_.period();
  // An accepted step whose repetition broke (an irregular iteration: evaluation, a shape change,
  // noise) no longer says where boundaries fall: withdrawn until it re-forms, with its new phase.
  if (step_ && !step_->from_marks &&
      (!proposal || proposal->period != step_->period || proposal->explained < step_->period)) {
    proven_ = step_->period;  // passed every check once: one clean period brings it back
    broke_at_ = ticks_;       // where a program of other calls may have begun (see regime_start)
    broke_allocations_ = found_allocations_;
    step_.reset();
    next_check_ = 0;
    return true;
  }
  if (!proposal) return false;
  if (proposal->period != last_proposal_) {
    last_proposal_ = proposal->period;
    next_check_ = 0;
  }
  if (ticks_ < next_check_) return false;
  return evaluate();
}

bool StepFinder::mark() {
  ++marks_seen_;
  detector_.mark();
  return evaluate();
}

bool StepFinder::reject(std::uint64_t period) {
  // How far the period had repeated when its plan failed: a loop inside the step never repeats
  // much further, the step itself does (a plan can also fail on a noisy start).
  const auto proposal = detector_.period();
  const std::uint64_t run = proposal && proposal->period == period ? proposal->explained : 0;
  if (proven_ == period) proven_ = 0;
  std::uint64_t& worst = rejected_[period];
  worst = std::max({worst, run, 2 * period});
  if (!step_ || step_->period != period) return false;
  step_.reset();
  next_check_ = 0;
  return true;
}

bool StepFinder::restart() {
  detector_.reset();
  since_ = ticks_;  // what came before the change says nothing about the program now ...
  // ... except the step itself: one that passed every check and then served whole iterations
  // (the pool restarts the finder when such a plan stops matching: an evaluation, a shape
  // change) is recognised when it comes back with its own period and sizes, after one clean
  // period as after a break. A new shape has other sizes; a wrong period is rejected by its
  // plan's misses, which forgets it (reject()).
  if (step_ && !step_->from_marks) proven_ = step_->period;
  last_proposal_ = 0;
  next_check_ = 0;
  marks_seen_ = 0;
  const bool had = step_.has_value();
  step_.reset();
  broke_allocations_.clear();
  return had;
}

std::unordered_set<std::uint64_t> StepFinder::allocation_tokens(std::uint64_t period) const {
  std::unordered_set<std::uint64_t> tokens;
  for (std::uint64_t t = ticks_ - period; t < ticks_; ++t) {
    if (allocation_at(t)) tokens.insert(token_at(t));
  }
  return tokens;
}

bool StepFinder::allocates_as(std::uint64_t period, const std::unordered_set<std::uint64_t>& tokens) const {
  std::uint64_t allocations = 0;
  std::uint64_t shared = 0;
  for (std::uint64_t t = ticks_ - period; t < ticks_; ++t) {
    if (!allocation_at(t)) continue;
    ++allocations;
    shared += tokens.count(token_at(t)) != 0 ? 1 : 0;
  }
  return static_cast<double>(shared) >= options_.min_coverage * static_cast<double>(allocations);
}

std::uint64_t StepFinder::regime_start(std::uint64_t period) const {
  if (broke_at_ <= since_ || broke_allocations_.empty()) return since_;
  // A loop inside the broken step, an evaluation pass over its layers or the step re-forming
  // allocate its sizes (an allocation's token carries its size); a new shape allocates others
  // (its kernels are the same whatever the shape).
  return allocates_as(period, broke_allocations_) ? since_ : broke_at_;
}

bool StepFinder::evaluate() {
  const auto proposal = detector_.period();
  if (!proposal) return false;
  const std::uint64_t p = proposal->period;
  if (proposal->from_marks) {
    if (step_ && step_->from_marks && step_->period == p) return false;
    step_ = Step{p, ticks_, 0, 0, true};
    found_ = step_;
    return true;
  }
  if (step_ && !step_->from_marks && step_->period == p) return false;  // already the step
  // Look again a little later unless it passes now (its run grows, the past slides).
  next_check_ = ticks_ + std::max<std::uint64_t>(p / 4, 64);
  if (const auto it = rejected_.find(p); it != rejected_.end() && proposal->explained < 2 * it->second) return false;
  // A step that was accepted before and only broke for a while needs one clean period again.
  // (The same step: a new shape can have the old one's number of calls, not its sizes.)
  const bool proven = proven_ == p && allocates_as(p, found_allocations_);
  if (proposal->explained < (proven ? p : std::uint64_t{options_.confirm_periods} * p)) return false;
  if (ticks_ - since_ < 2 * p + 1 || p > mask_ / 2) return false;

  // 2. Balance: the live bytes one period apart are the same at (nearly) every point of the
  //    last period — a repeat that keeps or frees memory (a layer's forward or backward pass,
  //    an LSTM time step) shifts them by its net allocation everywhere.
  std::uint64_t peak = 0;
  std::uint64_t low = ~std::uint64_t{0};
  std::uint64_t allocations = 0;
  std::uint64_t graph_launches = 0;
  std::uint64_t balanced = 0;
  for (std::uint64_t t = ticks_ - p; t < ticks_; ++t) {
    peak = std::max(peak, live_at(t));
    low = std::min(low, live_at(t));
    allocations += allocation_at(t) ? 1 : 0;
    graph_launches += graph_launch_at(t) ? 1 : 0;
    balanced += live_at(t) == live_at(t - p) ? 1 : 0;
  }
  if (static_cast<double>(balanced) < options_.min_balanced * static_cast<double>(p)) return false;

  // 3. Coverage of the recent past by the period's tokens.
  std::unordered_set<std::uint64_t> in_period;
  in_period.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(p, 1u << 16)));
  for (std::uint64_t t = ticks_ - p; t < ticks_; ++t) in_period.insert(token_at(t));
  // The recent past is the candidate's regime: since the last restart, or since the last step
  // found broke when the candidate is made of other calls than that step (a new shape).
  const std::uint64_t regime = regime_start(p);
  if (ticks_ - regime < 2 * p) return false;
  // 32 periods back, at least two and at most coverage_horizon tokens (unless two periods are
  // longer): far enough to reach out of a loop inside the step into the passes around it,
  // short enough that a warm-up of other shapes leaves the horizon after some steady steps.
  const std::uint64_t horizon =
      std::min({std::max(std::min(32 * p, options_.coverage_horizon), 2 * p), ticks_ - regime, mask_ + 1});
  std::uint64_t covered = 0;
  for (std::uint64_t t = ticks_ - horizon; t < ticks_; ++t) covered += in_period.count(token_at(t)) != 0 ? 1 : 0;
  if (!proven && static_cast<double>(covered) < options_.min_coverage * static_cast<double>(horizon)) return false;
  // 4. The regime's recent past (coverage_horizon tokens, at most peak_periods periods) never
  //    held more than the period: a balanced loop inside the step (the optimizer over equally
  //    shaped layers) runs below the activations the forward and backward passes held a few of
  //    its periods earlier — in the warm-up step too, where no optimizer state is live yet.
  if (!proven && options_.peak_periods > 0) {
    const std::uint64_t back =
        std::min({std::max(options_.coverage_horizon, 2 * p), options_.peak_periods * p, ticks_ - regime, mask_ + 1});
    const std::uint64_t most = peak + static_cast<std::uint64_t>(static_cast<double>(peak) * options_.peak_margin);
    // Counted where the program made one of the period's own allocations (a size it allocates)
    // with more live: the period ran there inside something bigger. Other sizes at more live
    // bytes are another shape's or an evaluation pass's.
    const std::unordered_set<std::uint64_t> own = allocation_tokens(p);
    for (std::uint64_t t = ticks_ - back; t < ticks_; ++t) {
      if (live_at(t) <= most) continue;
      if (own.empty() || (allocation_at(t) && own.count(token_at(t)) != 0)) return false;
    }
  }

  // Phase: after the last token of the longest run at the period's lowest live bytes.
  std::uint64_t best_end = 0;
  std::uint64_t best_run = 0;
  std::uint64_t run = 0;
  for (std::uint64_t i = 0; i < 2 * p; ++i) {  // twice round, so a run across the window's edge counts
    const std::uint64_t t = ticks_ - p + (i % p);
    if (live_at(t) == low) {
      run = std::min(run + 1, p);
      const bool ends = live_at(ticks_ - p + ((i + 1) % p)) != low;
      if (ends && run >= best_run && i >= p - 1) {
        best_run = run;
        best_end = t;
      }
    } else {
      run = 0;
    }
  }
  if (best_run == 0) best_end = ticks_ - 1;  // flat: any phase
  step_ = Step{p, best_end + 1, allocations, peak, false, graph_launches};
  if (proven && found_ && found_->period == p) {
    // Back after a break: what the step holds is what was measured when it was found (the last
    // period may hold a stray call, or the program's end).
    step_->allocations = found_->allocations;
    step_->peak_bytes = found_->peak_bytes;
    step_->graph_launches = found_->graph_launches;
  } else {
    found_ = step_;
    found_allocations_ = allocation_tokens(p);
  }
  return true;
}

}  // namespace memtool::engine
