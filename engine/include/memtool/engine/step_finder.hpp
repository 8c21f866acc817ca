// StepFinder: the training step, online, from the stream of signature tokens and the live
// bytes after each of them.
//
// The IterationDetector (memtool/trace/iteration_detector.hpp) proposes a period: the stream
// repeats with it. A real model repeats at several scales inside its step — a transformer
// layer, a ResNet block, an LSTM time step, the optimizer's loop over equally shaped
// parameters — and those repeats are confirmed before the step is (the step needs two whole
// steps). Planning one of them is what made pool mode fail on real models. A proposal becomes
// the step only when it also
//   1. repeated over `confirm_periods` whole periods (a few tokens of noise allowed);
//   2. is balanced: the live bytes are the same one period apart at (nearly) every point (a
//      forward layer keeps its activations, a backward one frees them: neither is balanced);
//   3. covers the recent past: at least `min_coverage` of the last 32 periods' tokens (at most
//      coverage_horizon of them, at least two periods) are tokens that occur in the proposed
//      period. A loop inside the step (the
//      optimizer over equally shaped parameters is balanced) is preceded by the forward and
//      backward passes, whose kernels and sizes it does not contain; the step contains
//      everything but the program's set-up;
//   4. holds the most of the recent past (`coverage_horizon` tokens whatever the period, at
//      least two periods, at most `peak_periods`): the live bytes there were never above the
//      period's peak where the program made one of the period's own allocations (a size it
//      allocates; other sizes at more live bytes are another shape's or an evaluation pass's). A balanced loop inside the step (the optimizer's loop over equally shaped
//      layers, whose sizes and kernels the forward and backward passes share, so it passes 3.)
//      keeps the parameters, gradients and optimizer state live but none of the activations
//      those passes held a few of its periods earlier — in the warm-up step too, where the
//      passes hold no optimizer state yet and so little more than the loop (no margin: any
//      amount more is the passes around the loop). A warm-up that held more delays the step
//      until it leaves that horizon; a loop longer than the horizon can escape (its plan misses
//      once, and 5. rules it out).
//   The recent past of 3. and 4. is the candidate's *regime*: it starts at the last restart(),
//   or where the last step found broke its repetition when the candidate is foreign to that
//   step: fewer than `min_coverage` of the candidate's allocations are of a size (a token) the
//   broken step allocated. A new shape allocates other sizes (its kernels are the same), and
//   what the previous, larger shape (or an evaluation pass of other sizes) held says nothing
//   about the new one's step, which is then accepted after its `confirm_periods`. A loop inside the broken step, an evaluation pass
//   over its layers or the step itself re-forming allocate that step's sizes and are still
//   judged against everything it held;
//   5. has not been proven wrong: a plan made for it that missed at once (reject()) rules that
//      period out until it has repeated twice as far as it had then (a loop inside the step
//      never does; the step itself, rejected on a noisy start, soon does), and the detector,
//      which keeps its history, grows to the next one meanwhile.
// The phase: the boundary goes where the live bytes are lowest within the period (the end of
// the longest run of ties: just before the next allocation), which is where only the
// persistent buffers are live — the place a user's mark would be, and where a pool can be
// allocated without adding to the peak.
//
// A step whose repetition breaks (an evaluation pass, a shape change, noise) is withdrawn until
// it re-forms: its boundaries would fall in the wrong places. Having passed every check once,
// it is back after one clean period, at its new phase — if that period allocates its sizes (a
// new shape, or an evaluation pass of other sizes, with as many calls is not the same step and
// goes through every check).
//
// Explicit marks win: once marks are seen the detector only reports marked periods, accepted
// as they are (boundaries are then the marks themselves).
//
// Not thread-safe: the detection worker holds its lock around every call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"

