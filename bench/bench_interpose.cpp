// What libmemtool.so adds to an intercepted driver call in record mode (goal: ≤ 100 ns): the
// same allocation/free pair and the same kernel launch, once straight into fakecuda and once
// through libmemtool.so's exported wrappers (recording into a trace file), in one run.
//
// Both libraries are loaded with dlopen from the build tree (FAKECUDA_DIR / MEMTOOL_PRELOAD
// override the paths): fakecuda first, then libmemtool.so, whose wrappers find fakecuda's
// functions as a preloaded libmemtool.so would. Launches run an empty kernel (count 0) so that
// fakecuda's worker thread does little; every 64 launches both variants synchronise.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memtool/interpose/recorder.hpp"

namespace {

namespace fs = std::filesystem;

using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);
using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**);
using Sync = CUresult (*)(CUstream);

struct Api {
  Alloc alloc = nullptr;
  Free free = nullptr;
  Launch launch = nullptr;
  Sync sync = nullptr;
};

struct Setup {
  Api direct;
  Api recorded;
  CUfunction kernel = nullptr;
  CUstream stream = nullptr;
  std::string error;
};

fs::path build_dir() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path();  // build/bench/x → build
}

std::string path_from(const char* variable, const fs::path& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback.string();
}

template <class F>
F symbol(void* library, const char* name) {
  void* found = dlsym(library, name);
  if (found == nullptr) throw std::runtime_error(std::string("missing ") + name);
  return reinterpret_cast<F>(found);
}

Api api_of(void* library) {
  return Api{symbol<Alloc>(library, "cuMemAlloc_v2"), symbol<Free>(library, "cuMemFree_v2"),
             symbol<Launch>(library, "cuLaunchKernel"), symbol<Sync>(library, "cuStreamSynchronize")};
}

