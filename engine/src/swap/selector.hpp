// Which schedule applies: the swap policy's choice among the candidates a plan gives (ours' own
// schedule and its runners-up, the paper's for the budget) and the rule alone, from host time per
// iteration at iteration boundaries. One state machine (State, one transition per boundary in
// boundary()): learning until a plan is ready; the rule alone timed as the baseline; then, when
// the plan came with the simulator's predictions (planned(predictions)), the choice is the
// model's: the baseline calibrates it (the measured rule alone against its prediction: what the
// model misses of the rule's own work, its copies out and the waits for room and copies back on
// demand they bring, so a time per copy out of the rule's, which moves each candidate's step by
// as many as the rule still makes under it), and the candidate with the best calibrated
// prediction (or the rule alone, when none is
// predicted faster, the one predicted fastest is checked against it, once, and kept only if it
// runs faster than the rule's baseline past the noise, as the watch judges) applies at once,
// checked for one window against that prediction. Confirmed,
// it is committed, unless other candidates are predicted within the margin of it (the model
// cannot rank them: its error is of that size), which are then timed in turn against it, the
// fastest kept; slower than predicted by the margin, or slower than the rule alone, the model
// is refuted for it: recalibrated with that second measurement (a time per step and per copy
// out of the rule's that meet both) and the choice made again, once; refuted twice, the remaining
// candidates are timed in turn as without predictions (each tried against the fastest so far,
// the fastest kept).
// The watch, after the choice: a window's median against the median the choice was made with
// (like with like: a median of noisy iterations sits above their fastest by noise alone), and
// "slower" only past the noise: by more than the margin and than the spread ((max - min) / min)
// of the iterations either figure comes from, the larger (a window with one slow iteration says
// little; one slow throughout, by more than its spread, does). The states and transitions:
//  - committed (learning): slower -> restored (Action::restore: copy-ins and the rule's leads
//    put back to its fastest iteration's, learning no more).
//  - restored: slower than the median it was chosen with (so also when the restore made it
//    slower than the window that called for it, which was over that median already), the rule's
//    baseline not slower than the window past the noise -> rechecking (Action::rule_alone);
//    the rule's baseline slower past the noise: it stays (nothing timed is faster).
//  - rechecking: the rule alone for one window, judged against the candidate's last window,
//    both fresh: the rule faster past the noise -> rule, watched against this median
//    (`rejected`); not faster -> kept (Action::take_back: the candidate as in its fastest
//    iteration).
//  - kept: the candidate after a re-check, learning no more, watched against the rule's
//    re-check median: slower past the noise -> rule (Action::rule_alone, `rejected`), watched
//    against that median. A choice is re-checked once a plan: neither kept nor the rule's states
//    re-check, so after the choice the schedule goes and comes back at most once.
//  - rule (its leads learning): slower than its target (its baseline's median, or the
//    re-check's) -> rule_frozen (Action::freeze_leads: back to its fastest iteration's);
//    rule_frozen slower -> rule_settled (Action::free_leads), nothing left to try.
// One margin and one window for every comparison (MEMTOOL_SWAP_MARGIN, MEMTOOL_SWAP_WINDOW): a
// figure is taken from a window of iterations whose first is not counted (it still carries the
// state the one before left); no other constant.
// Candidates are ids (0..n-1, the plan's order): the selector says which to apply, the adaptor
// holds them. Knows nothing of buffers or devices; docs/swapping.md tells the story. Not
// thread-safe: the swap policy's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace memtool::engine::detail {

struct SelectorOptions {
  double margin = 0.03;      // how much slower than its target a figure may be before it counts as slower
  std::uint32_t window = 3;  // iterations a figure is taken from (the first not counted); at least 2
  bool trial = true;         // candidates are timed (ours); off: the first applies as published, unwatched
};

// The simulator's step for a candidate (or the rule alone) as the executor runs it, and what
// calibrating it needs: the copies out its rule makes a step (swapper::Simulation::rule_swaps),
// where the process loses time the model does not see. step_ns 0: no prediction.
struct StepPrediction {
  double step_ns = 0;
  double rule_swaps = 0;
  double copies = 0;  // every copy it issues a step, both ways (said in the log, not calibrated)
};

