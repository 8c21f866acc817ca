// A test preload that opens fakecuda's peak window in the steady state: before the N-th
// cuMemAlloc_v2 call (PEAK_WINDOW_AFTER_ALLOCS=N-1 calls let through first) it calls
// fakecuda_stats_reset(), so FAKECUDA_STATS's peak_bytes_in_use is the peak from then on —
// the iterations served from the pool, without the observed warm-up ones. Preloaded before
// libmemtool.so (or alone, for the plain run); reaches the next cuMemAlloc_v2 with RTLD_NEXT.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include <cuda.h>

namespace {

using AllocFunction = CUresult (*)(CUdeviceptr*, size_t);
using ResetFunction = void (*)();

std::atomic<long> g_calls{0};

long reset_after() {
  static const long after = [] {
    const char* text = std::getenv("PEAK_WINDOW_AFTER_ALLOCS");
    return text != nullptr ? std::strtol(text, nullptr, 10) : -1;
  }();
  return after;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  static const auto next = reinterpret_cast<AllocFunction>(dlsym(RTLD_NEXT, "cuMemAlloc_v2"));
  if (g_calls.fetch_add(1) == reset_after()) {
    if (const auto reset = reinterpret_cast<ResetFunction>(dlsym(RTLD_DEFAULT, "fakecuda_stats_reset"))) reset();
  }
  return next != nullptr ? next(dptr, bytesize) : CUDA_ERROR_NOT_INITIALIZED;
}
