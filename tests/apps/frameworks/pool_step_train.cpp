// An XLA-shaped training step on a memory pool of its own (XLA and TensorFlow under
// cuda_malloc_async; JAX's default): the program creates a non-default pool (exportable as
// POSIX descriptors, a release threshold set), allocates every step's buffers from it with
// cuMemAllocFromPoolAsync on its stream, exports one per step with cuMemPoolExportPointer (as a
// framework sharing a tensor does), frees them stream-ordered, and ends with cuMemPoolTrimTo.
// Its weights come from the current pool (cuMemAllocAsync), and `--hold N` keeps N more 2 MiB
// buffers of it alive and touched every step (a program that holds more than the device, which
// only swapping lets run). Every step it checks what PyTorch's cudaMallocAsync backend asserts:
// cuMemGetInfo's free plus the bytes it holds never pass the total; the pool's used memory
// covers its live pool buffers. Prints one line per step (the weights' checksum); any failing
// driver call or check ends the run (exit 3).
//
//   pool_step_train --module IMAGE [--iterations N] [--floats N] [--hold N]
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

void require(bool ok, const char* what, unsigned long long a, unsigned long long b) {
  if (ok) return;
  std::fprintf(stderr, "pool_step_train: check failed: %s (%llu, %llu)\n", what, a, b);
  std::exit(3);
}

using frameworks::checksum;

}  // namespace

int main(int argc, char** argv) {
  frameworks::g_program = "pool_step_train";
  std::string module_path;
  int iterations = 12;
  int floats = 1 << 19;  // 2 MiB buffers
  int hold = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--module")
      module_path = argv[i + 1];
    else if (flag == "--iterations")
      iterations = std::atoi(argv[i + 1]);
    else if (flag == "--floats")
      floats = std::atoi(argv[i + 1]);
    else if (flag == "--hold")
      hold = std::atoi(argv[i + 1]);
    else
      module_path.clear(), i = argc;
  }
  if (module_path.empty() || iterations < 1 || floats < 1 || hold < 0) {
    std::fprintf(stderr, "usage: pool_step_train --module IMAGE [--iterations N] [--floats N] [--hold N]\n");
    return 2;
  }
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  CK(cuInit(0));
  const frameworks::KernelDevice kernel_device = frameworks::open_kernel_device(0, module_path, check);
  const CUdevice device = kernel_device.device;
  const CUstream stream = kernel_device.stream;
  auto launch = [&](CUdeviceptr y, CUdeviceptr x, float a, float b) {
    frameworks::launch_scale_add(kernel_device, floats, y, x, a, b, check);
  };

  // The framework's own pool: on this device, exportable, keeping up to 64 MiB when idle.
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool = nullptr;
  CK(cuMemPoolCreate(&pool, &props));
  cuuint64_t threshold = 64ull << 20;
  CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));

  // What the program holds from the current pool (cuMemAllocAsync), as PyTorch counts it.
  std::uint64_t async_live = 0;
  CUdeviceptr weights = 0;
  CK(cuMemAllocAsync(&weights, bytes, stream));
  async_live += bytes;
  CK(cuMemsetD32Async(weights, 0, static_cast<size_t>(floats), stream));
  std::vector<CUdeviceptr> held(static_cast<std::size_t>(hold));
  for (CUdeviceptr& h : held) {
    CK(cuMemAllocAsync(&h, bytes, stream));
    async_live += bytes;
    CK(cuMemsetD32Async(h, 0, static_cast<size_t>(floats), stream));
  }

  std::vector<float> host(static_cast<std::size_t>(floats));
  for (int step = 0; step < iterations; ++step) {
    for (int i = 0; i < floats; ++i) {
      host[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(step % 5) + 0.125f * static_cast<float>(i % 9);
    }
    CUdeviceptr input = 0;
    CUdeviceptr hidden = 0;
    CUdeviceptr grad = 0;
    CK(cuMemAllocFromPoolAsync(&input, bytes, pool, stream));
    CK(cuMemcpyHtoDAsync(input, host.data(), bytes, stream));
    CK(cuMemAllocFromPoolAsync(&hidden, bytes, pool, stream));
    launch(hidden, input, 0.0f, 2.0f);  // hidden = 2 input
    CK(cuMemAllocFromPoolAsync(&grad, bytes, pool, stream));
    launch(grad, hidden, 0.0f, 0.5f);  // grad = input
    launch(grad, weights, 1.0f, -0.25f);
    // A tensor shared with another process: the pool's export of the pointer.
    CUmemPoolPtrExportData shared{};
    CK(cuMemPoolExportPointer(&shared, grad));
    launch(weights, grad, 1.0f, -0.5f);  // the update
    for (const CUdeviceptr h : held) launch(h, weights, 1.0f, 1.0f);
    cuuint64_t used = 0;
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    require(used >= 3 * bytes, "the pool's used memory covers its three live buffers", used, 3 * bytes);
    CK(cuMemFreeAsync(input, stream));
    CK(cuMemFreeAsync(hidden, stream));
    CK(cuMemFreeAsync(grad, stream));
    CK(cuStreamSynchronize(stream));
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    CK(cuMemGetInfo(&free_bytes, &total_bytes));
    require(free_bytes + async_live <= total_bytes, "free + used <= total (cudaMallocAsync's cacheInfo)",
            free_bytes + async_live, total_bytes);
    CK(cuMemcpyDtoH(host.data(), weights, bytes));
    std::printf("step %d weights[0] %.6f checksum %016llx\n", step, static_cast<double>(host[0]),
                static_cast<unsigned long long>(checksum(host)));
  }
  // empty_cache: the pool gives back what it keeps idle.
  CK(cuMemPoolTrimTo(pool, 0));
  cuuint64_t reserved = 0;
  CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
  require(reserved == 0, "nothing reserved after trimming an idle pool", reserved, 0);
  for (const CUdeviceptr h : held) CK(cuMemFreeAsync(h, stream));
  CK(cuMemFreeAsync(weights, stream));
  CK(cuStreamSynchronize(stream));
  CK(cuMemPoolDestroy(pool));
  CK(cuStreamDestroy(stream));
  CK(cuModuleUnload(kernel_device.module));
  CK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
