// What cuInit made of FAKECUDA_DEVICES and FAKECUDA_MEMORY_BYTES, for the tests of their grammar:
// prints "devices N" and one "device K BYTES" line per device, or exits 1 if cuInit failed.
// With the argument "export", then allocates on device 0 and prints "export STATUS" of
// cuIpcGetMemHandle (a process without a shared file behind its memory cannot export it).
#include <cuda.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (cuInit(0) != CUDA_SUCCESS) {
    return 1;
  }
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS) {
    return 2;
  }
  std::printf("devices %d\n", count);
  for (int d = 0; d < count; ++d) {
    size_t bytes = 0;
    if (cuDeviceTotalMem(&bytes, d) != CUDA_SUCCESS) {
      return 2;
    }
    std::printf("device %d %zu\n", d, bytes);
  }
  if (argc > 1 && std::strcmp(argv[1], "export") == 0) {
    CUcontext ctx = nullptr;
    CUdeviceptr p = 0;
    if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuMemAlloc(&p, 4096) != CUDA_SUCCESS || cuMemsetD8(p, 1, 4096) != CUDA_SUCCESS ||
        cuCtxSynchronize() != CUDA_SUCCESS) {
      return 2;
    }
    CUipcMemHandle handle{};
    std::printf("export %d\n", static_cast<int>(cuIpcGetMemHandle(&handle, p)));
  }
  return 0;
}
