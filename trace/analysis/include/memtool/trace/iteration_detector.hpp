// Online iteration detection: finds the period of a stream of event signature tokens.
//
// Amortised O(1) per token with bounded memory. Tolerates warm-up iterations that differ from
// the steady state and occasional noise tokens; explicit marks take precedence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

namespace memtool::trace {

struct IterationDetectorOptions {
  std::uint64_t min_period = 4;          // shorter repeats are ignored
  std::uint64_t max_period = 1u << 20;   // bounds memory
  std::uint32_t confirmations = 2;       // whole periods that must repeat before it is reported
  double max_noise_fraction = 0.02;      // mismatching tokens tolerated within a period
};

struct DetectedPeriod {
  std::uint64_t period = 0;          // tokens per iteration
  std::uint64_t first_boundary = 0;  // token index where the first steady iteration starts
  std::uint64_t confirmed_at = 0;    // token index at which it was confirmed
  bool from_marks = false;           // given by explicit iteration marks
};

class IterationDetector {
 public:
  explicit IterationDetector(const IterationDetectorOptions& options = {});
  ~IterationDetector();
  IterationDetector(IterationDetector&&) noexcept;
  IterationDetector& operator=(IterationDetector&&) noexcept;

  // Feeds the next token; returns true when this token confirmed a (new) period.
  bool push(std::uint64_t token);
  // An explicit iteration boundary before the next token.
  void mark();

  [[nodiscard]] std::optional<DetectedPeriod> period() const;
  [[nodiscard]] std::uint64_t tokens_seen() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtool::trace
