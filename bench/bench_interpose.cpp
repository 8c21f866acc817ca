// What libmemtool.so adds to an intercepted driver call in record mode (goal: ≤ 100 ns), on
// fakecuda: the same allocation/free pairs and kernel launches, straight into fakecuda and
// through libmemtool.so, timed in pairs (interpose_overhead.hpp; tests/gpu/run.sh measures the
// same on a real driver with overhead_probe). Then the engine alone, where the cost goes.
//
// Paths: the build tree's fakecuda, libmemtool.so and module image; FAKECUDA_DIR,
// MEMTOOL_PRELOAD and APP_MODULE_IMAGE override them (e.g. to compare two libmemtool.so).
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// The interposer's view of cuda.h first (it must be the first CUDA header).
#include "memtool/interpose/recorder.hpp"

#include "interpose_overhead.hpp"

namespace {

namespace fs = std::filesystem;
using memtool::bench::OverheadSetup;

std::string path_from(const char* variable, const fs::path& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback.string();
}

const OverheadSetup& setup() {
  static const OverheadSetup s = [] {
    std::error_code ec;
    const fs::path build = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path();  // build/bench/x
    memtool::bench::OverheadPaths paths;
    paths.driver = path_from("FAKECUDA_DIR", build / "tests/fakecuda") + "/libcuda.so.1";
    paths.preload = path_from("MEMTOOL_PRELOAD", build / "interpose/libmemtool.so");
    paths.module_image = path_from("APP_MODULE_IMAGE", build / "tests/apps/app_kernels.fakecuda");
    return memtool::bench::open_overhead_setup(paths);
  }();
  return s;
}

// Reported as the counter added_ns (per intercepted call): the median of the paired samples.
template <class Block>
void added(benchmark::State& state, Block& block, double calls_per_block) {
  std::vector<double> samples;
  samples.reserve(1 << 16);
  bool direct_first = true;
  for (auto _ : state) {
    samples.push_back(memtool::bench::paired_sample(setup(), block, calls_per_block, direct_first));
    direct_first = !direct_first;
  }
  state.counters["added_ns"] = memtool::bench::median(samples);
}

void added_alloc_free(benchmark::State& state) {
  if (!setup().error.empty()) {
    state.SkipWithError(setup().error.c_str());
    return;
  }
  auto block = memtool::bench::alloc_free_block;
  added(state, block, memtool::bench::kAllocFreeCalls);
  state.SetLabel("median over blocks of 16 alloc+free pairs: recorded - direct, per call");
}

void added_launch(benchmark::State& state) {
  if (!setup().error.empty()) {
    state.SkipWithError(setup().error.c_str());
    return;
  }
  memtool::bench::LaunchBlock block(setup());
  added(state, block, memtool::bench::kLaunchCalls);
  state.SetLabel("median over blocks of 64 launches + 1 sync: recorded - direct, per call");
}

const auto kWideKernel = reinterpret_cast<CUfunction>(0x5678);

// The engine alone (no driver, no wrapper): where the added cost goes.
struct EngineOnly {
  std::unique_ptr<memtool::interpose::Recorder> recorder;
  std::string path;
  EngineOnly() {
    path = (fs::temp_directory_path() / ("bench_engine." + std::to_string(getpid()) + ".trace")).string();
    std::string error;
    recorder = std::make_unique<memtool::interpose::Recorder>(memtool::interpose::default_options(),
                                                              memtool::interpose::open_trace_sink(path, 0, &error));
    memtool::interpose::DriverQueries queries;
    queries.func_get_param_info = [](CUfunction function, size_t i, size_t* offset, size_t* size) {
      const bool wide = function == kWideKernel;  // 8 arguments of 8 bytes; others: 2 pointers + an int
      if (i >= (wide ? 8u : 3u)) return CUDA_ERROR_INVALID_VALUE;
      *offset = i * 8;
      *size = wide || i < 2 ? 8 : 4;
      return CUDA_SUCCESS;
    };
    queries.func_get_name = [](const char** name, CUfunction) {
      *name = "relu_forward";
      return CUDA_SUCCESS;
    };
    recorder->set_driver_queries(queries);
  }
  // The iteration detector runs on its own thread, off the timed one: its CPU time per event
  // is reported as a counter (after a pause long enough for it to catch up), so the cost
  // that moved is still in sight.
  void report_detection(benchmark::State& state) const {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    const memtool::interpose::RecorderStats stats = recorder->stats();
    if (stats.events > 0) {
      state.counters["detect_thread_ns"] =
          static_cast<double>(stats.detection_cpu_ns) / static_cast<double>(stats.events);
    }
  }
  ~EngineOnly() {
    recorder.reset();
    std::remove(path.c_str());
  }
};

void engine_alloc_free(benchmark::State& state) {
  EngineOnly engine;
  std::uint64_t address = 0x7f0000000000;
  for (auto _ : state) {
    engine.recorder->on_alloc(address, 4096, memtool::trace::MemoryKind::device, 0);
    engine.recorder->on_free(address, memtool::trace::MemoryKind::device, 0);
    address += 4096;
  }
  engine.report_detection(state);
  state.SetLabel("Recorder::on_alloc + on_free, trace file, no driver");
}

void engine_launch(benchmark::State& state) {
  EngineOnly engine;
  engine.recorder->on_alloc(0x7f0000000000, 256, memtool::trace::MemoryKind::device, 0);
  engine.recorder->on_alloc(0x7f0000001000, 256, memtool::trace::MemoryKind::device, 0);
  std::uint64_t z = 0x7f0000000000;
  std::uint64_t a = 0x7f0000001000;
  int count = 0;
  void* params[] = {&z, &a, &count};
  // Training launches a different kernel almost every time: cycle through range(0) of them.
  std::vector<CUfunction> functions;
  for (std::int64_t k = 0; k < state.range(0); ++k)
    functions.push_back(reinterpret_cast<CUfunction>(0x1000 + 0x40 * k));
  std::size_t next = 0;
  for (auto _ : state) {
    engine.recorder->on_launch(functions[next], 0, memtool::interpose::LaunchArgs{params, nullptr});
    next = next + 1 == functions.size() ? 0 : next + 1;
  }
  engine.report_detection(state);
  state.SetLabel("Recorder::on_launch, 2 pointer arguments, N kernels in turn, trace file, no driver");
}

// A launch among many live buffers (PyTorch without its caching allocator keeps hundreds to
// thousands alive): 4 pointer and 4 scalar arguments, pointers into buffers spread over the
// range, one kernel.
void engine_launch_live(benchmark::State& state) {
  EngineOnly engine;
  const auto live = static_cast<std::uint64_t>(state.range(0));
  constexpr std::uint64_t kBase = 0x7f0000000000;
  for (std::uint64_t i = 0; i < live; ++i) {
    engine.recorder->on_alloc(kBase + i * 0x10000, 0x1000 + (i % 7) * 0x800, memtool::trace::MemoryKind::device, 0);
  }
  std::uint64_t words[8] = {};
  void* params[8];
  for (int i = 0; i < 8; ++i) params[i] = &words[i];
  std::uint64_t n = 0;
  for (auto _ : state) {
    for (int i = 0; i < 4; ++i)
      words[i] = kBase + ((n * 7 + static_cast<std::uint64_t>(i) * 131) % live) * 0x10000 + 0x40;
    for (int i = 4; i < 8; ++i) words[i] = n + static_cast<std::uint64_t>(i);  // sizes, strides
    engine.recorder->on_launch(kWideKernel, 0, memtool::interpose::LaunchArgs{params, nullptr});
    ++n;
  }
  engine.report_detection(state);
  state.SetLabel("Recorder::on_launch, 4 pointer + 4 scalar arguments, N live buffers");
}

BENCHMARK(engine_alloc_free);
BENCHMARK(engine_launch)->Arg(1)->Arg(64);
BENCHMARK(engine_launch_live)->Arg(16)->Arg(1000)->Arg(10000);
BENCHMARK(added_alloc_free);
BENCHMARK(added_launch);

}  // namespace

BENCHMARK_MAIN();
