// The step finder's rules (memtool/engine/step_finder.hpp), one synthetic token stream each: a
// stream that passes every rule but the one under test is not taken for the step, and its
// control, the same stream without what that rule looks at, is. Issue 35's rules have their own
// cases: the peak rule in the warm-up step (no optimizer state yet, so the passes hold only a
// little more than the optimizer's loop), and the regime (a shape that shrinks is the step after
// its confirming periods, while a loop made of the broken step's own calls is still judged
// against what that step held).
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "memtool/engine/step_finder.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t kAlloc = 1'000'000;   // token of an allocation: kAlloc + size
constexpr std::uint64_t kFree = 2'000'000;    // of a free: kFree + size
constexpr std::uint64_t kKernel = 3'000'000;  // of a launch: kKernel + kernel

// Feeds a finder and keeps the live bytes; records each step it accepts and when.
struct Feed {
  explicit Feed(const StepFinderOptions& options = {}) : finder(options) {}
  StepFinder finder;
  std::uint64_t live = 0;
  struct Accepted {
    std::uint64_t period;
    std::uint64_t tick;
  };
  std::vector<Accepted> accepted;

  void push(std::uint64_t token, bool allocation) {
    if (finder.push(token, live, allocation) && finder.step())
      accepted.push_back({finder.step()->period, finder.ticks()});
  }
  void alloc(std::uint64_t size) {
    live += size;
    push(kAlloc + size, true);
  }
  void free(std::uint64_t size) {
    live -= size;
    push(kFree + size, false);
  }
  void kernel(std::uint64_t k) { push(kKernel + k, false); }
};

// A balanced step: a batch, `layers` activations kept through the forward pass and freed in the
// backward one, each layer with its kernel: 2 + 4·layers tokens.
struct SimpleStep {
  std::uint64_t layers = 8;
  std::uint64_t activation = 4096;
  void run(Feed& f) const {
    f.alloc(64);
    for (std::uint64_t l = 0; l < layers; ++l) {
      f.alloc(activation);
      f.kernel(l);
    }
    for (std::uint64_t l = layers; l-- > 0;) {
      f.kernel(100 + l);
      f.free(activation);
    }
    f.free(64);
  }
  [[nodiscard]] std::uint64_t tokens() const { return 2 + 4 * layers; }
};

// A training step with an optimizer: forward (an activation per layer, kept), backward (a
// gradient per layer, kept; the activations freed), the optimizer's loop over the layers (the
// same calls as the passes: an activation-sized and a gradient-sized temporary allocated and
// freed, balanced), then the gradients freed. The optimizer's state (one buffer per layer) is
// allocated in the first step, before its loop, and kept: the warm-up step's passes hold no
// state, so they hold only `activation·layers` against the loop's state, gradients and
// temporaries.
struct TrainingStep {
  std::uint64_t layers = 24;
  std::uint64_t weight = 1000;
  std::uint64_t activation = 5000;
  std::uint64_t state = 0;  // per layer, allocated in the first step
  bool first = true;
  void run(Feed& f) {
    f.alloc(64);
    for (std::uint64_t l = 0; l < layers; ++l) f.alloc(activation);
    for (std::uint64_t l = 0; l < layers; ++l) {
      f.alloc(weight);
      f.free(activation);
    }
    if (first && state > 0) {
      for (std::uint64_t l = 0; l < layers; ++l) f.alloc(state);
    }
    first = false;
    for (std::uint64_t l = 0; l < layers; ++l) {
      f.alloc(activation);
      f.alloc(weight);
      f.free(weight);
      f.free(activation);
    }
    for (std::uint64_t l = 0; l < layers; ++l) f.free(weight);
    f.free(64);
  }
  [[nodiscard]] std::uint64_t tokens() const { return 2 + 8 * layers; }
};

}  // namespace

TEST_CASE("step finder 1: a step is accepted after it repeated confirm_periods whole periods",
          "[engine][detection][step_finder]") {
  const SimpleStep step{64, 4096};  // 258 tokens: looked at again every 64 tokens
  Feed f;
  step.run(f);
  step.run(f);
  CHECK(f.accepted.empty());  // once repeated: not yet
  for (int s = 0; s < 3; ++s) step.run(f);
  REQUIRE(!f.accepted.empty());
  CHECK(f.accepted.front().period == step.tokens());
  // The control: asking for 6 whole periods holds the same stream off.
  StepFinderOptions strict;
  strict.confirm_periods = 6;
  Feed g(strict);
  for (int s = 0; s < 5; ++s) step.run(g);
  CHECK(g.accepted.empty());
}