class ScheduleSelector {
 public:
  enum class State : std::uint8_t {
    off,           // no plan is sought (no budget, or the rule alone by choice)
    learning,      // iterations are learned until a plan is ready
    baseline,      // a plan is ready: the rule alone is timed before its candidates
    checking,      // the model's choice applies, timed against its calibrated prediction
    trying,        // a candidate is on trial (timed in turn: no predictions, the model refuted twice,
                   // or predicted within the margin of the model's confirmed choice)
    committed,     // the fastest candidate applies, watched; its copy-ins and the rule's leads learn
    restored,      // it applies as it was in its fastest iteration, learning no more, watched;
                   // slower, the rule alone is re-checked beside it
    rechecking,    // the rule alone for one window, against the restored candidate's last window
    kept,          // the candidate taken back after the rule re-checked was not faster, watched
                   // against the rule's re-check; slower, the rule alone for good
    published,     // a baseline's schedule applies as published: no trial, no watch
    rule,          // the rule alone, watched; its leads learn
    rule_frozen,   // the rule alone with its leads as they were in its fastest iteration, watched
    rule_settled,  // the rule alone, nothing left to try
  };
  enum class Action : std::uint8_t {
    none,
    apply,         // apply `candidate` from its plan's state (a trial, or published)
    take_back,     // apply `candidate` again as it was in its fastest iteration, learning no more
    restore,       // the applied candidate's copy-ins and the rule's leads go back to its fastest iteration's
    rule_alone,    // the schedule goes (if any): the rule alone from its leads in its fastest iteration
                   // (for good, or for a re-check: state() says which)
    freeze_leads,  // the rule's leads go back to its fastest iteration's and learn no more
    free_leads,    // the rule's leads learn again
  };
  // What the iteration just timed ran with is the fastest of its figure: the adaptor keeps it.
  enum class Keep : std::uint8_t { nothing, rule, candidate };
  struct Step {
    Action action = Action::none;
    std::size_t candidate = 0;  // apply, take_back: which; a re-check's verdict: the one re-checked
    Keep keep = Keep::nothing;
    // A trial's (or a check's) verdict reached at this boundary (for the log and the counters).
    bool verdict = false;
    bool kept = false;      // the candidate was the fastest so far (a check: confirmed)
    bool rejected = false;  // a schedule gave way to the rule alone (trial, watch or re-check)
    double figure = 0;      // the figure judged: a trial's best, a watch's median (a re-check's: the candidate's)
    double target = 0;      // what it was judged against (a watch's: the median it was chosen with)
    double rule = 0;        // the rule alone's figure, a watch's: the median it is held to (0: not timed)
    // A watch's or re-check's noise: the larger spread of the two figures' iterations; "slower"
    // is past max(margin, noise).
    double noise = 0;
    // The rule alone re-checked beside the candidate (rechecking's verdict): `kept`, the
    // candidate taken back; else the rule alone from now on.
    bool rechecked = false;
    // The model: a check's verdict (checked), and the calibrated prediction it was held to.
    bool checked = false;
    bool refuted = false;  // slower than predicted by the margin, or than the rule alone
    double predicted = 0;
    // The model chose at this boundary (apply: `candidate` to check; take_back, none: a timed
    // candidate kept; rule_alone: the rule alone), the choice's calibrated figure (a timed one's:
    // its own).
    bool by_model = false;
    double choice_ns = 0;
    // The model chose the rule alone, and `candidate`, the one it predicts fastest, is checked
    // against it (apply): the rule alone stays unless it runs faster.
    bool challenge = false;
    // The choice is made (committed, taken back, or the rule alone): the iterations timed since
    // the plan was ready (baseline, checks, trials).
    bool chosen = false;
    std::uint32_t timed_iterations = 0;
  };

  explicit ScheduleSelector(SelectorOptions options);

  // The budget calls for a plan: learning (from off).
  void begin();
  // The learner has a plan of `candidates` schedules with swaps, to try in id order (learning ->
  // baseline). No candidate: the rule alone once the baseline is timed.
  void planned(std::size_t candidates);
  // The same with the simulator's step for each candidate and for the rule alone: chosen by the
  // model once the baseline calibrates it. A missing prediction (step_ns 0): timed in turn.
  void planned(std::vector<StepPrediction> candidates, StepPrediction rule);
  // No plan could be made: the rule alone (learning -> rule_settled).
  void failed();
  // The program changed under the applied schedule: learning again, the rule's times forgotten.
  void drop();

  // An iteration ended that took `ns` of host time (0: not timed): the one transition function.
  Step boundary(double ns);

