// Pool mode's hot path: allocation + free latency through the engine (observer and the pool
// strategy's runtime) in APPLY (served from the plan, occupancy checked, events recorded at
// frees) against a direct call of a trivial allocator (the Device below, which does nothing but
// hand out addresses), and the engine while still observing (pass-through + step finding). One
// run, side by side; the per-item time is one allocation plus its free.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>

#include "memtool/engine/engine.hpp"

namespace {

using namespace memtool::engine;

class NoopDevice final : public Device {
 public:
  Status allocate(std::uint64_t size, MemoryKind, StreamId, DevicePtr* out) override {
    *out = next_;
    next_ += (size + 511) / 512 * 512;
    return kSuccess;
  }
  Status free(DevicePtr, MemoryKind, StreamId) override { return kSuccess; }
  Status create_event(EventId* out) override {
    *out = ++events_;
    return kSuccess;
  }
  Status record_event(EventId, StreamId) override { return kSuccess; }
  Status stream_wait_event(StreamId, EventId) override { return kSuccess; }
  bool event_completed(EventId) override { return false; }  // worst case: always inherited
  void destroy_event(EventId) override {}

 private:
  DevicePtr next_ = 0x100000;
  EventId events_ = 0;
};

// One training-like iteration: 9 allocations, frees interleaved (an MLP's forward/backward).
template <typename Alloc, typename Free>
void iteration(Alloc&& alloc, Free&& release) {
  constexpr std::uint64_t kUnit = 1024;
  const auto x = alloc(16 * kUnit);
  const auto h1 = alloc(32 * kUnit);
  const auto h2 = alloc(32 * kUnit);
  const auto y = alloc(4 * kUnit);
  const auto loss = alloc(300);
  const auto dy = alloc(4 * kUnit);
  release(loss);
  release(y);
  const auto dh2 = alloc(32 * kUnit);
  release(dy);
  release(h2);
  const auto dh1 = alloc(32 * kUnit);
  release(dh2);
  release(h1);
  const auto scratch = alloc(3 * kUnit + 100);
  release(scratch);
  release(dh1);
  release(x);
}
constexpr std::int64_t kAllocsPerIteration = 9;

void BM_DirectTrivialAllocator(benchmark::State& state) {
  NoopDevice noop;
  Device* device = &noop;
  benchmark::DoNotOptimize(device);  // a virtual call, as the engine makes it
  auto alloc = [device](std::uint64_t size) {
    DevicePtr p = 0;
    device->allocate(size, MemoryKind::device, 0, &p);
    benchmark::DoNotOptimize(p);
    return p;
  };
  auto release = [device](DevicePtr p) { device->free(p, MemoryKind::device, 0); };
  for (auto _ : state) {
    iteration(alloc, release);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kAllocsPerIteration);
}
BENCHMARK(BM_DirectTrivialAllocator);

void run_engine(benchmark::State& state, bool warm_to_apply) {
  NoopDevice device;
  EngineOptions options;
  options.strategy.name = "pool";
  options.strategy.pool.synchronous_planning = true;
  options.strategy.pool.plan_time_limit_seconds = 0.05;
  options.observer.synchronous_detection = true;
  if (!warm_to_apply) options.observer.steps.confirm_periods = 1u << 30;  // never plans: observe forever
  Engine engine(device, options);
  const StreamId stream = 5;
  auto alloc = [&engine, stream](std::uint64_t size) {
    DevicePtr p = 0;
    engine.allocate(size, MemoryKind::device, 0, &p);
    engine.touch(p, stream);  // the launch that writes it
    return p;
  };
  auto release = [&engine](DevicePtr p) { engine.release(p, MemoryKind::device, 0); };
  for (int i = 0; i < 20; ++i) iteration(alloc, release);
  if (warm_to_apply && engine.state() != "apply") {
    state.SkipWithError("engine did not reach APPLY");
    return;
  }
  const auto from_pool = engine.summary().allocs_from_pool;
  for (auto _ : state) {
    iteration(alloc, release);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kAllocsPerIteration);
  const Summary s = engine.summary();
  state.counters["from_pool_fraction"] = static_cast<double>(s.allocs_from_pool - from_pool) /
                                         static_cast<double>(state.iterations() * kAllocsPerIteration);
  state.counters["misses"] = static_cast<double>(s.misses);
}

void BM_EngineApply(benchmark::State& state) { run_engine(state, true); }
BENCHMARK(BM_EngineApply);

void BM_EngineObserve(benchmark::State& state) { run_engine(state, false); }
BENCHMARK(BM_EngineObserve);

}  // namespace

BENCHMARK_MAIN();
