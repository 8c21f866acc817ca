// The swap policy's choice among a plan's candidates and the rule alone (selector.hpp): one
// transition function, boundary(), over the named states.
#include "swap/selector.hpp"

#include <algorithm>
#include <limits>

namespace memtool::engine::detail {

namespace {
constexpr std::uint32_t kLeastWindow = 2;  // one iteration not counted, one that is

// The median (of an even count, the mean of the middle two); 0 for none.
double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t half = values.size() / 2;
  return values.size() % 2 == 1 ? values[half] : (values[half - 1] + values[half]) / 2;
}

// How far apart the iterations a figure comes from are, relative to the fastest: (max - min) /
// min; 0 for none (or untimed).
double spread_of(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  const auto [least, most] = std::minmax_element(values.begin(), values.end());
  return *least > 0 ? (*most - *least) / *least : 0.0;
}
}  // namespace

ScheduleSelector::ScheduleSelector(SelectorOptions options) : options_(options) {
  options_.window = std::max(options_.window, kLeastWindow);
  options_.margin = std::max(options_.margin, 0.0);
  recent_.assign(options_.window, 0.0);
}

void ScheduleSelector::begin() {
  if (state_ == State::off) state_ = State::learning;
}

void ScheduleSelector::planned(std::size_t candidates) { planned(std::vector<StepPrediction>(candidates), {}); }

void ScheduleSelector::planned(std::vector<StepPrediction> candidates, StepPrediction rule) {
  if (state_ != State::learning) return;
  const bool predicted = rule.step_ns > 0 && std::all_of(candidates.begin(), candidates.end(),
                                                         [](const StepPrediction& p) { return p.step_ns > 0; });
  queue_.clear();
  for (std::size_t id = 0; id < candidates.size(); ++id) queue_.push_back(id);
  measured_.assign(candidates.size(), 0.0);
  predicted_ = predicted ? std::move(candidates) : std::vector<StepPrediction>{};
  rule_predicted_ = predicted ? rule : StepPrediction{};
  offset_ns_ = per_rule_swap_ns_ = checked_prediction_ = 0;
  refutations_ = 0;
  challenging_ = false;
  timed_iterations_ = 0;
  current_.reset();
  champion_.reset();
  best_ns_ = best_median_ns_ = best_spread_ = 0;  // the candidates of the plan before are forgotten
  rule_target_ns_ = rule_spread_ = 0;
  rechecked_.reset();
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
  best_ns_ = best_median_ns_ = best_spread_ = 0;
  rule_target_ns_ = rule_spread_ = 0;
  rechecked_.reset();
  predicted_.clear();
  measured_.clear();
  state_ = State::learning;
}

bool ScheduleSelector::applying() const {
  return state_ == State::checking || state_ == State::trying || state_ == State::committed ||
         state_ == State::restored || state_ == State::kept || state_ == State::published;
}

double ScheduleSelector::rule_figure() const {
  return rule_ns_.empty() ? 0.0 : *std::min_element(rule_ns_.begin(), rule_ns_.end());
}

double ScheduleSelector::rule_median() const { return median_of(rule_ns_); }

double ScheduleSelector::trial_median() const {
  return trial_ns_.size() < 2 ? 0.0 : median_of(std::vector<double>(trial_ns_.begin() + 1, trial_ns_.end()));
}

double ScheduleSelector::trial_spread() const {
  return trial_ns_.size() < 2 ? 0.0 : spread_of(std::vector<double>(trial_ns_.begin() + 1, trial_ns_.end()));
}

double ScheduleSelector::calibrated(std::size_t id) const {
  if (id >= predicted_.size() || rule_figure() == 0) return 0.0;
  return predicted_[id].step_ns + offset_ns_ + per_rule_swap_ns_ * predicted_[id].rule_swaps;
}

