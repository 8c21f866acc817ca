// Offline iteration finding over a TraceModel: the period, the steady-state start and the
// boundary of every iteration, in event-index time.
//
// With iteration marks (and `use_marks`), marks are the boundaries: iteration k is
// [mark k, mark k+1), the last one runs to the end of the trace; events before the first mark
// are the prologue (model set-up) and belong to no iteration. The steady state is the longest
// run of complete marked iterations at the end whose token sequences equal the last complete
// one (within the noise budget); earlier marked iterations are flagged warm_up.
//
// Without marks, the online IterationDetector runs over the model's signature tokens
// (memtool/trace/signature.hpp). Then:
//   1. periodic stretches: where every token equals the one a period earlier, within the noise
//      budget, for at least `confirmations` periods. Noise that shifts the stream (an inserted
//      or dropped event) splits the steady state into stretches; the iteration holding the
//      noise is kept, with an irregular length (regular = false). The steady state starts with
//      the first stretch;
//   2. phase: a period can start anywhere in the cycle; per stretch we choose the phase that
//      minimises the bytes of buffers crossing the boundary (allocated before it and freed at
//      or after it; never-freed buffers do not count), summed over its cycles. Among
//      equally good phases we take the end of the run of tied phases, i.e. the last possible
//      start before the first allocation of the new iteration ("starts with the first
//      allocation after the drop"). For training loops this is where every temporary of the
//      previous step is gone: the same place a user's mark would be.
//   3. boundaries every period within each stretch; everything before the first one is a
//      single warm-up iteration (its inner boundaries are unknown since warm-up differs).
// The boundaries fall on token events; an event without a token (mark, sync) just before a
// boundary belongs to the previous iteration.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/signature.hpp"

namespace memtool::trace {

struct IterationOptions {
  bool use_marks = true;  // false: ignore marks, detect from tokens
  SignatureOptions signature;
  // Offline, memory follows the trace (the detector grows its tables lazily), so periods up
  // to 4 M tokens are allowed.
  IterationDetectorOptions detector{.max_period = std::uint64_t{1} << 22};
};

enum class IterationSource : std::uint8_t { none, marks, detector };

struct IterationSpan {
  std::uint64_t first_event = 0;  // event index where the iteration starts
  std::uint64_t end_event = 0;    // one past its last event
  bool warm_up = false;           // before the steady state
  bool complete = true;           // false for a last iteration cut short by the end of the trace
  bool regular = true;            // as many tokens as the period (false around noise, warm-up)
  [[nodiscard]] std::uint64_t length() const { return end_event - first_event; }
};

struct Iterations {
  IterationSource source = IterationSource::none;
  std::uint64_t period_events = 0;   // events in one steady iteration (0: none found)
  std::uint64_t period_tokens = 0;   // signature tokens in one steady iteration
  std::uint64_t period_allocs = 0;   // allocations in one steady iteration
  std::uint64_t steady_start = 0;    // first event of the first steady iteration
  std::uint64_t prologue_end = 0;    // first event of the first iteration (marks); else 0
  std::vector<IterationSpan> spans;  // in event order: warm-up first, then steady ones

  [[nodiscard]] bool found() const { return source != IterationSource::none; }
  // Index in `spans` of the first steady iteration (spans.size() when none).
  [[nodiscard]] std::size_t first_steady() const;
  // Index in `spans` of the iteration containing `event_index`, if any.
  [[nodiscard]] std::optional<std::size_t> iteration_of(std::uint64_t event_index) const;
};

// The signature tokens of a model, in event order; `token_events` (optional) receives, for each
// token, the index of its event.
[[nodiscard]] std::vector<std::uint64_t> signature_tokens(const TraceModel& model, const SignatureOptions& options = {},
                                                          std::vector<std::uint64_t>* token_events = nullptr);

[[nodiscard]] Iterations find_iterations(const TraceModel& model, const IterationOptions& options = {});

}  // namespace memtool::trace
