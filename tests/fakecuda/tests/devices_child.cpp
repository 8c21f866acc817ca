// What cuInit made of FAKECUDA_DEVICES and FAKECUDA_MEMORY_BYTES, for the tests of their grammar:
// prints "devices N" and one "device K BYTES" line per device, or exits 1 if cuInit failed.
#include <cuda.h>

#include <cstdio>

int main() {
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
  return 0;
}
