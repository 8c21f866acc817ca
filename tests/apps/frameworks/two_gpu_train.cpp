// A data-parallel step on two GPUs in one process (JAX's default, PyTorch's DataParallel): each
// device's context is made current in turn, peer access is enabled both ways
// (cuCtxEnablePeerAccess), every step each device computes into fresh buffers of its own, then
// each device's kernel reads the other device's result directly (a peer read) and adds it to its
// accumulator. Prints one line per step with both accumulators' checksums; any failing driver call
// ends the run (exit 3). Needs two devices (FAKECUDA_DEVICES=2 on fakecuda); with one it prints
// a skip line and exits 0.
// --pool-grant: the way PyTorch's cudaMallocAsync backend shares memory between GPUs: the step's
// buffers come from cuMemAllocAsync and each device's default pool is made readable by the other
// with cuMemPoolSetAccess; no cuCtxEnablePeerAccess (a peer read of memory no grant covers faults).
//
//   two_gpu_train --module IMAGE [--iterations N] [--floats N] [--pool-grant]
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_device.hpp"

namespace {

using frameworks::check;

using frameworks::checksum;

struct Gpu : frameworks::KernelDevice {
  CUdeviceptr acc = 0;
};

}  // namespace

int main(int argc, char** argv) {
  frameworks::g_program = "two_gpu_train";
  std::string module_path;
  int iterations = 12;
  int floats = 1 << 19;  // 2 MiB buffers
  bool pool_grant = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pool-grant") {
      pool_grant = true;
      --i;  // no value
      continue;
    }
    if (i + 1 >= argc) break;
    if (flag == "--module")
      module_path = argv[i + 1];
    else if (flag == "--iterations")
      iterations = std::atoi(argv[i + 1]);
    else if (flag == "--floats")
      floats = std::atoi(argv[i + 1]);
  }
  if (module_path.empty() || iterations < 1 || floats < 1) {
    std::fprintf(stderr, "usage: two_gpu_train --module IMAGE [--iterations N] [--floats N] [--pool-grant]\n");
    return 2;
  }
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  CK(cuInit(0));
  int count = 0;
  CK(cuDeviceGetCount(&count));
  if (count < 2) {  // a one-GPU machine: said on stdout (the GPU script shows it), not a failure
    std::printf("skip: two_gpu_train needs two devices, found %d\n", count);
    return 0;
  }
  Gpu gpu[2];
  for (int d = 0; d < 2; ++d) {
    Gpu& g = gpu[d];
    static_cast<frameworks::KernelDevice&>(g) = frameworks::open_kernel_device(d, module_path, check);
    CK(cuMemAlloc(&g.acc, bytes));
    CK(cuMemsetD32(g.acc, 0, static_cast<size_t>(floats)));
    // A synchronous memset of device memory may return before it is done, and the kernels'
    // stream is non-blocking (not ordered after the legacy stream's work): wait for it.
    CK(cuCtxSynchronize());
  }
  for (int d = 0; d < 2; ++d) {
    CK(cuCtxSetCurrent(gpu[d].context));
    if (!pool_grant) {
      CK(cuCtxEnablePeerAccess(gpu[1 - d].context, 0));
      continue;
    }
    CUmemoryPool pool = nullptr;
    CK(cuDeviceGetDefaultMemPool(&pool, gpu[d].device));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpu[1 - d].device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemPoolSetAccess(pool, &access, 1));
  }
  auto alloc = [&](CUdeviceptr* p, const Gpu& g) {
    if (pool_grant) {
      CK(cuMemAllocAsync(p, bytes, g.stream));
    } else {
      CK(cuMemAlloc(p, bytes));
    }
  };
  auto release = [&](CUdeviceptr p, const Gpu& g) {
    if (pool_grant) {
      CK(cuMemFreeAsync(p, g.stream));
    } else {
      CK(cuMemFree(p));
    }
  };
  auto launch = [&](const Gpu& g, CUdeviceptr y, CUdeviceptr x, float a, float b) {
    frameworks::launch_scale_add(g, floats, y, x, a, b, check);
  };
  std::vector<float> host(static_cast<std::size_t>(floats));
  for (int step = 0; step < iterations; ++step) {
    CUdeviceptr x[2] = {0, 0};
    CUdeviceptr y[2] = {0, 0};
    for (int d = 0; d < 2; ++d) {
      const Gpu& g = gpu[d];
      CK(cuCtxSetCurrent(g.context));
      for (int i = 0; i < floats; ++i) {
        host[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(d + 1) + 0.25f * static_cast<float>(step % 4) +
                                            0.125f * static_cast<float>(i % 5);
      }
      alloc(&x[d], g);
      CK(cuMemcpyHtoDAsync(x[d], host.data(), bytes, g.stream));
      alloc(&y[d], g);
      launch(g, y[d], x[d], 0.0f, 2.0f);  // y = 2 x
      CK(cuStreamSynchronize(g.stream));
    }
    for (int d = 0; d < 2; ++d) {
      const Gpu& g = gpu[d];
      CK(cuCtxSetCurrent(g.context));
      launch(g, g.acc, y[1 - d], 1.0f, 1.0f);  // a peer read of the other device's result
      launch(g, g.acc, y[d], 1.0f, 0.5f);
    }
    std::string line = "step " + std::to_string(step);
    for (int d = 0; d < 2; ++d) {
      const Gpu& g = gpu[d];
      CK(cuCtxSetCurrent(g.context));
      CK(cuStreamSynchronize(g.stream));
      CK(cuMemcpyDtoH(host.data(), g.acc, bytes));
      char part[96];
      std::snprintf(part, sizeof part, " gpu%d acc[0] %.6f checksum %016llx", d, static_cast<double>(host[0]),
                    static_cast<unsigned long long>(checksum(host)));
      line += part;
    }
    for (int d = 0; d < 2; ++d) {
      CK(cuCtxSetCurrent(gpu[d].context));
      release(x[d], gpu[d]);
      release(y[d], gpu[d]);
    }
    std::printf("%s\n", line.c_str());
  }
  for (int d = 0; d < 2; ++d) {
    Gpu& g = gpu[d];
    CK(cuCtxSetCurrent(g.context));
    CK(cuMemFree(g.acc));
    CK(cuStreamDestroy(g.stream));
    CK(cuModuleUnload(g.module));
  }
  for (int d = 0; d < 2; ++d) CK(cuDevicePrimaryCtxRelease(gpu[d].device));
  return 0;
}
