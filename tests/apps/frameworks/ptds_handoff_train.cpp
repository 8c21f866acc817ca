// Two threads on their own per-thread default streams, handing memory from one to the other
// (a program built with --default-stream per-thread, as some PyTorch and data-loader builds are):
// every step thread A allocates a buffer on its per-thread stream (the handle
// CU_STREAM_PER_THREAD), queues a slow matmul into it and frees it with the kernel still
// running; then thread B at once allocates the same size on its per-thread stream (the _ptsz
// entry points' null stream: this file is compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM),
// fills it, and reads it back only after A's kernel has ended. The driver's stream-ordered pool
// gives B memory that A's kernel no longer writes; an allocator that took the two per-thread
// streams for one stream would hand B A's memory without ordering it after A's kernel, and B
// would read A's matmul instead of its own fill. Prints one line per step (B's checksum and A's
// result's checksum); any failing driver call or check ends the run (exit 3).
//
//   ptds_handoff_train --module IMAGE [--steps N | --iterations N] [--side N]
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel_device.hpp"

namespace {

using frameworks::check;

using frameworks::checksum;

// The turns of one step, passed between the two threads.
enum class Turn : std::uint8_t { a_allocates, b_allocates, a_finishes, b_reads, step_done };

class Baton {
 public:
  void pass(Turn next) {
    {
      std::lock_guard lock(mutex_);
      turn_ = next;
    }
    changed_.notify_all();
  }
  void wait_for(Turn turn) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return turn_ == turn; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  Turn turn_ = Turn::a_allocates;
};

// B's fill of step `step`: a value no matmul of A's produces.
unsigned fill_word(int step) { return 0x40000000u + static_cast<unsigned>(step) * 0x1000u; }

}  // namespace

int main(int argc, char** argv) {
  frameworks::g_program = "ptds_handoff_train";
  std::string module_path;
  int steps = 10;
  int side = 192;  // A's matmul is side x side x side: slow on fakecuda's host kernels
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--module")
      module_path = argv[i + 1];
    else if (flag == "--steps" || flag == "--iterations")
      steps = std::atoi(argv[i + 1]);
    else if (flag == "--side")
      side = std::atoi(argv[i + 1]);
    else
      module_path.clear(), i = argc;
  }
  if (module_path.empty() || steps < 1 || side < 1) {
    std::fprintf(stderr, "usage: ptds_handoff_train --module IMAGE [--steps N | --iterations N] [--side N]\n");
    return 2;
  }
  const int floats = side * side;
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  CK(cuInit(0));
  const frameworks::KernelDevice kernel_device = frameworks::open_kernel_device(0, module_path, check);
  CUfunction matmul = nullptr;
  CK(cuModuleGetFunction(&matmul, kernel_device.module, "matmul"));

  // A's operands (synchronous copies: done before either thread starts).
  CUdeviceptr lhs = 0;
  CUdeviceptr rhs = 0;
  CK(cuMemAlloc(&lhs, bytes));
  CK(cuMemAlloc(&rhs, bytes));
  std::vector<float> host(static_cast<std::size_t>(floats));
  for (int i = 0; i < floats; ++i) host[static_cast<std::size_t>(i)] = 0.125f * static_cast<float>(i % 7) - 0.25f;
  CK(cuMemcpyHtoD(lhs, host.data(), bytes));
  for (int i = 0; i < floats; ++i) host[static_cast<std::size_t>(i)] = 0.0625f * static_cast<float>(i % 5) + 0.5f;
  CK(cuMemcpyHtoD(rhs, host.data(), bytes));

  Baton baton;
  std::vector<std::uint64_t> b_sums(static_cast<std::size_t>(steps));
  std::vector<std::uint64_t> a_sums(static_cast<std::size_t>(steps));

  std::thread a([&] {
    CK(cuCtxSetCurrent(kernel_device.context));
    CUdeviceptr kept = 0;  // A's matmul of the step, copied out of the freed buffer in time
    CK(cuMemAllocAsync(&kept, bytes, CU_STREAM_PER_THREAD));
    std::vector<float> mine(static_cast<std::size_t>(floats));
    for (int step = 0; step < steps; ++step) {
      baton.wait_for(Turn::a_allocates);
      CUdeviceptr product = 0;
      CK(cuMemAllocAsync(&product, bytes, CU_STREAM_PER_THREAD));
      CUdeviceptr x = lhs;
      CUdeviceptr y = rhs;
      int m = side, n = side, k = side, trans_a = 0, trans_b = step % 2;
      void* params[] = {&x, &y, &product, &m, &n, &k, &trans_a, &trans_b};
      const unsigned blocks = static_cast<unsigned>((floats + 255) / 256);
      CK(cuLaunchKernel(matmul, blocks, 1, 1, 256, 1, 1, 0, CU_STREAM_PER_THREAD, params, nullptr));
      CK(cuMemcpyDtoDAsync(kept, product, bytes, CU_STREAM_PER_THREAD));
      CK(cuMemFreeAsync(product, CU_STREAM_PER_THREAD));  // the matmul still runs
      baton.pass(Turn::b_allocates);
      baton.wait_for(Turn::a_finishes);
      CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
      CK(cuMemcpyDtoHAsync(mine.data(), kept, bytes, CU_STREAM_PER_THREAD));
      CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
      a_sums[static_cast<std::size_t>(step)] = checksum(mine);
      baton.pass(Turn::b_reads);
    }
    CK(cuMemFreeAsync(kept, CU_STREAM_PER_THREAD));
    CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  });

  std::thread b([&] {
    CK(cuCtxSetCurrent(kernel_device.context));
    std::vector<float> mine(static_cast<std::size_t>(floats));
    for (int step = 0; step < steps; ++step) {
      baton.wait_for(Turn::b_allocates);
      // The null stream of the _ptsz entry points: B's own per-thread stream.
      CUdeviceptr fresh = 0;
      CK(cuMemAllocAsync(&fresh, bytes, nullptr));
      CK(cuMemsetD32Async(fresh, fill_word(step), static_cast<size_t>(floats), nullptr));
      CK(cuStreamSynchronize(nullptr));
      baton.pass(Turn::a_finishes);  // A's matmul has ended once A passes the baton back
      baton.wait_for(Turn::b_reads);
      CK(cuMemcpyDtoHAsync(mine.data(), fresh, bytes, nullptr));
      CK(cuStreamSynchronize(nullptr));
      CK(cuMemFreeAsync(fresh, nullptr));
      CK(cuStreamSynchronize(nullptr));
      b_sums[static_cast<std::size_t>(step)] = checksum(mine);
      baton.pass(Turn::a_allocates);
    }
  });
  a.join();
  b.join();
  for (int step = 0; step < steps; ++step) {
    std::printf("step %d fill %016llx product %016llx\n", step,
                static_cast<unsigned long long>(b_sums[static_cast<std::size_t>(step)]),
                static_cast<unsigned long long>(a_sums[static_cast<std::size_t>(step)]));
  }
  CK(cuMemFree(lhs));
  CK(cuMemFree(rhs));
  CK(cuStreamDestroy(kernel_device.stream));
  CK(cuModuleUnload(kernel_device.module));
  CK(cuDevicePrimaryCtxRelease(kernel_device.device));
  return 0;
}
