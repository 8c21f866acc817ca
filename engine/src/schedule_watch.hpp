// Does the schedule ours' trial kept stay as fast as it was? Its copy-ins keep learning after the
// verdict (a late one is issued earlier), and an earlier copy-in needs its room earlier: at a
// tight budget the rule then sends another buffer out for it, and the schedule runs slower than
// it did in its trial (alexnet at 60%: 2.08 s an iteration when kept, 2.35 s five iterations on,
// the rule alone 2.19 s). So its host time per iteration is watched: the median of the last
// three against the fastest it ran (`restore`: its copy-ins go back to where they were then, and
// it learns no more), then against the rule alone (`drop`: the rule from now on). Host time at
// iteration boundaries, as the trial's. Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace memtool::engine::detail {

class ScheduleWatch {
 public:
  enum class Action { none, restore, drop };
  struct Verdict {
    bool fastest = false;  // the iteration just timed is the fastest yet: keep its copy-ins
    Action action = Action::none;
    double typical = 0;  // the median it was judged by (0: fewer than three timed)
  };

  explicit ScheduleWatch(double margin = 0.03) : margin_(margin) {}

  // A schedule (newly kept) starts being watched.
  void start() {
    fastest_ns_ = 0;
    count_ = 0;
    restored_ = false;
  }

  // An iteration with the kept schedule took `ns`; `rule_ns` the rule alone's (0: not timed).
  Verdict iteration(double ns, double rule_ns) {
    Verdict v;
    if (ns <= 0) return v;
    if (!restored_ && (fastest_ns_ == 0 || ns < fastest_ns_)) {
      fastest_ns_ = ns;
      v.fastest = true;
    }
    recent_[count_++ % recent_.size()] = ns;
    if (count_ < recent_.size()) return v;
    const double typical = median();
    v.typical = typical;
    if (!restored_ && typical > (1.0 + margin_) * fastest_ns_) {
      restored_ = true;
      count_ = 0;  // judged afresh from the restored copy-ins' own iterations
      v.action = Action::restore;
    } else if (rule_ns > 0 && typical > (1.0 + margin_) * rule_ns) {
      v.action = Action::drop;
    }
    return v;
  }

  [[nodiscard]] double fastest() const { return fastest_ns_; }

 private:
  double median() const {
    std::array<double, 3> sorted = recent_;
    std::sort(sorted.begin(), sorted.end());
    return sorted[1];
  }

  double margin_;
  std::array<double, 3> recent_{};
  std::size_t count_ = 0;
  double fastest_ns_ = 0;
  bool restored_ = false;
};

}  // namespace memtool::engine::detail