  [[nodiscard]] State state() const { return state_; }
  // A candidate applies (checking, trying, committed, restored, kept, published).
  [[nodiscard]] bool applying() const;
  [[nodiscard]] std::optional<std::size_t> applied() const { return current_; }
  // The rule's leads learn (not frozen by a watch).
  [[nodiscard]] bool leads_learn() const {
    return state_ != State::restored && state_ != State::kept && state_ != State::rule_frozen;
  }
  [[nodiscard]] double rule_figure() const;
  [[nodiscard]] const SelectorOptions& options() const { return options_; }
  // The model's calibrated step for candidate `id` (0: no model, or not calibrated yet), and its
  // calibration: the time a step the model does not see, and per copy out of the rule's.
  [[nodiscard]] double calibrated(std::size_t id) const;
  [[nodiscard]] double unexplained_ns() const { return offset_ns_; }
  [[nodiscard]] double per_rule_swap_ns() const { return per_rule_swap_ns_; }

 private:
  Step on_baseline(double ns);
  Step on_checking(double ns);
  Step on_trying(double ns);
  Step on_watched(double ns);
  Step judge_watch(Step step);
  Step on_recheck(Step step);
  // Whether `figure` (from iterations spread by `spread`) is slower than `target` (spread by
  // `target_spread`) past the noise; says the noise in `step`.
  bool slower(double figure, double spread, double target, double target_spread, Step& step) const;
  Step end_of_baseline(Step step);
  Step choose(Step step);
  void recalibrate(std::size_t id, double measured);
  // The candidates not timed yet whose calibrated prediction is at most `up_to` become the
  // queue, the least calibrated first.
  void queue_untimed(double up_to);
  Step next_candidate(Step step);
  Step conclude(Step step);
  Step to_rule(Step step);
  // The bar a figure is judged against: the fastest of the rule alone's figure and the fastest
  // candidate kept (0: neither timed).
  double fastest_timed() const;
  // A figure from the window's counted iterations (the first not counted); false until it is full.
  bool window_figure(double ns, Step& step, double& figure);
  // The medians a watch compares with: the trial window's counted iterations, the rule's baseline.
  double trial_median() const;
  double rule_median() const;
  double trial_spread() const;
  Step& chosen(Step& step);
  void watch_from_start(State state);

  SelectorOptions options_;
  State state_ = State::off;
  std::deque<std::size_t> queue_;          // candidates still to try
  std::optional<std::size_t> current_;     // the candidate applied
  std::optional<std::size_t> champion_;    // the fastest timed so far, when not current_
  std::uint32_t baseline_boundaries_ = 0;  // boundaries since the plan was ready
  std::vector<double> rule_ns_;            // the rule alone's last timed iterations (its baseline)
  double rule_fastest_ns_ = 0;             // the rule alone's fastest iteration (baseline or watched)
  std::vector<double> trial_ns_;           // the candidate on trial's iterations
  double best_ns_ = 0;                     // the fastest candidate kept (its trial figure)
  double best_median_ns_ = 0;              // and its trial window's median (its watch's target)
  double best_spread_ = 0;                 // and the spread of that window's counted iterations
  // The model: predictions (empty: none), each candidate's measured figure (0: not timed), the
  // calibration, the prediction the one checked is held to, and how often it was refuted.
  std::vector<StepPrediction> predicted_;
  StepPrediction rule_predicted_;
  std::vector<double> measured_;
  double offset_ns_ = 0;
  double per_rule_swap_ns_ = 0;
  double checked_prediction_ = 0;
  std::uint32_t refutations_ = 0;
  bool challenging_ = false;            // the one checked is the rule alone's rival
  std::uint32_t timed_iterations_ = 0;  // since the plan was ready, until the choice is made
  // The watch: the last `window` iterations, its fastest since it started (whose state a restore
  // puts back), and the median it is judged against with its iterations' spread.
  std::vector<double> recent_;
  std::size_t recent_count_ = 0;
  double watch_fastest_ns_ = 0;
  double watch_target_ns_ = 0;
  double watch_spread_ = 0;
  bool settled_ = false;  // the first iteration watched (the state before's) is past
  // The rule alone's watch target: its baseline's median, or its re-check's, with its spread.
  double rule_target_ns_ = 0;
  double rule_spread_ = 0;
  // The re-check: the candidate it is for, and that candidate's last window.
  std::optional<std::size_t> rechecked_;
  std::vector<double> candidate_window_;
};

const char* to_string(ScheduleSelector::State state);

}  // namespace memtool::engine::detail
