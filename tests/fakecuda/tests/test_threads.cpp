// Thread safety: several host threads allocate, launch, copy, record events and free at once, on
// their own streams, their per-thread default streams and the shared legacy stream. Every thread
// checks its own data, and the device ends where it started.
#include "fixture.hpp"

#include <atomic>
#include <thread>
#include <vector>

using namespace fakecuda_test;

TEST_CASE("eight threads drive the driver at once", "[fakecuda][threads]") {
  driver_ready();
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  const CUfunction bump = module.get("bump");
  const fakecuda_stats before = stats_now();
  constexpr int kThreads = 8;
  constexpr int kRounds = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto fail_if = [&](bool bad) {
        if (bad) {
          ++failures;
        }
      };
      fail_if(!make_primary_current());
      CUstream own = nullptr;
      fail_if(cuStreamCreate(&own, t % 2 == 0 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT) != CUDA_SUCCESS);
      CUevent event = nullptr;
      fail_if(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS);
      CUdeviceptr counter = 0;
      fail_if(cuMemAlloc(&counter, sizeof(unsigned long long)) != CUDA_SUCCESS);
      fail_if(cuMemsetD8Async(counter, 0, sizeof(unsigned long long), own) != CUDA_SUCCESS);
      for (int r = 0; r < kRounds; ++r) {
        const unsigned n = 256 + static_cast<unsigned>(r);
        CUdeviceptr buffer = 0;
        const bool async = r % 2 == 0;
        fail_if((async ? cuMemAllocAsync(&buffer, n * sizeof(unsigned), own)
                       : cuMemAlloc(&buffer, n * sizeof(unsigned))) != CUDA_SUCCESS);
        unsigned value = static_cast<unsigned>(t * 1000 + r);
        unsigned count = n;
        void* fill_args[] = {&buffer, &value, &count};
        fail_if(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, own, fill_args, nullptr) != CUDA_SUCCESS);
        void* bump_args[] = {&counter};
        fail_if(cuLaunchKernel(bump, 1, 1, 1, 32, 1, 1, 0, own, bump_args, nullptr) != CUDA_SUCCESS);
        fail_if(cuEventRecord(event, own) != CUDA_SUCCESS);
        // Read back on the per-thread default stream, ordered by the event.
        fail_if(cuStreamWaitEvent(CU_STREAM_PER_THREAD, event, 0) != CUDA_SUCCESS);
        std::vector<unsigned> host(n, 0);
        fail_if(cuMemcpyDtoHAsync(host.data(), buffer, n * sizeof(unsigned), CU_STREAM_PER_THREAD) != CUDA_SUCCESS);
        fail_if(host.front() != value || host.back() != value);
        fail_if((async ? cuMemFreeAsync(buffer, own) : cuMemFree(buffer)) != CUDA_SUCCESS);
      }
      unsigned long long launched = 0;
      fail_if(cuMemcpyDtoHAsync(&launched, counter, sizeof launched, own) != CUDA_SUCCESS);
      fail_if(launched != kRounds);
      fail_if(cuStreamSynchronize(own) != CUDA_SUCCESS);
      fail_if(cuMemFree(counter) != CUDA_SUCCESS);
      fail_if(cuEventDestroy(event) != CUDA_SUCCESS);
      fail_if(cuStreamDestroy(own) != CUDA_SUCCESS);
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  CHECK(failures.load() == 0);
  CU_REQUIRE_OK(cuCtxSynchronize());
  const fakecuda_stats after = stats_now();
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.launches - before.launches == 2 * kThreads * kRounds);
  CHECK(after.allocations - before.allocations == kThreads * (kRounds + 1));
  CHECK(after.frees - before.frees == kThreads * (kRounds + 1));
}
