// Pool mode on the shapes of real models it had not seen (issue 35): a training step whose
// optimizer runs a balanced loop over equally shaped layers (which the step finder must not take
// for the step), a plan dropped in the middle of a step (the next boundary's window must be cut
// for it), the summary's account of planned steps and of why the pool stopped serving, and the
// same first served step with the step found and the plan made off the calling thread.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "memtool/engine/step_finder.hpp"
#include "memtool/planner/algorithm.hpp"
#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

namespace {

// Tokens and live bytes of a step: forward (an activation per layer, kept), backward (a gradient
// per layer, kept; the activations freed), the optimizer (two temporaries per layer of the
// activation's and the gradient's sizes, allocated and freed: balanced, and every token of the
// passes is one of its tokens), then the gradients freed. The passes peak above the optimizer,
// whose loop repeats `layers` times.
struct LayeredStep {
  std::uint64_t layers = 6;
  std::uint64_t weight = 1000;
  std::uint64_t activation = 5000;
  std::uint64_t live = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> tokens;  // (token, live bytes after)

  void alloc(std::uint64_t size) {
    live += size;
    tokens.emplace_back(1'000'000 + size, live);
  }
  void free(std::uint64_t size) {
    live -= size;
    tokens.emplace_back(2'000'000 + size, live);
  }
  void step() {
    alloc(64);  // the batch
    for (std::uint64_t l = 0; l < layers; ++l) alloc(activation);
    for (std::uint64_t l = 0; l < layers; ++l) {
      alloc(weight);
      free(activation);
    }
    for (std::uint64_t l = 0; l < layers; ++l) {  // the same calls as the passes, fewer bytes
      alloc(activation);
      alloc(weight);
      free(weight);
      free(activation);
    }
    for (std::uint64_t l = 0; l < layers; ++l) free(weight);
    free(64);
  }
};

// The periods the finder accepted, in order, over `steps` steps of the program.
std::vector<std::uint64_t> accepted_periods(const StepFinderOptions& options, int steps) {
  StepFinder finder(options);
  LayeredStep program;
  std::vector<std::uint64_t> accepted;
  for (int s = 0; s < steps; ++s) {
    program.tokens.clear();
    program.step();
    for (const auto& [token, live] : program.tokens) {
      const bool allocation = token < 2'000'000;
      if (finder.push(token, live, allocation) && finder.step()) accepted.push_back(finder.step()->period);
    }
  }
  return accepted;
}

}  // namespace

TEST_CASE("step finder: a balanced loop below the step's peak is not the step", "[engine][detection][coverage]") {
  const std::uint64_t step_tokens = 2 + 6 + 2 * 6 + 4 * 6 + 6;
  StepFinderOptions options;
  const std::vector<std::uint64_t> found = accepted_periods(options, 6);
  REQUIRE(!found.empty());
  CHECK(found.front() == step_tokens);
  CHECK(std::count(found.begin(), found.end(), step_tokens) == static_cast<long>(found.size()));
  // The control: without the peak rule the optimizer's loop passes every other check.
  options.peak_periods = 0;
  const std::vector<std::uint64_t> loose = accepted_periods(options, 6);
  REQUIRE(!loose.empty());
  CHECK(loose.front() < step_tokens);
}

namespace {

// The layered step as a program on the engine: no warm-up here, so steps 0 and 1 are observed
// and step 2 on is served, each planned step entirely from the plan.
struct Layered {
  std::uint64_t layers = 6;
  std::uint64_t scale = 1;  // a new shape: every per-step size times this
  std::vector<Buffer> weights;
  StreamId stream = 3;

