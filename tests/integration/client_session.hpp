// What the driver-API test clients share: a checked call that counts failures, and a session
// on device 0's primary context with the test kernels' module loaded from its image file.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace client {

inline std::atomic<int> g_failures{0};

inline void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed with %d\n", what, static_cast<int>(result));
    ++g_failures;
  }
}

// Initialises the driver, makes device 0's primary context current and loads the module image
// at `path`; *device and *context are set (other threads make it current, the end releases it).
// Failures are counted (check).
inline CUmodule open_session(const char* path, CUdevice* device, CUcontext* context) {
  std::ifstream file(path);
  std::stringstream image;
  image << file.rdbuf();
  const std::string module_image = image.str();
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(context, *device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(*context), "cuCtxSetCurrent");
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, module_image.c_str()), "cuModuleLoadData");
  return module;
}

}  // namespace client
