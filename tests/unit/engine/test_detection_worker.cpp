// Iteration detection on the worker thread finds exactly what the detector finds when fed the
// same tokens directly: through the ring, past its capacity, with marks, after stop().
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "memtool/engine/detection_worker.hpp"
#include "memtool/trace/iteration_detector.hpp"

using memtool::engine::DetectionWorker;
using memtool::trace::IterationDetector;

namespace {

// A training-like stream: `warmup` distinct tokens, then `iterations` copies of a `period`
// long iteration whose tokens repeat internally (layers).
std::vector<std::uint64_t> training_stream(std::uint64_t warmup, std::uint64_t period, std::uint64_t iterations) {
  std::vector<std::uint64_t> tokens;
  for (std::uint64_t i = 0; i < warmup; ++i) tokens.push_back(0xabc000 + i);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    for (std::uint64_t i = 0; i < period; ++i) tokens.push_back(i < period / 2 ? 100 + i % 7 : 500 + i);
  }
  return tokens;
}

std::optional<std::uint64_t> direct_period(const std::vector<std::uint64_t>& tokens) {
  IterationDetector detector;
  for (const std::uint64_t t : tokens) detector.push(t);
  const auto found = detector.period();
  return found ? std::optional<std::uint64_t>(found->period) : std::nullopt;
}

}  // namespace

TEST_CASE("the worker finds the period the detector finds", "[engine][detection]") {
  const auto [period, iterations] = GENERATE(table<std::uint64_t, std::uint64_t>({
      {6, 20},     // a short loop
      {1000, 30},  // 30,000 tokens: several times the ring
      {20000, 3},  // one iteration longer than the ring
  }));
  INFO("period " << period << " x " << iterations);
  const auto tokens = training_stream(37, period, iterations);
  DetectionWorker worker;
  for (const std::uint64_t t : tokens) worker.push(t, 0, false);
  const auto found = worker.period_now();
  REQUIRE(found.has_value());
  CHECK(*found == period);
  CHECK(found == direct_period(tokens));
}

TEST_CASE("marks reach the detector in order with the tokens", "[engine][detection]") {
  DetectionWorker worker;
  // Marked iterations of 9 tokens whose contents vary: only the marks can give the period.
  for (std::uint64_t it = 0; it < 6; ++it) {
    worker.mark();
    for (std::uint64_t i = 0; i < 9; ++i) worker.push(it * 1000 + i, 0, false);
  }
  worker.mark();
  const auto found = worker.period_now();
  REQUIRE(found.has_value());
  CHECK(*found == 9);
}

TEST_CASE("after stop() the producer processes what is queued itself", "[engine][detection]") {
  DetectionWorker worker;
  const auto tokens = training_stream(5, 12, 10);
  for (std::size_t i = 0; i < tokens.size() / 2; ++i) worker.push(tokens[i], 0, false);
  worker.stop();
  worker.stop();  // idempotent
  for (std::size_t i = tokens.size() / 2; i < tokens.size(); ++i) worker.push(tokens[i], 0, false);
  const auto found = worker.period_now();
  REQUIRE(found.has_value());
  CHECK(*found == 12);
}
