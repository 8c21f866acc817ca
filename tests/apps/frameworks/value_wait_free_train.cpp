// A step that frees memory while a stream waits for a value the program writes only later, the
// way NCCL's proxy and copy-engine collectives hold a stream on a flag while the host goes on
// allocating and freeing for the next layer. Every step
//   a consumer stream waits for this step's flag (cuStreamWaitValue32) and then reads a weight,
//   the compute stream makes a scratch buffer, uses it, allocates more activations and frees the
//   scratch stream-ordered (cuMemFreeAsync); the host synchronises the compute stream (never the
//   waiting one) and launches again,
//   and only then does a producer stream write the flag (cuStreamWriteValue32).
// Without a tool nothing waits on the host before the write. Adversarial for a tool that swaps:
// the scratch buffer is the first to leave for the activations, and its move out (ordered after
// every stream, so after the waiting one) cannot finish before the flag is written; a tool that
// waits on the host for it when the free is reached, or frees managed memory with cuMemFree
// (which synchronises the device), never returns to let the program write the flag.
// Prints one line per step with the checksums of the consumer's result and the activations.
//
//   value_wait_free_train --module IMAGE [--steps|--iterations N] [--floats N] [--activations N]
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_device.hpp"

namespace {

using frameworks::check;

using frameworks::checksum;

// y = a * y + b * x over `floats` floats, on `stream`.
void scale_add(const frameworks::KernelDevice& d, CUstream stream, int floats, CUdeviceptr y, CUdeviceptr x, float a,
               float b) {
  const unsigned blocks = static_cast<unsigned>((floats + 255) / 256);
  void* params[] = {&y, &x, &a, &b, &floats};
  CK(cuLaunchKernel(d.scale_add, blocks, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
}

constexpr std::size_t kFlagBytes = 4096;  // small: a tool leaves it where it is

}  // namespace

int main(int argc, char** argv) {
  frameworks::g_program = "value_wait_free_train";
  std::string module_path;
  int steps = 8;
  int floats = 1 << 18;  // 1 MiB buffers
  int activations = 6;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 < argc && flag == "--module") {
      module_path = argv[++i];
    } else if (i + 1 < argc && (flag == "--steps" || flag == "--iterations")) {
      steps = std::atoi(argv[++i]);
    } else if (i + 1 < argc && flag == "--floats") {
      floats = std::atoi(argv[++i]);
    } else if (i + 1 < argc && flag == "--activations") {
      activations = std::atoi(argv[++i]);
    }
  }
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  if (module_path.empty() || steps < 1 || floats < 1 || activations < 1) {
    std::fprintf(stderr, "usage: value_wait_free_train --module IMAGE [--steps N] [--floats N] [--activations N]\n");
    return 2;
  }
  CK(cuInit(0));
  const frameworks::KernelDevice dev = frameworks::open_kernel_device(0, module_path, check);
  const CUstream compute = dev.stream;
  CUstream consumer = nullptr;
  CUstream producer = nullptr;
  CK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));

  CUdeviceptr flag = 0;
  CK(cuMemAlloc(&flag, kFlagBytes));
  CK(cuMemsetD8(flag, 0, kFlagBytes));
  CUdeviceptr weight = 0;
  CUdeviceptr result = 0;
  CK(cuMemAlloc(&weight, bytes));
  CK(cuMemAlloc(&result, bytes));
  std::vector<float> host(static_cast<std::size_t>(floats));
  for (int i = 0; i < floats; ++i) host[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i % 13);
  CK(cuMemcpyHtoD(weight, host.data(), bytes));
  CK(cuMemsetD32(result, 0, static_cast<size_t>(floats)));
  // The synchronous memsets and copy may return before they are done, and the streams below are
  // non-blocking (not ordered after the legacy stream's work): wait for them.
  CK(cuCtxSynchronize());

  std::vector<CUdeviceptr> act(static_cast<std::size_t>(activations));
  for (int step = 0; step < steps; ++step) {
    const auto epoch = static_cast<cuuint32_t>(step + 1);
    // The consumer waits for this step's flag, then accumulates the weight.
    CK(cuStreamWaitValue32(consumer, flag, epoch, CU_STREAM_WAIT_VALUE_GEQ));
    scale_add(dev, consumer, floats, result, weight, 1.0f, 0.5f);
    // Scratch on the compute stream, freed stream-ordered once used.
    CUdeviceptr scratch = 0;
    CK(cuMemAllocAsync(&scratch, bytes, compute));
    for (int i = 0; i < floats; ++i) {
      host[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(step % 5) + 0.125f * static_cast<float>(i % 7);
    }
    CK(cuMemcpyHtoDAsync(scratch, host.data(), bytes, compute));
    scale_add(dev, compute, floats, scratch, scratch, 1.0f, 1.0f);
    CK(cuMemAllocAsync(&act[0], bytes, compute));
    CK(cuMemsetD32Async(act[0], 0, static_cast<size_t>(floats), compute));
    scale_add(dev, compute, floats, act[0], scratch, 0.0f, 1.0f);
    scale_add(dev, compute, floats, act[0], act[0], 1.0f, 0.0f);  // scratch is the older
    // More activations: memory enough that the scratch, idle since, has to make room.
    for (int k = 1; k < activations; ++k) {
      CK(cuMemAllocAsync(&act[static_cast<std::size_t>(k)], bytes, compute));
      CK(cuMemsetD32Async(act[static_cast<std::size_t>(k)], 0, static_cast<size_t>(floats), compute));
    }
    CK(cuMemFreeAsync(scratch, compute));
    // The host reads how far the compute stream got (it never waits for the consumer): the free is
    // reached while the consumer still waits.
    CK(cuStreamSynchronize(compute));
    for (int k = 1; k < activations; ++k) {
      scale_add(dev, compute, floats, act[static_cast<std::size_t>(k)], act[static_cast<std::size_t>(k - 1)], 0.0f,
                1.0f + 0.25f * static_cast<float>(k));
    }
    // Only now the flag is written.
    CK(cuStreamWriteValue32(producer, flag, epoch, 0));
    CK(cuStreamSynchronize(compute));
    CK(cuStreamSynchronize(consumer));
    CK(cuStreamSynchronize(producer));

    std::string line = "step " + std::to_string(step);
    CK(cuMemcpyDtoH(host.data(), result, bytes));
    char part[96];
    std::snprintf(part, sizeof part, " result %016llx", static_cast<unsigned long long>(checksum(host)));
    line += part;
    CK(cuMemcpyDtoH(host.data(), act[static_cast<std::size_t>(activations - 1)], bytes));
    std::snprintf(part, sizeof part, " activation %016llx", static_cast<unsigned long long>(checksum(host)));
    line += part;
    for (const CUdeviceptr a : act) CK(cuMemFreeAsync(a, compute));
    std::printf("%s\n", line.c_str());
  }
  CK(cuStreamSynchronize(compute));
  CK(cuMemFree(flag));
  CK(cuMemFree(weight));
  CK(cuMemFree(result));
  CK(cuStreamDestroy(producer));
  CK(cuStreamDestroy(consumer));
  CK(cuStreamDestroy(compute));
  CK(cuModuleUnload(dev.module));
  CK(cuDevicePrimaryCtxRelease(dev.device));
  return 0;
}
