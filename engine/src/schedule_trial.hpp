// Does a swap schedule earn its place? Host time per iteration under the rule alone (the swap
// policy's own decisions, in iterations neither logged nor beside the planner: the two after the
// plan is made, before it applies) against each candidate schedule's first ones: the best of its
// second and third (the first still carries the state the one before left) against the bar, the
// fastest of the rule's last three and of the candidates timed before it, with a margin (none by
// default: the faster stays). Host time is what a training loop waits for; it is only read at
// iteration boundaries. Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace memtool::engine::detail {

class ScheduleTrial {
 public:
  enum class Verdict { undecided, keep, reject };

  explicit ScheduleTrial(double margin = 0.0) : margin_(margin) {}

  // An iteration under the rule alone took `ns`: true when it is the fastest of those its figure
  // is taken from.
  bool rule_iteration(double ns) {
    if (ns <= 0) return false;
    rule_ns_.push_back(ns);
    if (rule_ns_.size() > 3) rule_ns_.erase(rule_ns_.begin());
    return ns <= rule();
  }
  // A candidate starts its trial; with `new_plan` (a plan's first), the candidates of the plan
  // before are forgotten.
  void start(bool new_plan) {
    schedule_ns_.clear();
    verdict_ = Verdict::undecided;
    if (new_plan) best_ns_ = 0;
  }
  // The program changed: the rule's iterations and every candidate's are old.
  void forget() {
    rule_ns_.clear();
    best_ns_ = 0;
  }
  // The candidate applies without a trial (one that won its own before): kept at once.
  void settle() { verdict_ = Verdict::keep; }
  // An iteration with the candidate took `ns`: the verdict once there are three (keep when
  // nothing was timed before it). A kept candidate is the bar for the ones after it.
  Verdict schedule_iteration(double ns) {
    if (verdict_ != Verdict::undecided || ns <= 0) return verdict_;
    schedule_ns_.push_back(ns);
    if (schedule_ns_.size() < 3) return verdict_;
    const double before = bar();
    verdict_ = before == 0 || with_schedule() <= (1.0 + margin_) * before ? Verdict::keep : Verdict::reject;
    if (verdict_ == Verdict::keep) best_ns_ = with_schedule();
    return verdict_;
  }
  [[nodiscard]] Verdict verdict() const { return verdict_; }
  // The iteration just timed counts (the second or third) and is the candidate's fastest so far:
  // the state it ran with is the one its figure stands for.
  [[nodiscard]] bool timed_its_fastest() const {
    const std::size_t n = schedule_ns_.size();
    return n == 2 || (n == 3 && schedule_ns_[2] < schedule_ns_[1]);
  }
  [[nodiscard]] double with_schedule() const {
    return schedule_ns_.size() < 3 ? 0.0 : std::min(schedule_ns_[1], schedule_ns_[2]);
  }
  [[nodiscard]] double rule() const {
    return rule_ns_.empty() ? 0.0 : *std::min_element(rule_ns_.begin(), rule_ns_.end());
  }
  // The fastest candidate kept so far (0: none).
  [[nodiscard]] double best() const { return best_ns_; }
  // What a candidate must beat (0: nothing timed yet).
  [[nodiscard]] double bar() const {
    const double r = rule();
    if (r == 0) return best_ns_;
    return best_ns_ == 0 ? r : std::min(r, best_ns_);
  }

 private:
  double margin_;
  std::vector<double> rule_ns_;      // the last iterations under the rule alone
  std::vector<double> schedule_ns_;  // the candidate's first ones
  double best_ns_ = 0;               // the fastest candidate kept (with_schedule())
  Verdict verdict_ = Verdict::undecided;
};

}  // namespace memtool::engine::detail
