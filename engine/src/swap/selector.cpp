// The swap policy's choice among a plan's candidates and the rule alone (selector.hpp): one
// transition function, boundary(), over the named states.
#include "swap/selector.hpp"

#include <algorithm>

namespace memtool::engine::detail {

namespace {
constexpr std::uint32_t kLeastWindow = 2;  // one iteration not counted, one that is
}  // namespace

ScheduleSelector::ScheduleSelector(SelectorOptions options) : options_(options) {
  options_.window = std::max(options_.window, kLeastWindow);
  options_.margin = std::max(options_.margin, 0.0);
  recent_.assign(options_.window, 0.0);
}

void ScheduleSelector::begin() {
  if (state_ == State::off) state_ = State::learning;
}

void ScheduleSelector::planned(std::size_t candidates) {
  if (state_ != State::learning) return;
  queue_.clear();
  for (std::size_t id = 0; id < candidates; ++id) queue_.push_back(id);
  current_.reset();
  champion_.reset();
  best_ns_ = 0;  // the candidates of the plan before are forgotten
  baseline_boundaries_ = 0;
  state_ = State::baseline;
}

void ScheduleSelector::failed() {
  if (state_ == State::learning) state_ = State::rule_settled;
}

void ScheduleSelector::drop() {
  if (!applying()) return;
  queue_.clear();
  current_.reset();
  champion_.reset();
  rule_ns_.clear();  // the program changed: the rule's times and every candidate's are old
  best_ns_ = 0;
  state_ = State::learning;
}

bool ScheduleSelector::applying() const {
  return state_ == State::trying || state_ == State::committed || state_ == State::restored ||
         state_ == State::published;
}

double ScheduleSelector::rule_figure() const {
  return rule_ns_.empty() ? 0.0 : *std::min_element(rule_ns_.begin(), rule_ns_.end());
}

ScheduleSelector::Step ScheduleSelector::boundary(double ns) {
  switch (state_) {
    case State::baseline:
      return on_baseline(ns);
    case State::trying:
      return on_trying(ns);
    case State::committed:
    case State::restored:
    case State::rule:
    case State::rule_frozen:
      return on_watched(ns);
    case State::off:
    case State::learning:
    case State::published:
    case State::rule_settled:
      return {};
  }
  return {};
}

// The iteration the plan was finished in ran beside the planner: the rule's next ones (a
// window's worth, the first not counted) are the baseline, then the first candidate applies.
ScheduleSelector::Step ScheduleSelector::on_baseline(double ns) {
  Step step;
  ++baseline_boundaries_;
  if (options_.trial && baseline_boundaries_ > 1 && ns > 0) {
    rule_ns_.push_back(ns);
    if (rule_ns_.size() > options_.window) rule_ns_.erase(rule_ns_.begin());
    if (ns <= rule_figure()) {
      step.keep = Keep::rule;
      rule_fastest_ns_ = ns;
    }
  }
  if (!options_.trial || baseline_boundaries_ > options_.window - 1) return next_candidate(step);
  return step;
}

// A candidate's figure is the best of its window's counted iterations; it is kept when no slower
// than the fastest timed before it (the rule alone, or a candidate kept): a ranking, where the
// margin is the watch's.
ScheduleSelector::Step ScheduleSelector::on_trying(double ns) {
  Step step;
  if (ns <= 0) return step;
  trial_ns_.push_back(ns);
  const std::size_t n = trial_ns_.size();
  if (n >= 2 && (n == 2 || ns < *std::min_element(trial_ns_.begin() + 1, trial_ns_.end() - 1))) {
    step.keep = Keep::candidate;
  }
  if (n < options_.window) return step;
  const double figure = *std::min_element(trial_ns_.begin() + 1, trial_ns_.end());
  const double rule = rule_figure();
  const double bar = rule == 0 ? best_ns_ : (best_ns_ == 0 ? rule : std::min(rule, best_ns_));
  step.verdict = true;
  step.kept = bar == 0 || figure <= bar;
  step.figure = figure;
  step.target = bar;
  step.rule = rule;
  if (step.kept) best_ns_ = figure;
  if (!queue_.empty()) {
    if (step.kept) champion_ = current_;  // the one it beat goes
    return next_candidate(step);
  }
  if (step.kept) {
    // The last one timed is the fastest: it stays, watched from the next iteration (this one
    // is the first after its verdict, and not counted).
    champion_.reset();
    watch_from_start(State::committed);
    settled_ = true;
    return step;
  }
  if (champion_) {
    // Taken back as it was in its fastest iteration, learning no more: learning on from the
    // state the candidates after it left settles it slower.
    current_ = champion_;
    champion_.reset();
    step.action = Action::take_back;
    step.candidate = *current_;
    watch_from_start(State::restored);
    return step;
  }
  step.rejected = true;
  return to_rule(step);
}

// The watch: the median of the last `window` iterations against the best of the candidate's
// trial figure and its own fastest since (the rule alone: its fastest iteration). Slower by the
// margin: back to the fastest iteration's state, learning no more; slower still from there: the
// rule alone (its leads: learning again). A committed candidate's trial figure is never above
// the rule's (it was kept for being no slower), so its target is the stricter of the two.
ScheduleSelector::Step ScheduleSelector::on_watched(double ns) {
  Step step;
  if (ns <= 0) return step;
  if (!settled_) {
    settled_ = true;
    return step;
  }
  const bool candidate = state_ == State::committed || state_ == State::restored;
  const bool frozen = state_ == State::restored || state_ == State::rule_frozen;
  bool fastest = false;
  if (!frozen && (watch_fastest_ns_ == 0 || ns < watch_fastest_ns_)) {
    watch_fastest_ns_ = ns;
    fastest = true;
  }
  const double own = candidate ? best_ns_ : rule_fastest_ns_;
  if (fastest) {
    if (candidate) {
      step.keep = Keep::candidate;
    } else if (ns < rule_fastest_ns_) {
      step.keep = Keep::rule;
      rule_fastest_ns_ = ns;
    }
  }
  recent_[recent_count_++ % recent_.size()] = ns;
  if (recent_count_ < recent_.size()) return step;
  step.figure = median();
  step.target = own > 0 && watch_fastest_ns_ > 0 ? std::min(own, watch_fastest_ns_) : std::max(own, watch_fastest_ns_);
  step.rule = rule_figure();
  const double slower = 1.0 + options_.margin;
  if (step.target > 0 && step.figure > slower * step.target) {
    recent_count_ = 0;  // judged afresh from the restored state's own iterations
    switch (state_) {
      case State::committed:
        state_ = State::restored;
        step.action = Action::restore;
        return step;
      case State::rule:
        state_ = State::rule_frozen;
        step.action = Action::freeze_leads;
        return step;
      case State::restored:
        step.rejected = true;
        return to_rule(step);
      default:  // rule_frozen: nothing left to try; the leads learn again
        state_ = State::rule_settled;
        step.action = Action::free_leads;
        return step;
    }
  }
  return step;
}

ScheduleSelector::Step ScheduleSelector::next_candidate(Step step) {
  if (queue_.empty()) return to_rule(step);
  current_ = queue_.front();
  queue_.pop_front();
  trial_ns_.clear();
  state_ = options_.trial ? State::trying : State::published;
  step.action = Action::apply;
  step.candidate = *current_;
  return step;
}

// The rule alone from now on: watched from its fastest iteration's leads when it was timed.
ScheduleSelector::Step ScheduleSelector::to_rule(Step step) {
  queue_.clear();
  current_.reset();
  champion_.reset();
  step.action = Action::rule_alone;
  if (options_.trial && rule_figure() > 0) {
    watch_from_start(State::rule);
  } else {
    state_ = State::rule_settled;
  }
  return step;
}

void ScheduleSelector::watch_from_start(State state) {
  state_ = state;
  settled_ = false;
  recent_count_ = 0;
  watch_fastest_ns_ = 0;
}

double ScheduleSelector::median() const {
  std::vector<double> sorted = recent_;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

const char* to_string(ScheduleSelector::State state) {
  switch (state) {
    case ScheduleSelector::State::off:
      return "off";
    case ScheduleSelector::State::learning:
      return "learning";
    case ScheduleSelector::State::baseline:
      return "baseline";
    case ScheduleSelector::State::trying:
      return "trying";
    case ScheduleSelector::State::committed:
      return "committed";
    case ScheduleSelector::State::restored:
      return "restored";
    case ScheduleSelector::State::published:
      return "published";
    case ScheduleSelector::State::rule:
      return "rule";
    case ScheduleSelector::State::rule_frozen:
      return "rule_frozen";
    case ScheduleSelector::State::rule_settled:
      return "rule_settled";
  }
  return "?";
}

}  // namespace memtool::engine::detail
