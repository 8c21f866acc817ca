// What libmemtool.so adds to an intercepted driver call in record mode, measured in pairs:
// a block of calls straight into the driver, then the same block through libmemtool.so's
// exported wrappers (recording into a trace file), in the calling thread's CPU time, and the
// difference per call. The driver's own time (system calls, its threads) varies from block to
// block far more than what we add, so the median of many paired differences is the figure.
//
// Shared by bench_interpose (on fakecuda) and overhead_probe (on a real driver, from
// tests/gpu/run.sh). Both libraries are dlopen'ed: the driver first (RTLD_GLOBAL), then
// libmemtool.so (RTLD_LOCAL), whose wrappers find the driver's functions as a preloaded
// libmemtool.so would.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace memtool::bench {

struct DriverApi {
  CUresult (*alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*free)(CUdeviceptr) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                     void**) = nullptr;
  CUresult (*sync)(CUstream) = nullptr;
};

struct OverheadPaths {
  std::string driver;        // libcuda.so.1 (fakecuda's or the real one)
  std::string preload;       // libmemtool.so
  std::string module_image;  // a module holding `kernel` (app_kernels.fakecuda or .fatbin)
  std::string kernel = "relu_forward";
};

struct OverheadSetup {
  DriverApi direct;
  DriverApi recorded;
  CUfunction kernel = nullptr;
  CUstream stream = nullptr;
  std::string error;  // empty when usable
};

namespace detail {
template <class F>
F symbol(void* library, const char* name) {
  void* found = dlsym(library, name);
  if (found == nullptr) throw std::runtime_error(std::string("missing ") + name);
  return reinterpret_cast<F>(found);
}
inline DriverApi api_of(void* library) {
  DriverApi api;
  api.alloc = symbol<decltype(api.alloc)>(library, "cuMemAlloc_v2");
  api.free = symbol<decltype(api.free)>(library, "cuMemFree_v2");
  api.launch = symbol<decltype(api.launch)>(library, "cuLaunchKernel");
  api.sync = symbol<decltype(api.sync)>(library, "cuStreamSynchronize");
  return api;
}
}  // namespace detail

