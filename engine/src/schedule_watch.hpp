// Does the schedule ours' trial kept stay as fast as it was measured? Its copy-ins keep learning
// after the verdict (a late one is issued earlier), and an earlier copy-in needs its room
// earlier: at a tight budget the rule then sends another buffer out for it, and the schedule runs
// slower than in its trial (alexnet at 60%: 2.11 s an iteration in its trial, 2.35 s five
// iterations on, the rule alone 2.19 s). And the same schedule applied again can settle in
// another state than in its trial (alexnet at 50%: 3.01 s in its trial, 3.33 s when taken back).
// So its host time per iteration is watched, the median of the last three against the best of
// its trial's figure and its own fastest since: over `margin` slower, `restore` (its copy-ins go
// back to where they were in its fastest iteration, and learn no more), and if it still is once
// restored, `drop` (the rule alone from now on: the evidence the schedule was kept for no longer
// holds); over `margin` slower than the rule alone, `drop` as well. The first iteration after it
// applies is not counted: it still carries the state the one before left. Host time at iteration
// boundaries, as the trial's. Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace memtool::engine::detail {

class ScheduleWatch {
 public:
  enum class Action { none, restore, drop };
  struct Verdict {
    bool fastest = false;  // the iteration just timed is its fastest since it applied: keep its state
    Action action = Action::none;
    double typical = 0;         // the median it was judged by (0: fewer than three timed)
    double target = 0;          // what it was judged against
    bool against_rule = false;  // the target is the rule alone's time (else its own)
  };

  explicit ScheduleWatch(double margin = 0.03) : margin_(margin) {}

  // A schedule (newly applied) starts being watched; `restored`: in the state its figure was
  // timed in, learning no more (a candidate taken back after its trial), so slower is a drop.
  // `restored_margin`: how much slower than its target the restored state may run before the
  // drop (default: the margin). The rule alone's frozen leads get less: a state that does not
  // bring back its fastest iteration's figure was not what made that iteration fast.
  void start(bool restored = false, double restored_margin = -1) {
    settled_ = false;
    fastest_ns_ = 0;
    count_ = 0;
    restored_ = restored;
    restored_margin_ = restored_margin < 0 ? margin_ : restored_margin;
  }

  // An iteration with the kept schedule took `ns`; `trial_ns` its trial's figure and `rule_ns`
  // the rule alone's (0: not timed).
  Verdict iteration(double ns, double trial_ns, double rule_ns) {
    Verdict v;
    if (ns <= 0) return v;
    if (!settled_) {
      settled_ = true;
      return v;
    }
    if (!restored_ && (fastest_ns_ == 0 || ns < fastest_ns_)) {
      fastest_ns_ = ns;
      v.fastest = true;
    }
    recent_[count_++ % recent_.size()] = ns;
    if (count_ < recent_.size()) return v;
    v.typical = median();
    v.target = trial_ns > 0 && fastest_ns_ > 0 ? std::min(trial_ns, fastest_ns_) : std::max(trial_ns, fastest_ns_);
    if (v.target > 0 && v.typical > (1.0 + (restored_ ? restored_margin_ : margin_)) * v.target) {
      v.action = restored_ ? Action::drop : Action::restore;
      restored_ = true;
      count_ = 0;  // judged afresh from the restored state's own iterations
    } else if (rule_ns > 0 && v.typical > (1.0 + margin_) * rule_ns) {
      v.target = rule_ns;
      v.against_rule = true;
      v.action = Action::drop;
    }
    return v;
  }

  [[nodiscard]] bool restored() const { return restored_; }

 private:
  double median() const {
    std::array<double, 3> sorted = recent_;
    std::sort(sorted.begin(), sorted.end());
    return sorted[1];
  }

  double margin_;
  double restored_margin_ = margin_;
  std::array<double, 3> recent_{};
  std::size_t count_ = 0;
  double fastest_ns_ = 0;
  bool restored_ = false;
  bool settled_ = false;  // the first iteration, the one before's state still about, is past
};

}  // namespace memtool::engine::detail
