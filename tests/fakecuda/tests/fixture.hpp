// Shared helpers of fakecuda's tests: a ready driver (small 256 MiB device so out-of-memory is
// cheap to reach), the test kernel object, a gate that holds a stream until the test opens it
// (so "the stream has not run yet" is a fact, not a race), pinned host words, and status names in
// failures.
#pragma once

#include "fakecuda/control.h"
#include "fakecuda/kernel_abi.h"

#include <catch2/catch.hpp>
#include <cuda.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>

namespace fakecuda_test {

constexpr std::size_t kTestCapacity = std::size_t{256} << 20;

inline std::string status_name(CUresult r) {
  const char* name = nullptr;
  return cuGetErrorName(r, &name) == CUDA_SUCCESS ? name : "unknown CUresult " + std::to_string(r);
}

// The primary context made current on the calling thread, without Catch2 assertions (Catch2 is
// not thread-safe): for threads a test starts.
inline bool make_primary_current() {
  CUcontext ctx = nullptr;
  return cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS &&
         cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS;
}

// cuInit, the primary context current on this thread.
inline void driver_ready() {
  static const bool once = [] {
    setenv("FAKECUDA_MEMORY_BYTES", "256M", 1);
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    return true;
  }();
  (void)once;
  CUcontext ctx = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  REQUIRE(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
}

inline std::string module_image(const char* path) { return std::string(FAKECUDA_MODULE_MAGIC) + path + "\n"; }

inline fakecuda_stats stats_now() {
  fakecuda_stats s{};
  fakecuda_stats_snapshot(&s, sizeof s);
  return s;
}

// Pinned host memory (cuMemAllocHost) of n words, freed at the end of the scope.
struct PinnedWords {
  unsigned* words = nullptr;
  explicit PinnedWords(std::size_t n) {
    void* p = nullptr;
    REQUIRE(cuMemAllocHost(&p, n * sizeof(unsigned)) == CUDA_SUCCESS);
    words = static_cast<unsigned*>(p);
  }
  ~PinnedWords() { cuMemFreeHost(words); }
  PinnedWords(const PinnedWords&) = delete;
  PinnedWords& operator=(const PinnedWords&) = delete;
};

// Holds every later operation of a stream until open() is called.
class Gate {
 public:
  void hold(CUstream stream) { REQUIRE(cuLaunchHostFunc(stream, &Gate::wait, this) == CUDA_SUCCESS); }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  ~Gate() { open(); }

 private:
  static void wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    std::unique_lock<std::mutex> lock(g->mutex_);
    g->cv_.wait(lock, [g] { return g->open_; });
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The test kernel object loaded as a module.
struct TestModule {
  CUmodule module = nullptr;
  TestModule() {
    const std::string image = module_image(FAKECUDA_TEST_KERNELS);
    REQUIRE(cuModuleLoadData(&module, image.c_str()) == CUDA_SUCCESS);
  }
  ~TestModule() { cuModuleUnload(module); }
  CUfunction get(const char* name) const {
    CUfunction f = nullptr;
    REQUIRE(cuModuleGetFunction(&f, module, name) == CUDA_SUCCESS);
    return f;
  }
};

}  // namespace fakecuda_test

// CHECK/REQUIRE on a CUresult, printing its name on failure.
#define CU_CHECK_IS(expr, expected) CHECK(fakecuda_test::status_name(expr) == fakecuda_test::status_name(expected))
#define CU_REQUIRE_OK(expr) REQUIRE(fakecuda_test::status_name(expr) == "CUDA_SUCCESS")