// Loads both libraries, records into a temporary trace (removed at exit), and sets up a
// context, the module's kernel and a stream. Once per process.
inline OverheadSetup open_overhead_setup(const OverheadPaths& paths) {
  namespace fs = std::filesystem;
  using detail::symbol;
  OverheadSetup s;
  try {
    static const std::string trace =
        (fs::temp_directory_path() / ("memtool_overhead." + std::to_string(getpid()) + ".trace")).string();
    setenv("MEMTOOL_TRACE", trace.c_str(), 1);
    std::atexit([] { std::remove(trace.c_str()); });  // after libmemtool.so closed it (atexit order)
    setenv("MEMTOOL_LOG", "error", 1);
    // Record mode as it is measured: the CUPTI tracer off unless the caller asks for it
    // (MEMTOOL_CUPTI=on with MEMTOOL_CUPTI_LIBRARY: bench/cupti_overhead.sh, tests/gpu/run.sh).
    setenv("MEMTOOL_CUPTI", "off", 0);

    void* driver = dlopen(paths.driver.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (driver == nullptr) throw std::runtime_error(dlerror());
    void* memtool = dlopen(paths.preload.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (memtool == nullptr) throw std::runtime_error(dlerror());
    s.direct = detail::api_of(driver);
    s.recorded = detail::api_of(memtool);

    auto init = symbol<CUresult (*)(unsigned)>(driver, "cuInit");
    auto device_get = symbol<CUresult (*)(CUdevice*, int)>(driver, "cuDeviceGet");
    auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(driver, "cuDevicePrimaryCtxRetain");
    auto set_current = symbol<CUresult (*)(CUcontext)>(driver, "cuCtxSetCurrent");
    auto load = symbol<CUresult (*)(CUmodule*, const void*)>(driver, "cuModuleLoadData");
    auto get_function = symbol<CUresult (*)(CUfunction*, CUmodule, const char*)>(driver, "cuModuleGetFunction");
    auto stream_create = symbol<CUresult (*)(CUstream*, unsigned)>(driver, "cuStreamCreate");
    std::ifstream file(paths.module_image, std::ios::binary);
    std::stringstream image;
    image << file.rdbuf();
    static const std::string bytes = image.str();  // the driver may keep pointing into it
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUmodule module = nullptr;
    if (init(0) != CUDA_SUCCESS || device_get(&device, 0) != CUDA_SUCCESS || retain(&context, device) != CUDA_SUCCESS ||
        set_current(context) != CUDA_SUCCESS || load(&module, bytes.data()) != CUDA_SUCCESS ||
        get_function(&s.kernel, module, paths.kernel.c_str()) != CUDA_SUCCESS ||
        stream_create(&s.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      throw std::runtime_error("driver set-up failed (driver " + paths.driver + ", module " + paths.module_image + ")");
    }
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

// The calling thread's CPU time: what the recorder adds runs on the caller, while the
// driver's threads and the waits in a synchronisation are left out, the same in both blocks.
inline double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// One paired sample: `block(api)` timed straight and recorded, in the given order (callers
// alternate it, so that neither side always runs with warm caches). Returns the difference
// per call and adds the direct block's time per call to *direct_ns.
template <class Block>
double paired_sample(const OverheadSetup& s, Block&& block, double calls_per_block, bool direct_first,
                     double* direct_ns = nullptr) {
  const DriverApi& first = direct_first ? s.direct : s.recorded;
  const DriverApi& second = direct_first ? s.recorded : s.direct;
  const double t0 = thread_cpu_ns();
  block(first);
  const double t1 = thread_cpu_ns();
  block(second);
  const double t2 = thread_cpu_ns();
  const double direct = direct_first ? t1 - t0 : t2 - t1;
  const double recorded = direct_first ? t2 - t1 : t1 - t0;
  if (direct_ns != nullptr) *direct_ns = direct / calls_per_block;
  return (recorded - direct) / calls_per_block;
}

// The blocks: 16 allocation + free pairs of 4 KiB; 64 launches of an empty kernel with two
// pointer arguments (live, recorded buffers) and one synchronisation.
inline constexpr int kAllocFreePairs = 16;
inline constexpr double kAllocFreeCalls = 2.0 * kAllocFreePairs;
inline void alloc_free_block(const DriverApi& api) {
  for (int i = 0; i < kAllocFreePairs; ++i) {
    CUdeviceptr p = 0;
    (void)api.alloc(&p, 4096);
    (void)api.free(p);
  }
}

inline constexpr int kLaunches = 64;
inline constexpr double kLaunchCalls = kLaunches + 1.0;
struct LaunchBlock {
  const OverheadSetup& s;
  CUdeviceptr z = 0;
  CUdeviceptr a = 0;
  int count = 0;  // an empty kernel: we measure the call, not the device
  void* params[3] = {&z, &a, &count};

  explicit LaunchBlock(const OverheadSetup& setup) : s(setup) {
    (void)s.recorded.alloc(&z, 256);  // recorded, so that the argument scan finds them
    (void)s.recorded.alloc(&a, 256);
  }
  ~LaunchBlock() {
    (void)s.recorded.free(z);
    (void)s.recorded.free(a);
  }
  LaunchBlock(const LaunchBlock&) = delete;
  LaunchBlock& operator=(const LaunchBlock&) = delete;
  void operator()(const DriverApi& api) {
    for (int i = 0; i < kLaunches; ++i) (void)api.launch(s.kernel, 1, 1, 1, 32, 1, 1, 0, s.stream, params, nullptr);
    (void)api.sync(s.stream);  // both blocks end drained; the sync is 1/65 of the calls
  }
};

}  // namespace memtool::bench
