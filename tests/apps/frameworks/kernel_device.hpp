// What the framework-shaped programs share: a driver call that must succeed (check, CK), a device
// with app_kernels' scale_add loaded and a non-blocking stream to launch it on, and a checksum
// that any bit of a float vector changes.
// Header-only: tests/gpu/run.sh compiles each program from its one .cpp file.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace frameworks {

using Check = void (*)(CUresult result, const char* what);  // exits on a failing call

// What a failing call's line on stderr starts with: the program's name, set first in main (with
// its rank where it runs as several processes).
inline std::string g_program = "framework program";

// A driver call that must succeed: else one line naming it and its CUresult, and exit status 3.
inline void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s: %s failed (CUresult %d)\n", g_program.c_str(), what, static_cast<int>(result));
  std::exit(3);
}
#define CK(call) ::frameworks::check((call), #call)

struct KernelDevice {
  CUdevice device = 0;
  CUcontext context = nullptr;  // the device's primary context, made current by open
  CUmodule module = nullptr;
  CUfunction scale_add = nullptr;
  CUstream stream = nullptr;
};

inline KernelDevice open_kernel_device(int ordinal, const std::string& module_path, Check check) {
  KernelDevice d;
  check(cuDeviceGet(&d.device, ordinal), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&d.context, d.device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(d.context), "cuCtxSetCurrent");
  check(cuModuleLoad(&d.module, module_path.c_str()), "cuModuleLoad");
  check(cuModuleGetFunction(&d.scale_add, d.module, "scale_add"), "cuModuleGetFunction(scale_add)");
  check(cuStreamCreate(&d.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return d;
}

// y = a * y + b * x over `floats` floats, on the device's stream.
inline void launch_scale_add(const KernelDevice& d, int floats, CUdeviceptr y, CUdeviceptr x, float a, float b,
                             Check check) {
  const unsigned blocks = static_cast<unsigned>((floats + 255) / 256);
  void* params[] = {&y, &x, &a, &b, &floats};
  check(cuLaunchKernel(d.scale_add, blocks, 1, 1, 256, 1, 1, 0, d.stream, params, nullptr),
        "cuLaunchKernel(scale_add)");
}

inline std::uint64_t checksum(const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (const float f : v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

}  // namespace frameworks