TEST_CASE("step finder 2: a repeat that keeps memory is not the step", "[engine][detection][step_finder]") {
  // A layer's forward pass, repeated: the same calls, but each keeps its activation.
  Feed f;
  for (int l = 0; l < 400; ++l) {
    f.alloc(4096);
    f.kernel(1);
    f.kernel(2);
    f.kernel(3);
  }
  CHECK(f.accepted.empty());
  // The control: the same calls freeing what they allocate are balanced.
  Feed g;
  for (int l = 0; l < 400; ++l) {
    g.alloc(4096);
    g.kernel(1);
    g.kernel(2);
    g.free(4096);
  }
  REQUIRE(!g.accepted.empty());
  CHECK(g.accepted.front().period == 4);
}

TEST_CASE("step finder 3: a repeat whose calls do not cover the recent past is not the step yet",
          "[engine][detection][step_finder]") {
  // A set-up of 400 distinct calls (kept buffers: the live bytes stay below the step's peak),
  // then a small balanced step of 18 tokens.
  const SimpleStep step{4, 4096};
  StepFinderOptions options;
  auto run = [&](const StepFinderOptions& o) {
    Feed f(o);
    for (std::uint64_t i = 0; i < 400; ++i) f.kernel(1000 + i);
    for (int s = 0; s < 40; ++s) step.run(f);
    return f.accepted.empty() ? std::uint64_t{0} : f.accepted.front().tick;
  };
  const std::uint64_t covered = run(options);
  REQUIRE(covered > 0);
  // 80% of the horizon (32 periods) must be the step's calls: the set-up has left most of it.
  CHECK(covered >= 400 + 18 * 18);
  options.min_coverage = 0;  // the control: without the rule, accepted after two periods
  const std::uint64_t loose = run(options);
  REQUIRE(loose > 0);
  CHECK(loose < 400 + 18 * 8);
}

TEST_CASE("step finder 4: the optimizer's loop in the warm-up step is not the step, however little less it holds",
          "[engine][detection][step_finder]") {
  // 24 layers; the optimizer's state (3,600 B a layer) appears in step 0 before the loop, so in
  // step 0 the passes (the batch, 24 activations of 5,000 B and a gradient: 121,064 B) hold only
  // 4% more than the loop (the batch, 24 gradients of 1,000 B, 24 states, two temporaries:
  // 116,464 B); in later steps they also hold the state.
  TrainingStep program;
  program.state = 3600;
  auto accepted = [&](const StepFinderOptions& o) {
    Feed f(o);
    TrainingStep p = program;
    std::vector<std::uint64_t> periods;
    for (int s = 0; s < 6; ++s) p.run(f);
    for (const auto& a : f.accepted) periods.push_back(a.period);
    return periods;
  };
  const std::uint64_t passes = 64 + program.layers * program.activation + program.weight;
  const std::uint64_t loop =
      64 + program.layers * (program.weight + program.state) + program.activation + program.weight;
  REQUIRE(passes > loop);
  REQUIRE(static_cast<double>(passes) < 1.1 * static_cast<double>(loop));  // within the old margin
  StepFinderOptions options;
  const std::vector<std::uint64_t> found = accepted(options);
  REQUIRE(!found.empty());
  CHECK(found.front() == program.tokens());
  CHECK(std::count(found.begin(), found.end(), program.tokens()) == static_cast<long>(found.size()));
  // The control: a margin of 10% over the loop's peak lets the warm-up's loop through.
  options.peak_margin = 0.1;
  const std::vector<std::uint64_t> loose = accepted(options);
  REQUIRE(!loose.empty());
  CHECK(loose.front() < program.tokens());
}

TEST_CASE("step finder 4: a balanced loop below the passes around it is not the step",
          "[engine][detection][step_finder]") {
  const TrainingStep program;  // no optimizer state: the loop holds far less than the passes
  auto accepted = [&](const StepFinderOptions& o) {
    Feed f(o);
    TrainingStep p = program;
    for (int s = 0; s < 6; ++s) p.run(f);
    return f.accepted;
  };
  const auto found = accepted({});
  REQUIRE(!found.empty());
  for (const auto& a : found) CHECK(a.period == program.tokens());
  // The control: without the peak rule the loop passes every other check.
  StepFinderOptions off;
  off.peak_periods = 0;
  const auto loose = accepted(off);
  REQUIRE(!loose.empty());
  CHECK(loose.front().period < program.tokens());
}

