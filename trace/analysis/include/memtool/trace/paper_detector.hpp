// The paper's iteration detector (SmartPool, Zhang et al. 2019), kept as the baseline our
// online detector is measured against (bench/bench_detector.cpp) and checked for agreement.
//
// As published: the signature is stored whole; at checkpoints (after 300 tokens, then each
// time the count doubles) a brute-force search finds the longest segment immediately followed
// by a copy of itself (a "square"); the search is repeated once inside that segment, to cut a
// segment that holds two iterations; the result is accepted only if the iteration has more
// than 100 tokens, and once accepted it is never revised. Each checkpoint costs O(n^2): for
// every length, one linear scan counting consecutive t[j] == t[j + length]. Memory is O(n).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memtool/trace/iteration_detector.hpp"

namespace memtool::trace {

struct PaperDetectorOptions {
  std::uint64_t first_checkpoint = 300;  // tokens before the first test; then doubling
  std::uint64_t min_iteration = 100;     // an iteration must be longer than this
};

class PaperIterationDetector {
 public:
  explicit PaperIterationDetector(const PaperDetectorOptions& options = {});

  // Stores the token; at a checkpoint runs the O(n^2) test. True when a period was found now.
  bool push(std::uint64_t token);
  [[nodiscard]] std::optional<DetectedPeriod> period() const { return found_; }
  [[nodiscard]] std::uint64_t tokens_seen() const { return tokens_.size(); }

  // The test itself on a whole signature: the longest square (cut once), if longer than
  // `min_iteration`. `first_boundary` is where the repeated segment starts.
  [[nodiscard]] static std::optional<DetectedPeriod> find(std::span<const std::uint64_t> tokens,
                                                          std::uint64_t min_iteration);

 private:
  PaperDetectorOptions options_;
  std::vector<std::uint64_t> tokens_;
  std::uint64_t next_checkpoint_;
  std::optional<DetectedPeriod> found_;
};

}  // namespace memtool::trace
