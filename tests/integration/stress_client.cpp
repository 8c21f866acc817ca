// 8 threads, each with its own stream, allocate, memset, launch and free concurrently through
// libmemtool.so (fakecuda underneath). Exit 0 and "stress ok" when every call succeeded; the
// test checks the trace's exact counts. Usage: stress_client MODULE_IMAGE ROUNDS
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "client_session.hpp"

using client::check;
using client::g_failures;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int rounds = std::atoi(argv[2]);
  CUdevice device = 0;
  CUcontext context = nullptr;
  const CUmodule module = client::open_session(argv[1], &device, &context);
  CUfunction relu = nullptr;
  check(cuModuleGetFunction(&relu, module, "relu_forward"), "cuModuleGetFunction");
  if (g_failures != 0) return 1;

  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
      CUstream stream = nullptr;
      check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      for (int i = 0; i < rounds; ++i) {
        const int count = 64 + i;
        CUdeviceptr z = 0;
        CUdeviceptr a = 0;
        check(cuMemAllocAsync(&z, sizeof(float) * static_cast<size_t>(count), stream), "cuMemAllocAsync");
        check(cuMemAlloc(&a, sizeof(float) * static_cast<size_t>(count)), "cuMemAlloc");
        check(cuMemsetD32Async(z, 0x3f800000u, static_cast<size_t>(count), stream), "cuMemsetD32Async");
        void* params[] = {&z, &a, const_cast<int*>(&count)};
        check(cuLaunchKernel(relu, 1, 1, 1, 64, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
        check(cuMemFreeAsync(z, stream), "cuMemFreeAsync");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        check(cuMemFree(a), "cuMemFree");
      }
      check(cuStreamDestroy(stream), "cuStreamDestroy");
    });
  }
  for (auto& thread : threads) thread.join();
  if (g_failures != 0) return 1;
  std::puts("stress ok");
  return 0;
}
