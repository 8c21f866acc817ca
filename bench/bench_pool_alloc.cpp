// Allocation latency as a program sees it: cuMemAlloc_v2 + cuMemFree_v2 of one "iteration" (a
// fixed pattern of 16 buffers, 512 B to 1 MiB, freed in a shuffled order), through whatever
// libcuda.so.1 the loader gives: fakecuda alone, or fakecuda under libmemtool.so with
// MEMTOOL_STRATEGY=pool (then the pattern is detected, planned, and served from the pool) or
// record. bench/apps_pool_vs_plain.sh runs it in each setting and prints the figures side by
// side; alone, without a driver, it skips.
#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <cstdlib>

#include <cuda.h>

namespace {

using Init = CUresult (*)(unsigned int);
using DeviceGet = CUresult (*)(CUdevice*, int);
using Retain = CUresult (*)(CUcontext*, CUdevice);
using SetCurrent = CUresult (*)(CUcontext);
using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);

struct Driver {
  Alloc alloc = nullptr;
  Free free = nullptr;
  bool ok = false;
};

// The driver through dlopen + dlsym, as cudart-less programs reach it (libmemtool.so's dlsym
// hands out its wrappers when it is preloaded).
const Driver& driver() {
  static const Driver d = [] {
    Driver out;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return out;
    const auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    const auto device_get = reinterpret_cast<DeviceGet>(dlsym(lib, "cuDeviceGet"));
    const auto retain = reinterpret_cast<Retain>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    const auto set_current = reinterpret_cast<SetCurrent>(dlsym(lib, "cuCtxSetCurrent"));
    out.alloc = reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2"));
    out.free = reinterpret_cast<Free>(dlsym(lib, "cuMemFree_v2"));
    CUdevice device = 0;
    CUcontext context = nullptr;
    out.ok = init != nullptr && device_get != nullptr && retain != nullptr && set_current != nullptr &&
             out.alloc != nullptr && out.free != nullptr && init(0) == CUDA_SUCCESS &&
             device_get(&device, 0) == CUDA_SUCCESS && retain(&context, device) == CUDA_SUCCESS &&
             set_current(context) == CUDA_SUCCESS;
    return out;
  }();
  return d;
}

constexpr std::array<std::size_t, 16> kSizes = {512,    4096, 1 << 20, 65536, 1000,    300000, 8192,   2048,
                                                131072, 777,  49152,   16384, 1 << 19, 3000,   262144, 1536};
constexpr std::array<std::size_t, 16> kFreeOrder = {3, 0, 7, 12, 1, 5, 9, 14, 2, 8, 15, 4, 11, 6, 13, 10};

void BM_IterationAllocFree(benchmark::State& state) {
  const Driver& d = driver();
  if (!d.ok) {
    state.SkipWithError("no CUDA driver (run with LD_LIBRARY_PATH=<build>/tests/fakecuda)");
    return;
  }
  std::array<CUdeviceptr, kSizes.size()> ptrs{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kSizes.size(); ++i) {
      if (d.alloc(&ptrs[i], kSizes[i]) != CUDA_SUCCESS) {
        state.SkipWithError("cuMemAlloc_v2 failed");
        return;
      }
    }
    for (const std::size_t i : kFreeOrder) d.free(ptrs[i]);
    benchmark::ClobberMemory();
  }
  // Per allocation + free pair.
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kSizes.size()));
  state.counters["ns_per_alloc_free"] =
      benchmark::Counter(static_cast<double>(state.iterations() * static_cast<std::int64_t>(kSizes.size())),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  const char* strategy = std::getenv("MEMTOOL_STRATEGY");
  const char* preload = std::getenv("LD_PRELOAD");
  state.SetLabel(preload != nullptr && *preload != '\0' ? (strategy != nullptr ? strategy : "record") : "driver");
}
BENCHMARK(BM_IterationAllocFree);

}  // namespace

BENCHMARK_MAIN();
