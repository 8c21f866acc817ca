// A tiny driver-API program for the stats test: a known sequence of allocations, copies and
// launches, then a normal exit, so FAKECUDA_STATS=FILE must hold exactly these counts.
// With a second argument "use-after-free" it instead reads device memory after cuMemFree, which
// must fault (freed device memory is decommitted), so the test sees it die of SIGSEGV.
#include "fakecuda/kernel_abi.h"

#include <cuda.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "stats_child: %s failed with %d\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: stats_child KERNEL_OBJECT [use-after-free]\n");
    return 2;
  }
  check(cuInit(0), "cuInit");
  CUcontext ctx = nullptr;
  check(cuDevicePrimaryCtxRetain(&ctx, 0), "retain");
  check(cuCtxSetCurrent(ctx), "set current");
  if (argc == 3 && std::string(argv[2]) == "use-after-free") {
    CUdeviceptr p = 0;
    check(cuMemAlloc(&p, 1 << 20), "alloc");
    check(cuMemsetD8(p, 1, 1 << 20), "memset");
    check(cuCtxSynchronize(), "sync");
    const volatile unsigned char* bytes = reinterpret_cast<const unsigned char*>(p);
    std::printf("before free: %d\n", bytes[4096]);
    check(cuMemFree(p), "free");
    std::printf("after free: %d\n", bytes[4096]);  // faults here
    return 0;
  }
  const std::string image = std::string(FAKECUDA_MODULE_MAGIC) + argv[1] + "\n";
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, image.c_str()), "load");
  CUfunction fill = nullptr;
  check(cuModuleGetFunction(&fill, module, "fill_u32"), "get function");
  CUstream stream = nullptr;
  check(cuStreamCreate(&stream, 0), "stream");

  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CUdeviceptr c = 0;
  check(cuMemAlloc(&a, 1000), "alloc a");              // charged 1024
  check(cuMemAlloc(&b, 4096), "alloc b");              // 4096
  check(cuMemAllocAsync(&c, 512, stream), "alloc c");  // 512
  std::vector<unsigned> host(1024, 3);
  check(cuMemcpyHtoD(b, host.data(), 4096), "h2d");
  unsigned value = 9;
  unsigned n = 1024;
  void* params[] = {&b, &value, &n};
  for (int i = 0; i < 5; ++i) {
    check(cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, stream, params, nullptr), "launch");
  }
  check(cuMemcpyDtoHAsync(host.data(), b, 4096, stream), "d2h");
  check(cuMemFreeAsync(c, stream), "free c");
  check(cuStreamSynchronize(stream), "sync");
  if (host[1023] != 9) {
    std::fprintf(stderr, "stats_child: kernel result missing\n");
    return 1;
  }
  check(cuMemFree(a), "free a");
  check(cuMemFree(b), "free b");
  return 0;  // the stats file is written on the way out
}