Setup make_setup() {
  Setup s;
  try {
    const fs::path build = build_dir();
    const std::string fakecuda = path_from("FAKECUDA_DIR", build / "tests/fakecuda") + "/libcuda.so.1";
    const std::string preload = path_from("MEMTOOL_PRELOAD", build / "interpose/libmemtool.so");
    const std::string module_image = path_from("APP_MODULE_IMAGE", build / "tests/apps/app_kernels.fakecuda");
    const std::string trace = (fs::temp_directory_path() / ("bench_interpose." + std::to_string(getpid()) + ".trace")).string();
    setenv("MEMTOOL_TRACE", trace.c_str(), 1);
    static std::string trace_path = trace;  // removed after libmemtool.so closed it (atexit order)
    std::atexit([] { std::remove(trace_path.c_str()); });
    setenv("MEMTOOL_LOG", "error", 1);

    void* driver = dlopen(fakecuda.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (driver == nullptr) throw std::runtime_error(dlerror());
    void* memtool = dlopen(preload.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (memtool == nullptr) throw std::runtime_error(dlerror());
    s.direct = api_of(driver);
    s.recorded = api_of(memtool);

    auto init = symbol<CUresult (*)(unsigned)>(driver, "cuInit");
    auto device_get = symbol<CUresult (*)(CUdevice*, int)>(driver, "cuDeviceGet");
    auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(driver, "cuDevicePrimaryCtxRetain");
    auto set_current = symbol<CUresult (*)(CUcontext)>(driver, "cuCtxSetCurrent");
    auto load = symbol<CUresult (*)(CUmodule*, const void*)>(driver, "cuModuleLoadData");
    auto get_function = symbol<CUresult (*)(CUfunction*, CUmodule, const char*)>(driver, "cuModuleGetFunction");
    auto stream_create = symbol<CUresult (*)(CUstream*, unsigned)>(driver, "cuStreamCreate");
    std::ifstream file(module_image);
    std::stringstream image;
    image << file.rdbuf();
    const std::string text = image.str();
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUmodule module = nullptr;
    if (init(0) != CUDA_SUCCESS || device_get(&device, 0) != CUDA_SUCCESS || retain(&context, device) != CUDA_SUCCESS ||
        set_current(context) != CUDA_SUCCESS || load(&module, text.c_str()) != CUDA_SUCCESS ||
        get_function(&s.kernel, module, "relu_forward") != CUDA_SUCCESS ||
        stream_create(&s.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      throw std::runtime_error("fakecuda set-up failed (module image " + module_image + ")");
    }
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

Setup& setup() {
  static Setup s = make_setup();
  return s;
}

void alloc_free(benchmark::State& state, bool recorded) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const Api& api = recorded ? s.recorded : s.direct;
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (api.alloc(&p, 4096) != CUDA_SUCCESS || api.free(p) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      break;
    }
  }
  state.SetLabel("cuMemAlloc_v2 + cuMemFree_v2 (2 intercepted calls)");
}

void launch(benchmark::State& state, bool recorded) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const Api& api = recorded ? s.recorded : s.direct;
  CUdeviceptr z = 0;
  CUdeviceptr a = 0;
  (void)api.alloc(&z, 256);  // live buffers for the argument scan to find
  (void)api.alloc(&a, 256);
  int count = 0;  // an empty kernel: we measure the call, not the CPU "GPU"
  void* params[] = {&z, &a, &count};
  std::size_t n = 0;
  for (auto _ : state) {
    if (api.launch(s.kernel, 1, 1, 1, 32, 1, 1, 0, s.stream, params, nullptr) != CUDA_SUCCESS) {
      state.SkipWithError("launch failed");
      break;
    }
    if (++n % 64 == 0) (void)api.sync(s.stream);  // the same in both: bounds fakecuda's queue
  }
  (void)api.sync(s.stream);
  (void)api.free(z);
  (void)api.free(a);
  state.SetLabel("cuLaunchKernel, 2 pointer arguments");
}

// The added cost itself, measured in pairs: each iteration times a block of calls straight
// into fakecuda and then the same block through libmemtool.so, and keeps the difference per
// call. fakecuda's own time (system calls, the stream thread) varies from block to block far
// more than what we add, so the separate direct/recorded means above are noisy; the median of
// many paired differences (timed in the calling thread's CPU time) is steadier. Reported as the counter added_ns (per intercepted call).
double median(std::vector<double>& values) {
  if (values.empty()) return 0.0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// The calling thread's CPU time: what the recorder adds runs on the caller, while fakecuda's
// stream thread and the waits in a synchronisation (scheduling noise on a shared machine)
// are left out, the same in both blocks.
double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <class Block>
void paired(benchmark::State& state, Block block, double calls_per_block) {
  std::vector<double> added;
  added.reserve(1 << 16);
  bool direct_first = true;  // alternated, so that neither side always runs with a warm cache
  for (auto _ : state) {
    const Api& first = direct_first ? setup().direct : setup().recorded;
    const Api& second = direct_first ? setup().recorded : setup().direct;
    const double t0 = thread_cpu_ns();
    block(first);
    const double t1 = thread_cpu_ns();
    block(second);
    const double t2 = thread_cpu_ns();
    const double direct = direct_first ? t1 - t0 : t2 - t1;
    const double recorded = direct_first ? t2 - t1 : t1 - t0;
    added.push_back((recorded - direct) / calls_per_block);
    direct_first = !direct_first;
  }
  state.counters["added_ns"] = median(added);
}

void added_alloc_free(benchmark::State& state) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  constexpr int kPairs = 16;
  paired(
      state,
      [](const Api& api) {
        for (int i = 0; i < kPairs; ++i) {
          CUdeviceptr p = 0;
          (void)api.alloc(&p, 4096);
          (void)api.free(p);
        }
      },
      2.0 * kPairs);
  state.SetLabel("median over blocks of 16 alloc+free pairs: recorded - direct, per call");
}

void added_launch(benchmark::State& state) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  constexpr int kLaunches = 64;
  CUdeviceptr z = 0;
  CUdeviceptr a = 0;
  (void)s.recorded.alloc(&z, 256);  // recorded, so that the argument scan finds them
  (void)s.recorded.alloc(&a, 256);
  int count = 0;
  void* params[] = {&z, &a, &count};
  paired(
      state,
      [&](const Api& api) {
        for (int i = 0; i < kLaunches; ++i) (void)api.launch(s.kernel, 1, 1, 1, 32, 1, 1, 0, s.stream, params, nullptr);
        (void)api.sync(s.stream);  // both blocks end drained; the recorded sync is 1/65 of its calls
      },
      kLaunches + 1.0);
  (void)s.recorded.free(z);
  (void)s.recorded.free(a);
  state.SetLabel("median over blocks of 64 launches + 1 sync: recorded - direct, per call");
}

// The engine alone (no driver, no wrapper): where the added cost goes.
struct EngineOnly {
  std::unique_ptr<memtool::interpose::Recorder> recorder;
  std::string path;
  EngineOnly() {
    path = (fs::temp_directory_path() / ("bench_engine." + std::to_string(getpid()) + ".trace")).string();
    std::string error;
    recorder = std::make_unique<memtool::interpose::Recorder>(memtool::interpose::default_options(),
                                                              memtool::interpose::open_trace_sink(path, &error));
    memtool::interpose::DriverQueries queries;
    queries.func_get_param_info = [](CUfunction, size_t i, size_t* offset, size_t* size) {
      if (i >= 3) return CUDA_ERROR_INVALID_VALUE;
      *offset = i * 8;
      *size = i < 2 ? 8 : 4;
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
      state.counters["detect_thread_ns"] = static_cast<double>(stats.detection_cpu_ns) / static_cast<double>(stats.events);
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
  const auto function = reinterpret_cast<CUfunction>(0x1234);
  for (auto _ : state) engine.recorder->on_launch(function, 0, memtool::interpose::LaunchArgs{params, nullptr});
  engine.report_detection(state);
  state.SetLabel("Recorder::on_launch, 2 pointer arguments, trace file, no driver");
}

BENCHMARK(engine_alloc_free);
BENCHMARK(engine_launch);
BENCHMARK_CAPTURE(alloc_free, direct, false);
BENCHMARK_CAPTURE(alloc_free, recorded, true);
BENCHMARK_CAPTURE(launch, direct, false);
BENCHMARK_CAPTURE(launch, recorded, true);
BENCHMARK(added_alloc_free);
BENCHMARK(added_launch);

}  // namespace

BENCHMARK_MAIN();
