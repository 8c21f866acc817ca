// Online iteration detection: finds the period of a stream of event signature tokens.
//
// Tokens come from SignatureBuilder (memtool/trace/signature.hpp): one 64-bit value per
// allocation, free, launch, ... Equal tokens mean "the same kind of event". The detector keeps
// the last `max_period` tokens and a k-gram table (rolling hash → last position): each time a
// k-gram recurs, the distance to its previous occurrence becomes a candidate period. A handful
// of candidates are checked token by token (t[i] == t[i - p]) with a small mismatch budget per
// period, so the cost is amortised O(1) per token and memory is O(max_period).
//
// Which period is reported. A candidate p is *confirmed* once the stream has repeated with
// period p over `confirmations` whole periods (its match run is >= (confirmations - 1) * p
// tokens long). A confirmed candidate replaces the reported period P only if its run is longer
// than P's current run AND at least (confirmations - 1) * P. This is what makes an iteration
// with internal repetition (10 identical layers, 35 identical LSTM timesteps) come out as the
// whole iteration: the layer period is confirmed first, but its run breaks at every
// iteration's non-repeating part, so it can never explain as long a stretch as the iteration
// period, which then takes over for good; a later re-confirmation of the layer period inside
// the next iteration cannot displace it. The same rule keeps the period through noise: an
// inserted or dropped token breaks P's run for one period, and nothing shorter than P can
// take over meanwhile; P re-forms from the k-gram table and continues. Finally, a newcomer
// must explain a longer stretch than any period that was reported and later abandoned, so a
// sub-period (one layer, one timestep) that was reported early and then broke is not announced
// again in every iteration; the iteration period, whose run never ends, always gets through.
//
// Warm-up iterations that differ (cuDNN autotuning, lazy optimizer state) simply delay the
// start of the match run; `first_boundary` is the first token of the periodic stretch.
//
// Explicit marks (memtool_iteration_mark(), MEMTOOL_ITERATION_KERNEL) take precedence: once a
// mark has been seen, only marks define the period (tokens between marks); it is reported once
// `confirmations` consecutive marked iterations have the same length.
//
// Not thread-safe: the caller serialises push()/mark() (the interposer holds its lock).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

namespace memtool::trace {

struct IterationDetectorOptions {
  std::uint64_t min_period = 4;         // shorter repeats are reported as their multiple >= this
  std::uint64_t max_period = 1u << 18;  // bounds memory: <= ~32 bytes per token of max_period
  std::uint32_t confirmations = 2;      // whole periods that must repeat (values < 2 act as 2)
  double max_noise_fraction = 0.02;     // mismatching tokens tolerated within one period
};

struct DetectedPeriod {
  std::uint64_t period = 0;          // tokens per iteration
  std::uint64_t first_boundary = 0;  // token index where the periodic (steady) stretch starts
  std::uint64_t confirmed_at = 0;    // number of tokens seen when it was confirmed
  bool from_marks = false;           // given by explicit iteration marks
  // Tokens up to now that repeat with this period without a break (its current match run plus
  // the period it is compared against; 0 while broken by noise). An online consumer can wait
  // for, say, 3 periods here before trusting a freshly reported period.
  std::uint64_t explained = 0;
};

class IterationDetector {
 public:
  explicit IterationDetector(const IterationDetectorOptions& options = {});
  ~IterationDetector();
  IterationDetector(IterationDetector&&) noexcept;
  IterationDetector& operator=(IterationDetector&&) noexcept;
  IterationDetector(const IterationDetector&) = delete;
  IterationDetector& operator=(const IterationDetector&) = delete;

  // Feeds the next token; returns true when this token made a different period (or the first
  // one) the reported period.
  bool push(std::uint64_t token);
  // An explicit iteration boundary before the next token. Returns true when the marks just
  // confirmed a different period (or the first one).
  bool mark();
  // Forgets everything (the engine goes back to observing after a plan was dropped).
  void reset();

  [[nodiscard]] std::optional<DetectedPeriod> period() const;
  [[nodiscard]] std::uint64_t tokens_seen() const;
  [[nodiscard]] const IterationDetectorOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtool::trace