  void setup(Program& p) {
    for (std::uint64_t l = 0; l < layers; ++l) weights.push_back(*p.alloc(2 * kUnit, stream));
  }
  void step(Program& p) {
    std::vector<Buffer> acts;
    std::vector<Buffer> grads;
    auto batch = *p.alloc(kUnit * scale + 64, stream);
    for (std::uint64_t l = 0; l < layers; ++l) {
      acts.push_back(*p.alloc(6 * kUnit * scale, stream));
      p.use(weights[l], stream);
    }
    for (std::uint64_t l = layers; l-- > 0;) {
      grads.push_back(*p.alloc(2 * kUnit, stream));
      p.free(acts[l]);
    }
    for (std::uint64_t l = 0; l < layers; ++l) {
      auto t = *p.alloc(2 * kUnit, stream);
      p.use(grads[l], stream);
      p.free(t);
    }
    for (const Buffer& g : grads) p.free(g);
    p.free(batch);
  }
  void teardown(Program& p) {
    for (const Buffer& w : weights) p.free(w);
  }
};

}  // namespace

TEST_CASE("pool: a step with an optimizer loop is planned once, after two observed steps", "[engine][coverage]") {
  SimDevice d;
  PoolEngine engine(d, sync_options(0.05));
  Program p(engine, d);
  Layered model;
  model.setup(p);
  std::vector<std::uint64_t> from_pool;
  for (int s = 0; s < 7; ++s) {
    model.step(p);
    from_pool.push_back(engine.summary().allocs_from_pool);
  }
  const Summary s = engine.summary();
  INFO("from the pool after each step: " << Catch::Detail::stringify(from_pool));
  const std::uint64_t per_step = 1 + 3 * model.layers;
  CHECK(from_pool[1] == 0);
  CHECK(from_pool[2] == per_step);  // step 2 entirely from the plan
  CHECK(s.plans_made == 1);
  CHECK(s.misses == 0);
  CHECK(s.periods_rejected == 0);
  CHECK(s.iterations_planned == 5);
  CHECK(s.allocs_in_planned_steps == 5 * per_step);
  CHECK(s.worst_step_served == 1.0);
  CHECK(s.state_reason.empty());
  model.teardown(p);
  check_clean(p, d);
  engine.shutdown();
  const Summary after = engine.summary();
  CHECK(after.state == "disabled");
  CHECK(after.state_reason == "stopped in apply: the CUDA context ended");
}

TEST_CASE("pool: a plan dropped in the middle of a step is replaced at the next boundary", "[engine][coverage]") {
  SimDevice d;
  PoolEngine engine(d, sync_options(0.05));
  Program p(engine, d);
  Layered model;
  model.layers = 8;
  model.setup(p);
  for (int s = 0; s < 5; ++s) model.step(p);
  REQUIRE(engine.state() == "apply");
  // A new shape: the plan misses through the forward pass and is dropped there (consecutive
  // misses), the observer starts over; two steps of the new shape are observed (the first one
  // from the drop on), and the third is served. Without the window asked for at once, the
  // first boundary after the new step is found passes without one and costs a step.
  model.scale = 3;
  std::vector<std::uint64_t> from_pool;
  std::vector<std::string> states;
  for (int s = 0; s < 5; ++s) {
    model.step(p);
    from_pool.push_back(engine.summary().allocs_from_pool);
    states.push_back(engine.state());
  }
  const Summary s = engine.summary();
  INFO("from the pool after each step: " << Catch::Detail::stringify(from_pool) << ", states "
                                         << Catch::Detail::stringify(states));
  CHECK(s.replans == 1);
  CHECK(states[0] == "observe");
  const std::uint64_t per_step = 1 + 3 * model.layers;
  CHECK(from_pool[3] - from_pool[2] == per_step);  // the new shape's step 3: all from the new plan
  CHECK(s.plans_made == 2);
  model.teardown(p);
  check_clean(p, d);
  engine.shutdown();
}

namespace {

// `best` after `delay`: a plan that takes that long on the planner's thread.
PlanFunction slow_best(std::chrono::milliseconds delay) {
  return [delay](const memtool::trace::Problem& problem) {
    std::this_thread::sleep_for(delay);
    memtool::planner::PlanOptions options;
    options.time_limit_seconds = 0.05;
    return memtool::planner::find_algorithm("best")->plan(problem, options);
  };
}

}  // namespace

