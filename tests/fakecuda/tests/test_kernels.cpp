// A small kernel object for fakecuda's own tests: host functions registered by name with their
// parameter layouts, exported as the `fakecuda_kernels` table (see fakecuda/kernel_abi.h).
#include "fakecuda/kernel_abi.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

namespace {

template <class T>
T arg(void** params, unsigned i) {
  T value;
  std::memcpy(&value, params[i], sizeof value);
  return value;
}

// fill_u32(unsigned* out, unsigned value, unsigned n)
void fill_u32(void** params, const fakecuda_launch_dims*) {
  auto* out = arg<unsigned*>(params, 0);
  const auto value = arg<unsigned>(params, 1);
  const auto n = arg<unsigned>(params, 2);
  for (unsigned i = 0; i < n; ++i) {
    out[i] = value;
  }
}

// axpy(float alpha, const float* x, float* y, int n): y = alpha * x + y. The float before a
// pointer leaves a 4-byte hole, as the CUDA ABI lays it out.
void axpy(void** params, const fakecuda_launch_dims*) {
  const auto alpha = arg<float>(params, 0);
  const auto* x = arg<const float*>(params, 1);
  auto* y = arg<float*>(params, 2);
  const auto n = arg<int>(params, 3);
  for (int i = 0; i < n; ++i) {
    y[i] = alpha * x[i] + y[i];
  }
}

// bump(unsigned long long* counter): one increment per launch; launches of one stream run in
// order on one worker, so no atomics are needed.
void bump(void** params, const fakecuda_launch_dims*) { ++*arg<unsigned long long*>(params, 0); }

// slow_copy_u32(unsigned* dst, const unsigned* src, unsigned n, unsigned micros): sleeps before
// copying, so work ordered after it must really wait for it.
void slow_copy_u32(void** params, const fakecuda_launch_dims*) {
  auto* dst = arg<unsigned*>(params, 0);
  const auto* src = arg<const unsigned*>(params, 1);
  const auto n = arg<unsigned>(params, 2);
  const auto micros = arg<unsigned>(params, 3);
  std::this_thread::sleep_for(std::chrono::microseconds(micros));
  std::memcpy(dst, src, std::size_t{n} * sizeof(unsigned));
}

// launch_shape(unsigned* out): writes the grid and block it was launched with.
void launch_shape(void** params, const fakecuda_launch_dims* dims) {
  auto* out = arg<unsigned*>(params, 0);
  for (int i = 0; i < 3; ++i) {
    out[i] = dims->grid[i];
    out[3 + i] = dims->block[i];
  }
  out[6] = dims->shared_bytes;
}

// no_params(): has no parameters at all.
void no_params(void**, const fakecuda_launch_dims*) {}

const unsigned fill_offsets[] = {0, 8, 12};
const unsigned fill_sizes[] = {8, 4, 4};
const unsigned axpy_offsets[] = {0, 8, 16, 24};
const unsigned axpy_sizes[] = {4, 8, 8, 4};
const unsigned bump_offsets[] = {0};
const unsigned bump_sizes[] = {8};
const unsigned slow_offsets[] = {0, 8, 16, 20};
const unsigned slow_sizes[] = {8, 8, 4, 4};

const fakecuda_kernel_desc kernels[] = {
    {"fill_u32", fill_u32, 3, fill_offsets, fill_sizes},
    {"axpy", axpy, 4, axpy_offsets, axpy_sizes},
    {"bump", bump, 1, bump_offsets, bump_sizes},
    {"slow_copy_u32", slow_copy_u32, 4, slow_offsets, slow_sizes},
    {"launch_shape", launch_shape, 1, bump_offsets, bump_sizes},
    {"no_params", no_params, 0, nullptr, nullptr},
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fakecuda_kernel_table fakecuda_kernels = {
    FAKECUDA_KERNEL_ABI_VERSION, sizeof kernels / sizeof kernels[0], kernels};
