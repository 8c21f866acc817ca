// PoolEngine on training-like iteration streams: it detects the iteration, plans, serves from
// the pool with identical data, keeps stream order, and its pool is close to LB.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "program.hpp"

using namespace memtool::engine;
using namespace memtool::engine::test;

namespace {
// These tests plan with a 50 ms budget (the other engine tests: 20 ms).
struct ServingRig : EngineRig {
  ServingRig() : EngineRig(0.05) {}
};
}  // namespace

TEST_CASE("MLP: served from the pool after detection, data identical", "[engine][engine]") {
  SimDevice d;
  PoolOptions options = sync_options(0.05);
  const LogCapture capture;
  PoolEngine engine(d, options);
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  int first_apply = -1;
  for (int it = 0; it < 14; ++it) {
    mlp.iteration(p, 4);
    if (first_apply < 0 && engine.state() == "apply") first_apply = it;
  }
  const Summary s = engine.summary();
  CHECK(engine.state() == "apply");
  CHECK(first_apply >= 1);
  CHECK(first_apply <= 6);
  CHECK(s.plans_made == 1);
  CHECK(s.misses == 0);
  CHECK(s.replans == 0);
  CHECK(s.allocs_from_pool >= 5 * 9);
  CHECK(s.iterations_planned >= 5);
  CHECK(s.lower_bound_bytes > 0);
  CHECK(s.pool_bytes >= s.lower_bound_bytes);
  CHECK(static_cast<double>(s.pool_bytes) <= 1.05 * static_cast<double>(s.lower_bound_bytes));
  // Without the pool the program's temporaries peak at LB too; the pool adds nothing on top.
  CHECK(s.peak_device_bytes_with_pool <= s.peak_device_bytes_without_pool + s.pool_bytes);
  const MemInfo info = engine.mem_info();
  CHECK(info.pool_reserved == s.pool_bytes);
  CHECK(info.pool_in_use == 0);  // between iterations nothing pooled is live
  CHECK(info.passed_through_live == (64 + 128 + 32) * kUnit);
  CHECK(info.program_free(1000) == 1000 + s.pool_bytes);
  // Pooled allocations and frees never reach the driver: it saw the passed-through ones and
  // the pool.
  CHECK(d.allocate_calls() == s.allocs_passed_through + 1);
  CHECK(d.free_calls() == s.allocs_passed_through - 3);  // all but the weights are freed
  const std::vector<std::string> log = capture.lines();
  const auto applied = std::find_if(log.begin(), log.end(), [](const std::string& line) {
    return line.find("plan applied") != std::string::npos && line.find("LB") != std::string::npos;
  });
  CHECK(applied != log.end());
  mlp.teardown(p);
  check_clean(p, d);
  engine.shutdown();
  CHECK(d.live_bytes() == 0);  // pool released, nothing leaked
}

TEST_CASE_METHOD(ServingRig, "conv net: two streams trading buffers, every reuse ordered", "[engine][engine][stream]") {
  ConvNet net;
  net.setup(p);
  for (int it = 0; it < 16; ++it) net.iteration(p, 2);
  const Summary s = engine.summary();
  CHECK(engine.state() == "apply");
  CHECK(s.misses == 0);
  CHECK(s.allocs_from_pool > 40);
  CHECK(s.stream_waits > 0);  // the loader's buffers land in memory the compute stream used
  CHECK(d.waits() == s.stream_waits + p.app_waits);
  CHECK(static_cast<double>(s.pool_bytes) <= 1.05 * static_cast<double>(s.lower_bound_bytes));
  net.teardown(p);
  check_clean(p, d);
  std::printf("conv: pool %llu B, LB %llu B, peak with pool %llu B, without %llu B, waits %llu\n",
              static_cast<unsigned long long>(s.pool_bytes), static_cast<unsigned long long>(s.lower_bound_bytes),
              static_cast<unsigned long long>(s.peak_device_bytes_with_pool),
              static_cast<unsigned long long>(s.peak_device_bytes_without_pool),
              static_cast<unsigned long long>(s.stream_waits));
}

