// Which schedule applies: the swap policy's choice among the candidates a plan gives (ours' own
// schedule and its runners-up, the paper's for the budget) and the rule alone, from host time per
// iteration at iteration boundaries. One state machine (State, one transition per boundary in
// boundary()): learning until a plan is ready; the rule alone timed as the baseline; each
// candidate tried in turn against the fastest so far; the fastest committed and watched, put back
// to its fastest iteration's state once it runs slower than that by the margin, and given up for
// the rule alone when it runs slower still; the rule alone watched the same way. One margin and one window for every comparison (MEMTOOL_SWAP_MARGIN,
// MEMTOOL_SWAP_WINDOW): a figure is taken from a window of iterations whose first is not counted
// (it still carries the state the one before left). Candidates are ids (0..n-1, in the order they
// are tried): the selector says which to apply, the adaptor holds them. Knows nothing of buffers
// or devices; docs/swapping.md tells the story. Not thread-safe: the swap policy's lock.
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

class ScheduleSelector {
 public:
  enum class State : std::uint8_t {
    off,           // no plan is sought (no budget, or the rule alone by choice)
    learning,      // iterations are learned until a plan is ready
    baseline,      // a plan is ready: the rule alone is timed before its candidates
    trying,        // a candidate is on trial
    committed,     // the fastest candidate applies, watched; its copy-ins and the rule's leads learn
    restored,      // it applies as it was in its fastest iteration, learning no more, watched
    published,     // a baseline's schedule applies as published: no trial, no watch
    rule,          // the rule alone, watched; its leads learn
    rule_frozen,   // the rule alone with its leads as they were in its fastest iteration, watched
    rule_settled,  // the rule alone, nothing left to try
  };
  enum class Action : std::uint8_t {
    none,
    apply,         // apply `candidate` from its plan's state (a trial, or published)
    take_back,     // apply `candidate` again as it was in its trial's fastest iteration, learning no more
    restore,       // the applied candidate's copy-ins and the rule's leads go back to its fastest iteration's
    rule_alone,    // the schedule goes (if any): the rule alone from its leads in its fastest iteration
    freeze_leads,  // the rule's leads go back to its fastest iteration's and learn no more
    free_leads,    // the rule's leads learn again
  };
  // What the iteration just timed ran with is the fastest of its figure: the adaptor keeps it.
  enum class Keep : std::uint8_t { nothing, rule, candidate };
  struct Step {
    Action action = Action::none;
    std::size_t candidate = 0;  // apply, take_back: which
    Keep keep = Keep::nothing;
    // A trial's verdict reached at this boundary (for the log and the counters).
    bool verdict = false;
    bool kept = false;      // the candidate was the fastest so far
    bool rejected = false;  // a schedule gave way to the rule alone (trial or watch)
    double figure = 0;      // the figure judged: a trial's best, a watch's median
    double target = 0;      // what it was judged against
    double rule = 0;        // the rule alone's figure (0: not timed)
  };

  explicit ScheduleSelector(SelectorOptions options);

  // The budget calls for a plan: learning (from off).
  void begin();
  // The learner has a plan of `candidates` schedules with swaps, to try in id order (learning ->
  // baseline). No candidate: the rule alone once the baseline is timed.
  void planned(std::size_t candidates);
  // No plan could be made: the rule alone (learning -> rule_settled).
  void failed();
  // The program changed under the applied schedule: learning again, the rule's times forgotten.
  void drop();

  // An iteration ended that took `ns` of host time (0: not timed): the one transition function.
  Step boundary(double ns);

  [[nodiscard]] State state() const { return state_; }
  // A candidate applies (trying, committed, restored, published).
  [[nodiscard]] bool applying() const;
  [[nodiscard]] std::optional<std::size_t> applied() const { return current_; }
  // The rule's leads learn (not frozen by a watch).
  [[nodiscard]] bool leads_learn() const { return state_ != State::restored && state_ != State::rule_frozen; }
  [[nodiscard]] double rule_figure() const;
  [[nodiscard]] const SelectorOptions& options() const { return options_; }

 private:
  Step on_baseline(double ns);
  Step on_trying(double ns);
  Step on_watched(double ns);
  Step next_candidate(Step step);
  Step to_rule(Step step);
  void watch_from_start(State state);
  double median() const;

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
  // The watch: the last `window` iterations, its fastest since it started.
  std::vector<double> recent_;
  std::size_t recent_count_ = 0;
  double watch_fastest_ns_ = 0;
  bool settled_ = false;  // the first iteration watched (the state before's) is past
};

const char* to_string(ScheduleSelector::State state);

}  // namespace memtool::engine::detail
