// The multi-device tests' driver: two devices of different sizes (256 MiB and 128 MiB, so that
// out-of-memory on one is cheap and independent of the other), and helpers to work on either.
// Their binary never calls fixture.hpp's driver_ready(): cuInit happens here, once.
#pragma once

#include "fixture.hpp"

#include <cstdlib>

namespace fakecuda_test {

constexpr std::size_t kDevice0Capacity = std::size_t{256} << 20;
constexpr std::size_t kDevice1Capacity = std::size_t{128} << 20;
constexpr std::size_t kMiB = std::size_t{1} << 20;

// cuInit with two devices; device `dev`'s primary context current on this thread.
inline CUcontext two_devices_ready(int dev = 0) {
  static const bool once = [] {
    setenv("FAKECUDA_DEVICES", "2", 1);
    setenv("FAKECUDA_MEMORY_BYTES", "256M,128M", 1);
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    return true;
  }();
  (void)once;
  CUcontext ctx = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  REQUIRE(cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS);
  return ctx;
}

inline fakecuda_device_stats device_stats(int dev) {
  fakecuda_device_stats s{};
  fakecuda_device_stats_snapshot(dev, &s, sizeof s);
  return s;
}

// A context of its own on `dev`, current while it lives, destroyed after: where a test provokes a
// sticky fault, so the primary contexts stay healthy for the rest of the suite.
class OwnContext {
 public:
  explicit OwnContext(int dev) { REQUIRE(cuCtxCreate(&ctx_, nullptr, 0, dev) == CUDA_SUCCESS); }
  ~OwnContext() { cuCtxDestroy(ctx_); }
  OwnContext(const OwnContext&) = delete;
  OwnContext& operator=(const OwnContext&) = delete;
  CUcontext get() const { return ctx_; }
  void make_current() const { REQUIRE(cuCtxSetCurrent(ctx_) == CUDA_SUCCESS); }

 private:
  CUcontext ctx_ = nullptr;
};

// Device memory of the current context, freed at the end of the scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { REQUIRE(cuMemAlloc(&ptr_, bytes) == CUDA_SUCCESS); }
  ~DeviceBuffer() { cuMemFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace fakecuda_test
