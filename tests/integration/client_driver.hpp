// What the integration clients linked with -lcuda (fakecuda) share: a driver call that must
// succeed, and the primary context of device 0 made current.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CU(call)                                                         \
  do {                                                                         \
    if (CUresult r = (call); r != CUDA_SUCCESS) {                              \
      std::fprintf(stderr, "%s failed with %d\n", #call, static_cast<int>(r)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

inline void start_driver() {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&device, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
}
