// Does a swap schedule earn its place? Host time per iteration under the rule alone (the swap
// policy's own decisions, in iterations neither logged nor beside the planner: the two after the
// plan is made, before it applies) against the schedule's first ones: the
// best of its second and third (the first still carries the rule's state) against the best of
// the rule's last three, with a margin (none by default: the faster of the two stays). Host
// time is what a training loop waits for; it is only read at iteration boundaries. Not
// thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <vector>

namespace memtool::engine::detail {

class ScheduleTrial {
 public:
  enum class Verdict { undecided, keep, reject };

  explicit ScheduleTrial(double margin = 0.0) : margin_(margin) {}

  // An iteration under the rule alone took `ns`.
  void rule_iteration(double ns) {
    if (ns <= 0) return;
    rule_ns_.push_back(ns);
    if (rule_ns_.size() > 3) rule_ns_.erase(rule_ns_.begin());
  }
  // A new schedule starts its trial; forget the rule's iterations too when the program changed.
  void start(bool forget_rule) {
    schedule_ns_.clear();
    verdict_ = Verdict::undecided;
    if (forget_rule) rule_ns_.clear();
  }
  // An iteration with the schedule took `ns`: the verdict once there are three (keep when the
  // rule was never timed).
  Verdict schedule_iteration(double ns) {
    if (verdict_ != Verdict::undecided || ns <= 0) return verdict_;
    schedule_ns_.push_back(ns);
    if (schedule_ns_.size() < 3) return verdict_;
    verdict_ = rule_ns_.empty() || with_schedule() <= (1.0 + margin_) * rule() ? Verdict::keep : Verdict::reject;
    return verdict_;
  }
  [[nodiscard]] Verdict verdict() const { return verdict_; }
  [[nodiscard]] double with_schedule() const {
    return schedule_ns_.size() < 3 ? 0.0 : std::min(schedule_ns_[1], schedule_ns_[2]);
  }
  [[nodiscard]] double rule() const {
    return rule_ns_.empty() ? 0.0 : *std::min_element(rule_ns_.begin(), rule_ns_.end());
  }

 private:
  double margin_;
  std::vector<double> rule_ns_;      // the last iterations under the rule alone
  std::vector<double> schedule_ns_;  // the schedule's first ones
  Verdict verdict_ = Verdict::undecided;
};

}  // namespace memtool::engine::detail
