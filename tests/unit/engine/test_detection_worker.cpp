// Iteration detection on the worker thread finds exactly what the detector finds when fed the
// same tokens directly: through the ring, past its capacity, with marks, after stop(); and an
// eager worker (a strategy waiting for the step) publishes it at the very token that completes it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "memtool/engine/detection_worker.hpp"
#include "memtool/engine/step_finder.hpp"
#include "memtool/trace/iteration_detector.hpp"

using memtool::engine::DetectionWorker;
using memtool::engine::StepFinder;
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

namespace {

// A step's allocations and frees, with the live bytes after each: a batch, layers' activations
// kept through the forward pass and freed in the backward one, with a gradient temporary each.
struct Call {
  std::uint64_t token;
  std::uint64_t live;
  bool allocation;
};
std::vector<Call> training_calls(std::uint64_t steps) {
  std::vector<Call> calls;
  std::uint64_t live = 0;
  const auto alloc = [&](std::uint64_t size) {
    live += size;
    calls.push_back({1'000'000 + size, live, true});
  };
  const auto free = [&](std::uint64_t size) {
    live -= size;
    calls.push_back({2'000'000 + size, live, false});
  };
  for (std::uint64_t s = 0; s < steps; ++s) {
    alloc(64);
    for (std::uint64_t l = 0; l < 5; ++l) alloc(1000 * (l + 1));
    for (std::uint64_t l = 5; l-- > 0;) {
      alloc(300);
      free(300);
      free(1000 * (l + 1));
    }
    free(64);
  }
  return calls;
}

}  // namespace

TEST_CASE("an eager worker publishes the step at the token that completes it", "[engine][detection]") {
  // A pool takes the step at the first boundary whose window is complete, a few tokens after the
  // finder accepts it: published a poll later, that boundary has passed and a step is lost.
  const auto calls = training_calls(8);
  StepFinder direct;
  std::optional<std::size_t> accepted;
  for (std::size_t i = 0; i < calls.size() && !accepted; ++i) {
    if (direct.push(calls[i].token, calls[i].live, calls[i].allocation) && direct.step()) accepted = i;
  }
  REQUIRE(accepted.has_value());
  DetectionWorker worker({}, /*synchronous=*/false, /*eager=*/true);
  std::optional<std::size_t> published;
  for (std::size_t i = 0; i < calls.size() && !published; ++i) {
    worker.push(calls[i].token, calls[i].live, calls[i].allocation);
    if (worker.step_generation() != 0) published = i;
  }
  REQUIRE(published.has_value());
  CHECK(*published == *accepted);
  const auto step = worker.published_step();
  REQUIRE(step.has_value());
  CHECK(step->period == direct.step()->period);
  CHECK(step->phase == direct.step()->phase);
}
