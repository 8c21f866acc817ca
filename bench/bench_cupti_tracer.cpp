// What the CUPTI tracer adds to a launch on the program's thread, CUPTI's own work left out:
// the wrapper's check (tracer off), and with the tracer on the seq taken from the recorder and
// the external id pushed and popped around the real call — here through no-op stand-ins for
// CUPTI's push and pop, so the figure is memtool's share alone. (End to end, with fakecupti or a
// real libcupti doing its part: bench/cupti_overhead.sh, tests/gpu/run.sh.)
#include <benchmark/benchmark.h>

// The interposer's view of cuda.h first (it must be the first CUDA header).
#include "memtool/interpose/recorder.hpp"

#include "memtool/cupti/correlation.hpp"

void install_cupti_stubs();  // cupti_stubs.cpp

namespace {

[[gnu::noinline]] CUresult real_launch(int x) {
  benchmark::DoNotOptimize(x);
  return CUDA_SUCCESS;
}

// The wrapper's path for one launch: as interpose/preload/correlated_call.hpp does it.
[[gnu::noinline]] CUresult wrapped_launch(int x) {
  if (!memtool::cupti::correlating()) return real_launch(x);
  const std::uint64_t seq = memtool::interpose::Recorder::take_gpu_work_seq();
  if (seq == memtool::interpose::Recorder::kNoGpuWork) return real_launch(x);
  memtool::cupti::push_external_id(seq);
  const CUresult result = real_launch(x);
  memtool::cupti::pop_external_id();
  return result;
}

void launch_direct(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(real_launch(1));
}

void launch_tracer_off(benchmark::State& state) {
  memtool::cupti::detail::g_correlating.store(false);
  for (auto _ : state) benchmark::DoNotOptimize(wrapped_launch(1));
}

// Each launch is preceded by its recorded event (the recorder sets the seq the wrapper takes):
// recorded launches without and with the correlated call; the difference is the tracer's share.
struct RecordedLaunches {
  RecordedLaunches() : recorder(memtool::interpose::default_options(), nullptr) {
    recorder.set_driver_queries(memtool::interpose::DriverQueries{});
  }
  void record() { (void)recorder.on_launch(function, 0, memtool::interpose::LaunchArgs{}); }
  memtool::interpose::Recorder recorder;
  CUfunction function = reinterpret_cast<CUfunction>(std::uintptr_t{0x1000});
};

void recorded_launch_tracer_off(benchmark::State& state) {
  memtool::cupti::detail::g_correlating.store(false);
  RecordedLaunches launches;
  for (auto _ : state) {
    launches.record();
    benchmark::DoNotOptimize(wrapped_launch(1));
  }
}

void recorded_launch_tracer_on(benchmark::State& state) {
  install_cupti_stubs();
  memtool::cupti::detail::g_correlating.store(true);
  RecordedLaunches launches;
  for (auto _ : state) {
    launches.record();
    benchmark::DoNotOptimize(wrapped_launch(1));
  }
  memtool::cupti::detail::g_correlating.store(false);
}

}  // namespace

BENCHMARK(launch_direct);
BENCHMARK(launch_tracer_off);
BENCHMARK(recorded_launch_tracer_off);
BENCHMARK(recorded_launch_tracer_on);
BENCHMARK_MAIN();