TEST_CASE("pool, the defaults: the step after the observed ones is served, a plan past the wait later",
          "[engine][coverage]") {
  // Steps here take microseconds: the detection worker (a poll of milliseconds) and the planner's
  // thread would both answer several steps late. The finder runs on the calling thread until the
  // step is accepted, and the boundary waits for the plan (PoolOptions::plan_wait_seconds).
  SimDevice d;
  PoolOptions options;  // planning on the planner's thread
  const bool within = GENERATE(true, false);
  options.plan_override = slow_best(std::chrono::milliseconds(within ? 20 : 400));
  options.plan_wait_seconds = within ? 5.0 : 0.02;
  INFO((within ? "a plan of 20 ms, a wait of 5 s" : "a plan of 400 ms, a wait of 20 ms"));
  PoolEngine engine(d, options, /*synchronous_detection=*/false);
  Program p(engine, d);
  Layered model;
  model.setup(p);
  const std::uint64_t per_step = 1 + 3 * model.layers;
  std::vector<std::uint64_t> from_pool;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < 3; ++s) {
    model.step(p);
    from_pool.push_back(engine.summary().allocs_from_pool);
  }
  const auto three_steps = std::chrono::steady_clock::now() - start;
  if (within) {
    INFO("from the pool after each step: " << Catch::Detail::stringify(from_pool));
    CHECK(from_pool[1] == 0);
    CHECK(from_pool[2] == per_step);  // as with MEMTOOL_POOL_SYNC_PLANNING
  } else {
    // The boundary waited 20 ms, not the plan's 400: the steps went on, passed through.
    CHECK(from_pool[2] == 0);
    CHECK(three_steps < std::chrono::milliseconds(400));
    engine.wait_for_planner(Summary{});
    model.step(p);  // the plan is ready: served from the boundary after this step
    CHECK(engine.summary().allocs_from_pool == 0);
  }
  for (int s = 0; s < 3; ++s) model.step(p);
  const Summary s = engine.summary();
  CHECK(s.plans_made == 1);
  CHECK(s.misses == 0);
  CHECK(s.replans == 0);
  CHECK(s.iterations_planned == (within ? 4U : 3U));
  CHECK(s.worst_step_served == 1.0);
  model.teardown(p);
  check_clean(p, d);
  engine.shutdown();
}

TEST_CASE("pool, a wait of 0: the boundary never waits; the plan serves from the first boundary after it is ready",
          "[engine][coverage]") {
  // MEMTOOL_POOL_PLAN_WAIT=0, the behaviour before the wait: a plan of 400 ms on the planner's
  // thread, steps of microseconds. The steps go on at once, passed through.
  SimDevice d;
  PoolOptions options;
  options.plan_override = slow_best(std::chrono::milliseconds(400));
  options.plan_wait_seconds = 0;
  PoolEngine engine(d, options, /*synchronous_detection=*/false);
  Program p(engine, d);
  Layered model;
  model.setup(p);
  const std::uint64_t per_step = 1 + 3 * model.layers;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < 3; ++s) model.step(p);
  const auto three_steps = std::chrono::steady_clock::now() - start;
  CHECK(engine.summary().allocs_from_pool == 0);
  CHECK(three_steps < std::chrono::milliseconds(400));  // a wait of any length would be the plan's
  engine.wait_for_planner(Summary{});
  model.step(p);  // the plan is ready: served from the boundary after this step
  CHECK(engine.summary().allocs_from_pool == 0);
  model.step(p);
  CHECK(engine.summary().allocs_from_pool == per_step);
  const Summary s = engine.summary();
  CHECK(s.plans_made == 1);
  CHECK(s.misses == 0);
  CHECK(s.worst_step_served == 1.0);
  model.teardown(p);
  check_clean(p, d);
  engine.shutdown();
}