ScheduleSelector::Step ScheduleSelector::boundary(double ns) {
  if (state_ == State::baseline || state_ == State::checking || state_ == State::trying) ++timed_iterations_;
  switch (state_) {
    case State::baseline:
      return on_baseline(ns);
    case State::checking:
      return on_checking(ns);
    case State::trying:
      return on_trying(ns);
    case State::committed:
    case State::restored:
    case State::rechecking:
    case State::kept:
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
// window's worth, the first not counted) are the baseline, then the model chooses (or the first
// candidate applies).
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
  if (!options_.trial || baseline_boundaries_ > options_.window - 1) return end_of_baseline(step);
  return step;
}

// The baseline calibrates the model: the rule alone's measured figure less its prediction is what
// the simulator misses of the rule's work (its copies out, and the waits for room and the copies
// back on demand they bring), taken as a time per copy out of the rule's: a candidate that
// leaves the rule less to do moves by less. A rule alone predicted to send nothing out: a time
// per step instead, the same in every candidate's. Without predictions (or the rule untimed)
// the candidates are timed in turn; without a trial the first applies as published.
ScheduleSelector::Step ScheduleSelector::end_of_baseline(Step step) {
  rule_target_ns_ = rule_median();
  rule_spread_ = spread_of(rule_ns_);
  if (options_.trial && !predicted_.empty() && rule_figure() > 0) {
    const double residual = rule_figure() - rule_predicted_.step_ns;
    const bool per_swap = rule_predicted_.rule_swaps > 0;
    per_rule_swap_ns_ = per_swap ? residual / rule_predicted_.rule_swaps : 0.0;
    offset_ns_ = per_swap ? 0.0 : residual;
    return choose(step);
  }
  return next_candidate(step);
}

// The model's choice: the least of the calibrated predictions of the candidates not timed yet
// and the figures of those timed (the rule alone's, the fastest candidate's). A candidate not yet
// timed is checked; a timed one is kept (conclude); the rule alone wins ties (it moves nothing).
ScheduleSelector::Step ScheduleSelector::choose(Step step) {
  double best = rule_figure();
  std::optional<std::size_t> pick;
  bool timed = false;
  if (champion_ && best_ns_ < best) {
    best = best_ns_;
    pick = champion_;
    timed = true;
  }
  for (std::size_t id = 0; id < predicted_.size(); ++id) {
    if (measured_[id] != 0) continue;
    const double figure = calibrated(id);
    if (figure < best) {
      best = figure;
      pick = id;
      timed = false;
    }
  }
  step.by_model = true;
  step.choice_ns = best;
  double prediction = best;
  if (!pick && refutations_ == 0) {
    // The rule alone chosen at the first choice: the model's ranking is what is checked, against
    // the candidate it predicts fastest (one window), since no other measurement could refute it.
    for (std::size_t id = 0; id < predicted_.size(); ++id) {
      if (measured_[id] == 0 && (!pick || calibrated(id) < calibrated(*pick))) pick = id;
    }
    if (pick) {
      challenging_ = true;
      step.challenge = true;
      prediction = calibrated(*pick);
    }
  }
  if (!pick) champion_.reset();
  if (!pick || timed) return conclude(step);
  queue_.clear();
  current_ = pick;
  trial_ns_.clear();
  checked_prediction_ = prediction;
  state_ = State::checking;
  step.action = Action::apply;
  step.candidate = *pick;
  return step;
}

// A second measurement (candidate `id` at `measured`) against the rule alone's: what the model
// missed is taken as a time per step plus a time per copy out of the rule's, the two solved from
// the two figures, so the calibrated model meets both. Only a time per copy out of no less than
// nothing explains the two (a candidate that makes as many copies out as the rule, or that
// missed more with fewer, is not explained by them): otherwise the model keeps the baseline's
// calibration and the candidate its own figure.
void ScheduleSelector::recalibrate(std::size_t id, double measured) {
  const double rule_residual = rule_figure() - rule_predicted_.step_ns;
  const double residual = measured - predicted_[id].step_ns;
  const double fewer_swaps = rule_predicted_.rule_swaps - predicted_[id].rule_swaps;
  if (fewer_swaps == 0) return;
  const double per_swap = (rule_residual - residual) / fewer_swaps;
  if (per_swap < 0) return;
  per_rule_swap_ns_ = per_swap;
  offset_ns_ = residual - per_swap * predicted_[id].rule_swaps;
}

double ScheduleSelector::fastest_timed() const {
  const double rule = rule_figure();
  if (rule == 0) return best_ns_;
  return best_ns_ == 0 ? rule : std::min(rule, best_ns_);
}

bool ScheduleSelector::window_figure(double ns, Step& step, double& figure) {
  if (ns <= 0) return false;
  trial_ns_.push_back(ns);
  const std::size_t n = trial_ns_.size();
  if (n >= 2 && (n == 2 || ns < *std::min_element(trial_ns_.begin() + 1, trial_ns_.end() - 1))) {
    step.keep = Keep::candidate;
  }
  if (n < options_.window) return false;
  figure = *std::min_element(trial_ns_.begin() + 1, trial_ns_.end());
  return true;
}

// The model's choice, checked: its figure (the best of its window's counted iterations, as a
// trial's) against its calibrated prediction and the fastest timed so far. Confirmed: committed,
// unless other candidates are predicted within the margin of it: those are timed in turn first.
// Refuted: recalibrated and chosen again, once; refuted again, the rest are timed in turn (in
// the order of their calibrated predictions) as without a model.
ScheduleSelector::Step ScheduleSelector::on_checking(double ns) {
  Step step;
  double figure = 0;
  if (!window_figure(ns, step, figure)) return step;
  const std::size_t id = *current_;
  measured_[id] = figure;
  const double rule = rule_figure();
  const double bar = fastest_timed();
  const bool fastest = figure <= bar;
  step.verdict = step.checked = true;
  step.figure = figure;
  step.target = bar;
  step.rule = rule;
  step.predicted = checked_prediction_;
  step.kept = fastest && figure <= (1.0 + options_.margin) * checked_prediction_;
  if (fastest) {
    best_ns_ = figure;
    best_median_ns_ = trial_median();
    best_spread_ = trial_spread();
    champion_ = current_;
  }
  if (challenging_) {
    // The rival of the rule alone: the model's choice (the rule alone) stands unless the rival
    // runs faster past the noise, as the watch judges (a rival faster by chance would be kept on
    // one window's luck, and learn on from there); then the model is refuted and the rival stays.
    challenging_ = false;
    Step probe;
    const bool overturned = fastest && slower(rule, rule_spread_, figure, trial_spread(), probe);
    step.noise = probe.noise;
    step.kept = overturned;
    step.refuted = overturned;
    if (!overturned) {
      champion_.reset();
      best_ns_ = best_median_ns_ = best_spread_ = 0;
    }
    return conclude(step);
  }
  if (step.kept) {
    // Confirmed; but the candidates the model puts within the margin of it are ones it cannot
    // tell apart (its own error is of that size): they are timed in turn, the fastest kept.
    queue_untimed((1.0 + options_.margin) * checked_prediction_);
    return next_candidate(step);
  }
  step.refuted = true;
  if (++refutations_ == 1) {
    recalibrate(id, figure);
    return choose(step);
  }
  queue_untimed(std::numeric_limits<double>::infinity());
  return next_candidate(step);
}

void ScheduleSelector::queue_untimed(double up_to) {
  std::vector<std::size_t> untimed;
  for (std::size_t c = 0; c < predicted_.size(); ++c) {
    if (measured_[c] == 0 && calibrated(c) <= up_to) untimed.push_back(c);
  }
  std::stable_sort(untimed.begin(), untimed.end(),
                   [this](std::size_t a, std::size_t b) { return calibrated(a) < calibrated(b); });
  queue_.assign(untimed.begin(), untimed.end());
}

// A candidate's figure is the best of its window's counted iterations; it is kept when no slower
// than the fastest timed before it (the rule alone, or a candidate kept): a ranking, where the
// margin is the watch's.
ScheduleSelector::Step ScheduleSelector::on_trying(double ns) {
  Step step;
  double figure = 0;
  if (!window_figure(ns, step, figure)) return step;
  const double rule = rule_figure();
  const double bar = fastest_timed();
  step.verdict = true;
  step.kept = bar == 0 || figure <= bar;
  step.figure = figure;
  step.target = bar;
  step.rule = rule;
  if (*current_ < measured_.size()) measured_[*current_] = figure;
  if (step.kept) {
    best_ns_ = figure;
    best_median_ns_ = trial_median();
    best_spread_ = trial_spread();
    champion_ = current_;  // the one it beat goes
  }
  if (!queue_.empty()) return next_candidate(step);
  return conclude(step);
}

// Nothing left to time: the fastest timed candidate stays (the one applied: watched from the
// next iteration, as this one is the first after its verdict and not counted; another: taken
// back as it was in its fastest iteration, learning no more, since learning on from the state
// the candidates after it left settles it slower), or the rule alone.
ScheduleSelector::Step ScheduleSelector::conclude(Step step) {
  if (champion_ && champion_ == current_) {
    champion_.reset();
    watch_from_start(State::committed);
    settled_ = true;
    return chosen(step);
  }
  if (champion_) {
    current_ = champion_;
    champion_.reset();
    step.action = Action::take_back;
    step.candidate = *current_;
    watch_from_start(State::restored);
    return chosen(step);
  }
  if (current_) step.rejected = true;
  step = to_rule(step);
  return chosen(step);
}

ScheduleSelector::Step& ScheduleSelector::chosen(Step& step) {
  step.chosen = true;
  step.timed_iterations = timed_iterations_;
  return step;
}

// The watch: the median of the last `window` iterations against the figure the choice was made
// with, also a median (a committed candidate's: its check's or trial's counted iterations; the
// rule alone's: its baseline's or its re-check's), like with like; and slower only past the noise
// (slower()). The transitions are selector.hpp's.
ScheduleSelector::Step ScheduleSelector::on_watched(double ns) {
  Step step;
  if (ns <= 0) return step;
  if (!settled_) {
    settled_ = true;
    return step;
  }
  const bool candidate = state_ == State::committed || state_ == State::restored || state_ == State::kept;
  const bool frozen = state_ == State::restored || state_ == State::kept || state_ == State::rule_frozen;
  if (!frozen && (watch_fastest_ns_ == 0 || ns < watch_fastest_ns_)) {
    watch_fastest_ns_ = ns;
    if (candidate) {
      step.keep = Keep::candidate;
    } else if (ns < rule_fastest_ns_) {
      step.keep = Keep::rule;
      rule_fastest_ns_ = ns;
    }
  }
  recent_[recent_count_++ % recent_.size()] = ns;
  if (recent_count_ < recent_.size()) return step;
  step.figure = median_of(recent_);
  return state_ == State::rechecking ? on_recheck(step) : judge_watch(step);
}

// Noise is what the two figures' own iterations show: a margin under it would act on chance
// (a window with one slow iteration), one over it would miss a slowdown as steady as the target.
bool ScheduleSelector::slower(double figure, double spread, double target, double target_spread, Step& step) const {
  step.noise = std::max(spread, target_spread);
  return target > 0 && figure > (1.0 + std::max(options_.margin, step.noise)) * target;
}

// A full window, judged against the watch's target.
ScheduleSelector::Step ScheduleSelector::judge_watch(Step step) {
  step.target = watch_target_ns_;
  step.rule = rule_target_ns_;
  const double spread = spread_of(recent_);
  if (!slower(step.figure, spread, step.target, watch_spread_, step)) return step;
  switch (state_) {
    case State::committed:
      recent_count_ = 0;  // judged afresh from the restored state's own iterations
      state_ = State::restored;
      step.action = Action::restore;
      return step;
    case State::restored: {
      // The rule's baseline slower than this window past the noise: nothing timed is faster.
      Step probe;
      if (rule_target_ns_ > 0 && slower(rule_target_ns_, rule_spread_, step.figure, spread, probe)) return step;
      candidate_window_ = recent_;
      rechecked_ = current_;
      current_.reset();
      state_ = State::rechecking;
      settled_ = false;  // its first iteration carries the candidate's state
      recent_count_ = 0;
      watch_fastest_ns_ = 0;
      step.action = Action::rule_alone;
      return step;
    }
    case State::kept:
      step.rejected = true;
      return to_rule(step);
    case State::rule:
      recent_count_ = 0;
      state_ = State::rule_frozen;
      step.action = Action::freeze_leads;
      return step;
    default:  // rule_frozen: nothing left to try; the leads learn again
      state_ = State::rule_settled;
      step.action = Action::free_leads;
      return step;
  }
}

// The rule alone's fresh window against the candidate's last: the rule faster past the noise,
// it stays, watched against this median; not faster, the candidate is taken back (kept), watched
// against it too. Either way this median is the rule's figure from now on.
ScheduleSelector::Step ScheduleSelector::on_recheck(Step step) {
  const double rule = step.figure;
  const double rule_spread = spread_of(recent_);
  step.rechecked = true;
  step.rule = rule;
  step.figure = median_of(candidate_window_);
  step.target = best_median_ns_;
  const bool rule_faster = slower(step.figure, spread_of(candidate_window_), rule, rule_spread, step);
  rule_target_ns_ = rule;
  rule_spread_ = rule_spread;
  const std::size_t id = *rechecked_;
  rechecked_.reset();
  step.candidate = id;
  if (rule_faster) {
    step.rejected = true;
    state_ = State::rule;
    watch_target_ns_ = rule_target_ns_;
    watch_spread_ = rule_spread_;
    recent_count_ = 0;  // the rule alone goes on as it ran: nothing changes at this boundary
    return step;
  }
  step.kept = true;
  current_ = id;
  step.action = Action::take_back;
  watch_from_start(State::kept);
  return step;
}

ScheduleSelector::Step ScheduleSelector::next_candidate(Step step) {
  if (queue_.empty()) return conclude(step);
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
  if (options_.trial && rule_target_ns_ > 0) {
    watch_from_start(State::rule);
  } else {
    state_ = State::rule_settled;
  }
  return step;
}

void ScheduleSelector::watch_from_start(State state) {
  state_ = state;
  const bool against_rule = state == State::rule || state == State::kept;
  watch_target_ns_ = against_rule ? rule_target_ns_ : best_median_ns_;
  watch_spread_ = against_rule ? rule_spread_ : best_spread_;
  settled_ = false;
  recent_count_ = 0;
  watch_fastest_ns_ = 0;
}

const char* to_string(ScheduleSelector::State state) {
  switch (state) {
    case ScheduleSelector::State::off:
      return "off";
    case ScheduleSelector::State::learning:
      return "learning";
    case ScheduleSelector::State::baseline:
      return "baseline";
    case ScheduleSelector::State::checking:
      return "checking";
    case ScheduleSelector::State::trying:
      return "trying";
    case ScheduleSelector::State::committed:
      return "committed";
    case ScheduleSelector::State::restored:
      return "restored";
    case ScheduleSelector::State::rechecking:
      return "rechecking";
    case ScheduleSelector::State::kept:
      return "kept";
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
