// The schedule driver (schedule_driver.hpp): the selector's steps carried out, and the plan's
// candidates taken in as the learner publishes them.
#include "swap/schedule_driver.hpp"

#include <fmt/format.h>

#include "memtool/engine/log.hpp"

namespace memtool::engine::detail {

void ScheduleDriver::start_log() {
  IterationLog& log = moves_.learner.start();
  for (const auto& [ptr, b] : buffers_) log.alive(BufferNames::name_of(ptr, b), b.footprint, ptr, b.size);
}

void ScheduleDriver::at_boundary(double iteration_ns) {
  boundary(iteration_ns);
  if (trial_) leads_at_start_ = rule_ins_.leads();  // what the next iteration starts with
}

// `iteration_ns`: the host time of the iteration that just ended (0: none).
void ScheduleDriver::boundary(double iteration_ns) {
  using State = detail::ScheduleSelector::State;
  moves_.learner.meter().poll();
  judge_rule_lateness();
  if (selector_.state() == State::off && options_.budget_bytes != 0 && options_.policy != "belady") {
    selector_.begin();
  }
  if (selector_.applying() && oracle_.length() != schedule_->items()) {
    drop(fmt::format("an iteration of {} work items, the plan's had {}", oracle_.length(), schedule_->items()));
    start_log();
    return;
  }
  if (selector_.state() == State::learning) {
    if (moves_.learner.end_iteration()) start_log();
    return;
  }
  const detail::ScheduleSelector::Step step = selector_.boundary(iteration_ns);
  if (!follow(step)) return;
  if (selector_.applying()) {
    judge_lateness();
    schedule_->rebuild();
  }
}

// While learning: the plan, once two iterations agreed and their GPU times are known. Its
// candidates without swaps are the rule alone (applied, one would only stop the rule leaving
// early for what is allocated next): the rule's baseline times them.
void ScheduleDriver::advance_planning() {
  if (selector_.state() != detail::ScheduleSelector::State::learning) return;
  std::string why;
  detail::PlanReply reply;
  switch (moves_.learner.advance(room_.device_budget(), reply, why)) {
    case ScheduleLearner::Progress::ready: {
      candidates_.clear();
      candidate_states_.clear();
      plan_applied_ = false;
      std::vector<std::unique_ptr<detail::SwapSchedule>> runners_up = std::move(reply.runners_up);
      if (!trial_) runners_up.clear();                                   // a baseline applies as published
      runners_up.insert(runners_up.begin(), std::move(reply.schedule));  // the selector's ids in this order
      for (std::size_t i = 0; i < runners_up.size(); ++i) {
        if (runners_up[i]->size() != 0) {
          candidates_.push_back(std::move(runners_up[i]));
          continue;
        }
        const bool next = i + 1 < runners_up.size();  // timed against the rule's baseline
        // (A runner-up without swaps is skipped, said at debug: ours' own is the one said.)
        log(i == 0 ? LogLevel::info : LogLevel::debug,
            fmt::format("memtool swap: {} has no swaps: the rule alone{}", runners_up[i]->label(),
                        next ? ", as timed; the candidates after it are timed against it" : ""));
      }
      candidate_states_.resize(candidates_.size());
      std::vector<detail::StepPrediction> predicted;
      for (const auto& c : candidates_) predicted.push_back(c->prediction());
      selector_.planned(std::move(predicted), reply.rule_alone);  // chosen by the model, calibrated by timing
      return;
    }
    case ScheduleLearner::Progress::failed:
      log(LogLevel::warn, "memtool swap: no " + options_.policy + " schedule (" + why + "); swapping by its own rule");
      selector_.failed();
      return;
    default:
      return;
  }
}

// Carries out the selector's step (swap/selector.hpp): what the iteration just timed ran with
// is kept first, then the schedule applies, goes back or goes. False when the schedule changed.
bool ScheduleDriver::follow(const detail::ScheduleSelector::Step& step) {
  using Action = detail::ScheduleSelector::Action;
  using Keep = detail::ScheduleSelector::Keep;
  if (step.keep == Keep::rule) rule_fastest_leads_ = leads_at_start_;
  if (step.keep == Keep::candidate && schedule_) candidate_states_[*selector_.applied()] = timed_state();
  if (step.verdict) {
    ++moves_.counters.candidates_timed;
    if (step.checked) {
      log(LogLevel::info,
          fmt::format("memtool swap: {}: {:.1f} ms an iteration, {} its calibrated prediction {:.1f} ms ({:.1f} "
                      "predicted; the rule alone {:.1f} ms)",
                      schedule_->label(), step.figure / 1e6, step.kept ? "as" : "refuting", step.predicted / 1e6,
                      schedule_->prediction().step_ns / 1e6, step.rule / 1e6));
      if (step.kept && step.action == Action::apply) {
        log(LogLevel::info, fmt::format("memtool swap: {} is predicted within the margin ({:.1f}%) of it, which the "
                                        "model cannot rank: timed against it",
                                        candidates_[step.candidate]->label(), selector_.options().margin * 100));
      }
    } else {
      log(LogLevel::info,
          fmt::format("memtool swap: {}: {:.1f} ms an iteration, {} ({:.1f} ms; the rule alone {:.1f} ms)",
                      schedule_->label(), step.figure / 1e6, step.kept ? "the fastest so far" : "not faster than",
                      step.target / 1e6, step.rule / 1e6));
    }
  }
  if (step.by_model) say_model_choice(step);
  if (step.rechecked) say_recheck(step);
  if (step.chosen) {
    moves_.counters.iterations_selecting += step.timed_iterations;
    log(LogLevel::info,
        fmt::format("memtool swap: chosen after {} iterations timed since the plan", step.timed_iterations));
  }
  if (step.rejected) ++moves_.counters.schedules_rejected;
  switch (step.action) {
    case Action::none:
      return true;
    case Action::apply:
      if (schedule_) clear();
      // The plan's first candidate applied counts, whichever the model chose first.
      install(step.candidate, !plan_applied_);
      plan_applied_ = true;
      return false;
    case Action::take_back:
      clear();
      // Taken back as it was in its fastest iteration, learning no more: what it learned after
      // that was its own trial's to show, and learning on (from the state the candidates after
      // it left) can settle it slower.
      if (!step.rechecked) {
        log(LogLevel::info, fmt::format("memtool swap: {} is the fastest: it applies from now on, as it was in its "
                                        "fastest iteration",
                                        candidates_[step.candidate]->label()));
      }
      install(step.candidate, false);
      restore(candidate_states_[step.candidate]);
      return false;
    case Action::restore:
      // Slower than the figure it was chosen with (selector.hpp): its copy-ins and the rule's leads
      // go back to where they were in its fastest iteration (the rule's leads grow under a
      // schedule too, and a longer lead sends more out ahead), and neither learns any more.
      log(LogLevel::info, fmt::format("memtool swap: {}: {:.1f} ms an iteration, slower than it was ({:.1f} ms) past "
                                      "the noise ({:.1f}%): its copy-ins and the rule's leads go back to where they "
                                      "were in its fastest iteration, and learn no more",
                                      schedule_->label(), step.figure / 1e6, step.target / 1e6, noise_percent(step)));
      restore(candidate_states_[*selector_.applied()]);  // a fastest is timed before any restore
      return true;
    case Action::rule_alone:
      if (schedule_) {
        if (selector_.state() == detail::ScheduleSelector::State::rechecking) {
          log(LogLevel::info,
              fmt::format("memtool swap: {}: {:.1f} ms an iteration, slower than it was ({:.1f} ms) past the noise "
                          "({:.1f}%) as put back: the rule alone is timed again beside it, for a window",
                          schedule_->label(), step.figure / 1e6, step.target / 1e6, noise_percent(step)));
        } else if (step.figure > 0 && !step.verdict) {
          log(LogLevel::info, fmt::format("memtool swap: {}: {:.1f} ms an iteration, slower than the rule alone "
                                          "timed beside it ({:.1f} ms) past the noise ({:.1f}%): the rule alone "
                                          "from now on",
                                          schedule_->label(), step.figure / 1e6, step.rule / 1e6, noise_percent(step)));
        }
        clear();
      }
      rule_from_now_on();
      return false;
    case Action::freeze_leads:
      log(LogLevel::info, fmt::format("memtool swap: the rule alone: {:.1f} ms an iteration, slower than it was "
                                      "({:.1f} ms) past the noise ({:.1f}%): its leads go back to where they were "
                                      "then, and learn no more",
                                      step.figure / 1e6, step.target / 1e6, noise_percent(step)));
      rule_ins_.leads() = rule_fastest_leads_;
      return true;
    case Action::free_leads:
      log(LogLevel::info, fmt::format("memtool swap: the rule alone: {:.1f} ms an iteration, slower than it was "
                                      "({:.1f} ms) past the noise ({:.1f}%) with its leads put back: they learn again",
                                      step.figure / 1e6, step.target / 1e6, noise_percent(step)));
      return true;
  }
  return true;
}

// The model's choice (swap/selector.hpp), with its calibration: the host time a step it missed
// and per copy.
void ScheduleDriver::say_model_choice(const detail::ScheduleSelector::Step& step) {
  using Action = detail::ScheduleSelector::Action;
  const std::string who = step.action == Action::rule_alone ? std::string("the rule alone")
                          : step.action == Action::none     ? schedule_->label()
                                                            : candidates_[step.candidate]->label();
  const char* how = step.challenge                 ? "the rule alone's rival, checked against it"
                    : step.action == Action::apply ? "checked against its prediction"
                                                   : "as timed";
  // A rival of the rule alone is said with its own calibrated figure (choice_ns is the rule's).
  const double figure = step.challenge ? selector_.calibrated(step.candidate) : step.choice_ns;
  log(LogLevel::info,
      fmt::format("memtool swap: chosen by prediction: {}, {:.1f} ms an iteration calibrated, "
                  "{} (the rule alone {:.1f} ms; calibration: {:.1f} ms a step and {:.2f} ms a copy out of the "
                  "rule's the model missed)",
                  who, figure / 1e6, how, selector_.rule_figure() / 1e6, selector_.unexplained_ns() / 1e6,
                  selector_.per_rule_swap_ns() / 1e6));
}

// The rule alone re-timed beside a restored candidate (swap/selector.hpp): which stays.
void ScheduleDriver::say_recheck(const detail::ScheduleSelector::Step& step) {
  const std::string who = candidates_[step.candidate]->label();
  if (step.kept) {
    log(LogLevel::info,
        fmt::format("memtool swap: the rule alone re-timed: {:.1f} ms an iteration, not faster than {} ({:.1f} ms) "
                    "past the noise ({:.1f}%): {} is taken back as it was in its fastest iteration, watched against "
                    "the rule's {:.1f} ms",
                    step.rule / 1e6, who, step.figure / 1e6, noise_percent(step), who, step.rule / 1e6));
    return;
  }
  log(LogLevel::info, fmt::format("memtool swap: the rule alone re-timed: {:.1f} ms an iteration, faster than the "
                                  "schedule's {:.1f} ms past the noise ({:.1f}%): the rule alone from now on, "
                                  "watched against its {:.1f} ms",
                                  step.rule / 1e6, step.figure / 1e6, noise_percent(step), step.rule / 1e6));
}

// No candidate faster than the rule alone (or none with swaps): the rule from now on, starting
// from the leads of its fastest timed iteration when it was timed. Its leads grow with every
// copy back that arrives late, which can help (lstm at 60%: 1,940 ms an iteration, then
// 1,815 ms 25 on) or not (longer leads send more out ahead: mobilenet_v2 at 60% ran 1,144 ms an
// iteration with 49 buffers out, 1,200-1,246 ms with 54-60): so the selector watches it as a
// committed candidate, against its fastest iteration.
void ScheduleDriver::rule_from_now_on() {
  using State = detail::ScheduleSelector::State;
  const bool recheck = selector_.state() == State::rechecking;
  if (selector_.state() != State::rule && !recheck) return;
  rule_ins_.leads() = rule_fastest_leads_;
  log(LogLevel::info, fmt::format("memtool swap: the rule alone {}, from its leads in its fastest iteration "
                                  "({:.1f} ms)",
                                  recheck ? "for a window" : "from now on", selector_.rule_figure() / 1e6));
}

// Candidate `id` applies from the next iteration on; `counts`: the first of a new plan's
// candidates to apply (not one coming after it in turn, nor the fastest taken back).
void ScheduleDriver::install(std::size_t id, bool counts) {
  schedule_ = candidates_[id].get();
  if (counts) {
    ++moves_.counters.schedules;
    rule_leads_ = rule_ins_.leads();
  }
  for (auto& [ptr, b] : buffers_) {
    b.scheduled_in = 0;
    moves_.timing_events.give(b.timed_arrival);
  }
}

void ScheduleDriver::drop(const std::string& why) {
  log(LogLevel::info, "memtool swap: the schedule is dropped (" + why + "); learning again");
  ++moves_.counters.schedule_drops;
  clear();
  candidates_.clear();
  candidate_states_.clear();
  selector_.drop();
  moves_.learner.stop(true);
}
// The schedule and what the buffers held of it go; the rule alone until a state says otherwise,
// with the leads it had learned before the plan applied (what a schedule left for it to bring
// back on demand grew them, and longer leads make it send more out ahead: lstm at 60% then
// moved 59 buffers an iteration where it had moved 42).
void ScheduleDriver::clear() {
  schedule_ = nullptr;
  std::size_t grown = 0;
  for (const auto& [key, lead] : rule_ins_.leads()) {
    const auto it = rule_leads_.find(key);
    grown += lead > (it == rule_leads_.end() ? options_.lookahead : it->second) ? 1 : 0;
  }
  if (grown != 0) log(LogLevel::debug, fmt::format("memtool swap: the rule gets back its leads ({} had grown)", grown));
  rule_ins_.leads() = rule_leads_;
  forget_lateness();
  moves_.learner.stop(false);  // a log starts at a boundary
  for (auto& [ptr, b] : buffers_) {
    b.scheduled_in = 0;
    b.held_out = false;
    moves_.timing_events.give(b.timed_arrival);
  }
}

// The schedule's copies issued at work item `item`: out first, then in (swap/schedule_applier.hpp).
void ScheduleDriver::apply(std::uint64_t item, StreamId stream) {
  if (!schedule_) return;
  if (item >= schedule_->items()) {
    drop(fmt::format("an iteration longer than the plan's {} work items", schedule_->items()));
    return;
  }
  applier_.apply(*schedule_, item, stream, [&](const SwapBuffer& b, std::uint64_t lead) {
    room_.make(b.footprint, lead, Room::Mode::wait);
    return moves_.mover.device_bytes_with(b.footprint) <= room_.device_budget();
  });
}

// Scheduled copy-ins later than planned start earlier from now on (SwapSchedule::late).
void ScheduleDriver::judge_lateness() {
  lateness_.judge([this](std::uint64_t swap, double late_ns) {
    if (schedule_) schedule_->late(static_cast<std::uint32_t>(swap), late_ns);
  });
}

// The rule's copies back that were late: those buffers' leads grow.
void ScheduleDriver::judge_rule_lateness() {
  rule_lateness_.judge([this](std::uint64_t key, double) {
    ++moves_.counters.swap_ins_late;
    rule_ins_.grow_lead(key);
  });
}

}  // namespace memtool::engine::detail