TEST_CASE("step finder regime: a shape that shrinks is the step after its confirming periods",
          "[engine][detection][step_finder]") {
  // 12 steps of a large shape, then a smaller one: other sizes, a lower peak. The large shape's
  // past is another program's; the small step must not wait 32 of its periods for it to leave.
  const SimpleStep large{8, 8192};
  const SimpleStep small{6, 3000};  // 26 tokens: not the large step's period
  Feed f;
  for (int s = 0; s < 12; ++s) large.run(f);
  REQUIRE(!f.accepted.empty());
  CHECK(f.accepted.back().period == large.tokens());
  const std::uint64_t change = f.finder.ticks();
  for (int s = 0; s < 8; ++s) small.run(f);
  std::uint64_t at = 0;
  for (const auto& a : f.accepted) {
    if (a.tick > change && a.period == small.tokens()) {
      at = a.tick;
      break;
    }
  }
  // Two confirming periods, a third for the detector to see them, and the next look (every 64
  // tokens).
  REQUIRE(at > 0);
  CHECK(at - change <= 3 * small.tokens() + 64);
}

TEST_CASE("step finder regime: a loop of the broken step's own calls is still judged against what it held",
          "[engine][detection][step_finder]") {
  // Training steps (accepted), then an evaluation pass over 24 layers: each allocates an
  // activation and a weight-sized buffer of the training's sizes, runs its kernels and frees
  // them: a balanced loop far below the training's peak, allocating the training step's sizes.
  TrainingStep training;
  training.layers = 8;
  auto evaluation_accepted = [&](std::uint64_t size) {
    Feed f;
    TrainingStep t = training;
    for (int s = 0; s < 8; ++s) t.run(f);
    CHECK((!f.accepted.empty() && f.accepted.back().period == t.tokens()));
    const std::uint64_t change = f.finder.ticks();
    f.alloc(64);
    for (int l = 0; l < 24; ++l) {  // a layer: 16 tokens, so 32 periods look 512 tokens back
      f.alloc(size);
      f.alloc(training.weight);
      for (std::uint64_t k = 0; k < 12; ++k) f.kernel(k);
      f.free(training.weight);
      f.free(size);
    }
    f.free(64);
    std::optional<std::uint64_t> other;  // a period other than the training step's
    for (const auto& a : f.accepted) {
      if (a.tick > change && a.period != t.tokens() && !other) other = a.period;
    }
    return other;
  };
  // Of the training's calls: not the step.
  CHECK(!evaluation_accepted(training.activation).has_value());
  // The control: the same loop, its activations of a size the training never allocated (half
  // its allocations foreign), is a new program, and its past is not the training's.
  const std::optional<std::uint64_t> foreign = evaluation_accepted(training.activation + 8);
  REQUIRE(foreign.has_value());
  CHECK(*foreign == 16);
}

TEST_CASE("step finder 5: a period whose plan missed waits until it has repeated twice as far",
          "[engine][detection][step_finder]") {
  const SimpleStep step{8, 4096};  // 34 tokens
  Feed f;
  for (int s = 0; s < 6; ++s) step.run(f);
  REQUIRE(f.finder.step().has_value());
  const std::uint64_t run = f.finder.proposal()->explained;
  CHECK(f.finder.reject(step.tokens()));  // withdrawn
  CHECK(!f.finder.step().has_value());
  CHECK(f.finder.rejected() == 1);
  const std::uint64_t at = f.finder.ticks();
  for (int s = 0; s < 16; ++s) step.run(f);
  REQUIRE(f.finder.step().has_value());
  std::uint64_t back = 0;
  for (const auto& a : f.accepted) {
    if (a.tick > at && back == 0) back = a.tick;
  }
  // Accepted again only once the run that had been reached has doubled.
  CHECK(f.finder.proposal()->explained >= 2 * run);
  CHECK(back - at + run >= 2 * run);
}

TEST_CASE("step finder restart: a step that served before comes back after one clean period",
          "[engine][detection][step_finder]") {
  // An evaluation (other sizes) makes the pool drop its plan and restart the finder; the
  // evaluation leaves one of its buffers live into the first step after it, so that step's
  // own allocations happen above the step's peak, which the peak rule alone would hold against
  // the step for up to peak_periods periods.
  Feed f;
  const SimpleStep step;
  for (int i = 0; i < 8; ++i) step.run(f);
  REQUIRE(f.finder.step());
  REQUIRE(f.finder.step()->period == step.tokens());
  const SimpleStep evaluation{step.layers, step.activation + 512};
  evaluation.run(f);
  f.alloc(step.activation + 512);  // kept past the evaluation
  evaluation.run(f);
  f.finder.restart();
  const std::uint64_t back = f.finder.ticks();
  f.accepted.clear();
  step.run(f);
  f.free(step.activation + 512);
  for (int i = 0; i < 6; ++i) step.run(f);
  REQUIRE(!f.accepted.empty());
  CHECK(f.accepted.front().period == step.tokens());
  CHECK(f.accepted.front().tick - back <= 5 * step.tokens());
}