namespace memtool::engine {

struct StepFinderOptions {
  trace::IterationDetectorOptions detector{4, std::uint64_t{1} << 16, 2, 0.02};
  std::uint32_t confirm_periods = 2;      // whole periods that must repeat (2 or more)
  std::uint64_t coverage_horizon = 4096;  // most tokens of the recent past a step must cover
  double min_coverage = 0.8;
  double min_balanced = 0.9;        // share of the last period's points with the same live bytes a period earlier
  std::uint32_t peak_periods = 32;  // 4.: most periods looked back (0: off)
  double peak_margin = 0.0;         // 4.: share above the period's peak still not "more" (none by default)
};

struct Step {
  std::uint64_t period = 0;       // tokens per iteration
  std::uint64_t phase = 0;        // a boundary: the tick of an iteration's first token
  std::uint64_t allocations = 0;  // allocations per iteration
  std::uint64_t peak_bytes = 0;   // most bytes live within the iteration
  bool from_marks = false;
  std::uint64_t graph_launches = 0;  // CUDA graph launches per iteration (each one token)
};

class StepFinder {
 public:
  explicit StepFinder(const StepFinderOptions& options = {});

  // The next token; `live_bytes` after its event; whether it is an allocation. Returns true
  // when the accepted step changed (a new one, or none any more).
  bool push(std::uint64_t token, std::uint64_t live_bytes, bool allocation, bool graph_launch = false);
  // An explicit iteration boundary before the next token.
  bool mark();
  // A plan of this period proved it wrong: look for a longer one (see 5. above).
  bool reject(std::uint64_t period);
  // The program changed: forget the history and start over (rejected periods stay rejected, and
  // the step found before comes back after one clean period if it returns with its own sizes).
  bool restart();

  [[nodiscard]] const std::optional<Step>& step() const { return step_; }
  // The step as last found by every check (kept while a break withdraws it): what to report.
  [[nodiscard]] const std::optional<Step>& found() const { return found_; }
  [[nodiscard]] std::uint64_t ticks() const { return ticks_; }
  [[nodiscard]] std::uint64_t rejected() const { return rejected_.size(); }
  [[nodiscard]] std::optional<trace::DetectedPeriod> proposal() const { return detector_.period(); }

 private:
  [[nodiscard]] std::uint64_t live_at(std::uint64_t tick) const;  // after token `tick`
  [[nodiscard]] std::uint64_t token_at(std::uint64_t tick) const;
  [[nodiscard]] bool allocation_at(std::uint64_t tick) const;
  [[nodiscard]] bool graph_launch_at(std::uint64_t tick) const;
  bool evaluate();  // accept the detector's proposal if it passes; true if step_ changed
  // First tick of the regime of a candidate of this period (see 3. and 4.).
  [[nodiscard]] std::uint64_t regime_start(std::uint64_t period) const;
  // Whether at least min_coverage of the last `period` ticks' allocations have one of `tokens`.
  [[nodiscard]] bool allocates_as(std::uint64_t period, const std::unordered_set<std::uint64_t>& tokens) const;
  // The distinct tokens of the last `period` ticks' allocations.
  [[nodiscard]] std::unordered_set<std::uint64_t> allocation_tokens(std::uint64_t period) const;

  StepFinderOptions options_;
  trace::IterationDetector detector_;
  std::uint64_t ticks_ = 0;
  std::uint64_t since_ = 0;  // tick of the last restart()
  std::uint64_t mask_ = 0;   // ring size - 1
  std::vector<std::uint64_t> tokens_;
  std::vector<std::uint64_t> lives_;  // live bytes, top bit: allocation
  std::uint64_t last_proposal_ = 0;
  std::uint64_t next_check_ = 0;
  std::uint64_t marks_seen_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> rejected_;  // period → how far it had repeated
  std::optional<Step> step_;
  std::uint64_t proven_ = 0;  // the last step withdrawn because its repetition broke
  std::optional<Step> found_;
  std::unordered_set<std::uint64_t> found_allocations_;  // tokens of found_'s allocations
  std::uint64_t broke_at_ = 0;                           // tick where the last step found broke
  std::unordered_set<std::uint64_t> broke_allocations_;  // tokens of its allocations
};

}  // namespace memtool::engine