TEST_CASE("without the hooks' touch() the same run violates stream order", "[engine][stream]") {
  // Negative control: the test above can fail.
  SimDevice d;
  PoolEngine engine(d, sync_options(0.05));
  Program p(engine, d, /*hooks_touch=*/false);
  ConvNet net;
  net.setup(p);
  for (int it = 0; it < 16; ++it) net.iteration(p, 2);
  CHECK(engine.summary().allocs_from_pool > 0);
  CHECK(d.violations() > 0);
  net.teardown(p);
}

TEST_CASE_METHOD(ServingRig, "async allocations keep their stream-ordered meaning", "[engine][engine][stream]") {
  AsyncPipeline pipe;
  for (int it = 0; it < 16; ++it) pipe.iteration(p);
  const Summary s = engine.summary();
  CHECK(engine.state() == "apply");
  CHECK(s.allocs_from_pool > 20);
  CHECK(s.misses == 0);
  check_clean(p, d);
}

TEST_CASE_METHOD(ServingRig, "completed events are not waited on and are reused", "[engine][engine][stream]") {
  ConvNet net;
  net.setup(p);
  for (int it = 0; it < 8; ++it) net.iteration(p, 1);
  p.host_sync_before_alloc = true;  // every earlier use has finished at each hand-out
  net.iteration(p, 1);              // the prefetched batch was handed out before: its first use waits
  const auto waits_before = engine.summary().stream_waits;
  for (int it = 0; it < 8; ++it) net.iteration(p, 1);
  const Summary s = engine.summary();
  CHECK(s.allocs_from_pool > 20);
  CHECK(s.stream_waits == waits_before);
  CHECK(d.live_events() < 20);  // recycled, not one per free
  net.teardown(p);
  check_clean(p, d);
}

TEST_CASE("planning off the calling thread", "[engine][engine]") {
  SimDevice d;
  PoolOptions o;
  o.plan_time_limit_seconds = 0.05;
  PoolEngine engine(d, o);
  Program p(engine, d);
  Mlp mlp;
  mlp.setup(p);
  const Summary before = engine.summary();
  for (int it = 0; it < 6; ++it) mlp.iteration(p, 2);
  engine.wait_for_planner(before);
  for (int it = 0; it < 6; ++it) mlp.iteration(p, 2);
  CHECK(engine.state() == "apply");
  CHECK(engine.summary().allocs_from_pool > 0);
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE_METHOD(ServingRig, "explicit iteration marks", "[engine][engine]") {
  Mlp mlp;
  mlp.setup(p);
  for (int it = 0; it < 10; ++it) {
    engine.mark_iteration();
    mlp.iteration(p, 3);
  }
  const Summary s = engine.summary();
  CHECK(engine.state() == "apply");
  CHECK(s.allocs_from_pool >= 9 * 4);
  CHECK(s.misses == 0);
  mlp.teardown(p);
  check_clean(p, d);
}

TEST_CASE_METHOD(ServingRig, "explicit marks: an extra allocation at the end is a miss, not a shift",
                 "[engine][engine]") {
  Mlp mlp;
  mlp.setup(p);
  std::uint64_t extras_applied = 0;
  for (int it = 0; it < 16; ++it) {
    engine.mark_iteration();
    mlp.iteration(p, 3);
    if (it % 4 == 3) {
      const bool applying = engine.state() == "apply";
      auto extra = *p.alloc(5 * kUnit, 7);
      p.free(extra);
      if (applying) ++extras_applied;
    }
  }
  const Summary s = engine.summary();
  REQUIRE(engine.state() == "apply");
  CHECK(extras_applied >= 2);
  CHECK(s.misses == extras_applied);
  CHECK(s.replans == 0);
  mlp.teardown(p);
  check_clean(p, d);
}
