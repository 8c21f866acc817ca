// Trying to break invariant 1 and 2: wrong plans, shapes that change, extra allocations, late
// frees, many threads. Whatever happens: no overlap, no corrupted byte, no unordered reuse.
#include <catch2/catch.hpp>

#include <deque>
#include <random>
#include <thread>

#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

TEST_CASE("a wrong plan (everything at offset 0) is refused at hand-out", "[engine][invariant1]") {
  SimDevice d;
  PoolOptions o = sync_options();
  o.validate_plan = false;
  o.plan_override = [](const memtool::trace::Problem& problem) {
    memtool::planner::Placement wrong;
    wrong.offsets.assign(problem.buffers.size(), 0);
    for (const auto& b : problem.buffers) {
      wrong.pool_size = std::max(wrong.pool_size, memtool::planner::footprint(b));
    }
    return wrong;
  };
  PoolEngine engine(d, o);
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 12; ++it) mlp.iteration(p, 4);
  const Summary s = engine.summary();
  CHECK(s.plans_made >= 1);
  CHECK(s.refusals > 0);
  CHECK(s.allocs_from_pool > 0);  // the first buffer of each iteration still fits
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE("the default checker rejects a wrong plan outright", "[engine][invariant1]") {
  SimDevice d;
  PoolOptions o = sync_options();
  o.plan_override = [](const memtool::trace::Problem& problem) {
    memtool::planner::Placement wrong;
    wrong.offsets.assign(problem.buffers.size(), 0);
    wrong.pool_size = 1 << 20;
    return wrong;
  };
  PoolEngine engine(d, o);
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 10; ++it) mlp.iteration(p, 4);
  const Summary s = engine.summary();
  CHECK(s.plan_failures >= 1);
  CHECK(s.allocs_from_pool == 0);
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE_METHOD(EngineRig, "shape changing every few iterations: drift, re-plans, never an overlap",
                 "[engine][drift]") {
  ConvNet net;
  net.setup(p);
  const std::uint64_t scales[] = {1, 1, 3, 2};
  for (int it = 0; it < 64; ++it) {
    // 16 iterations per shape; the loader prefetch keeps a pooled buffer live across the change,
    // so a growing pool must drain the old one instead of freeing it.
    net.iteration(p, scales[(it / 16) % 4]);
  }
  const Summary s = engine.summary();
  CHECK(s.replans >= 2);
  CHECK(s.plans_made >= 3);
  CHECK(s.misses > 0);
  CHECK(engine.state() == "apply");
  net.teardown(p);
  check_clean(p, d);
  engine.shutdown();
  CHECK(d.live_bytes() == 0);
}

TEST_CASE_METHOD(EngineRig, "random extra allocations and late frees", "[engine][drift]") {
  Mlp mlp;
  mlp.setup(p);
  std::mt19937 rng(12345);
  std::deque<std::pair<int, Buffer>> late;  // (iteration to free at, buffer)
  for (int it = 0; it < 60; ++it) {
    const int noise = static_cast<int>(rng() % 10);
    if (noise == 0) {
      late.emplace_back(it + 1 + static_cast<int>(rng() % 3), *p.alloc(kUnit * (1 + rng() % 40), 7));
    }
    mlp.iteration(p, it % 17 == 16 ? 5 : 4);  // an occasional evaluation-like pass
    if (noise == 1) {
      auto extra = *p.alloc(kUnit * (1 + rng() % 8), 7);
      p.use(extra, 7);
      p.use(extra, 8);
      p.free(extra, 0);
    }
    while (!late.empty() && late.front().first <= it) {
      p.use(late.front().second, 8);
      p.free(late.front().second);
      late.pop_front();
    }
  }
  for (auto& [when, b] : late) p.free(b);
  const Summary s = engine.summary();
  CHECK(s.allocs_from_pool > 100);
  CHECK(s.misses > 0);
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE("many threads share one engine", "[engine][threads]") {
  SimDevice d;
  PoolOptions o;  // asynchronous planning, as in the process
  o.plan_time_limit_seconds = 0.02;
  PoolEngine engine(d, o);
  Program p(engine, d);
  Mlp shared;
  shared.setup(p);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p, t] {
      Mlp mine;
      mine.stream = static_cast<StreamId>(100 + t);
      mine.setup(p);
      for (int it = 0; it < 25; ++it) mine.iteration(p, static_cast<std::uint64_t>(1 + t));
      mine.teardown(p);
    });
  }
  for (int it = 0; it < 25; ++it) shared.iteration(p, 2);
  for (auto& t : threads) t.join();
  engine.wait_for_planner(Summary{});
  shared.teardown(p);
  check_clean(p, d);
  const Summary s = engine.summary();
  CHECK(s.allocs_passed_through + s.allocs_from_pool == 5 * (3 + 25 * 9));
}

TEST_CASE("single-threaded run after a noisy multi-threaded start converges", "[engine][threads]") {
  SimDevice d;
  PoolOptions o = sync_options();
  PoolEngine engine(d, o);
  Program p(engine, d);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&p, t] {
        Mlp m;
        m.stream = static_cast<StreamId>(200 + t);
        m.setup(p);
        for (int it = 0; it < 6; ++it) m.iteration(p, 2);
        m.teardown(p);
      });
    }
    for (auto& t : threads) t.join();
  }
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 40; ++it) mlp.iteration(p, 3);
  CHECK(engine.state() == "apply");
  CHECK(engine.summary().allocs_from_pool > 0);
  mlp.teardown(p);
  check_clean(p, d);
}
