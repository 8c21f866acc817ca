// Streams run asynchronously on workers: order within a stream, events across streams, the legacy
// default stream's implicit synchronisation, stream-ordered allocation and free.
#include "fixture.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace fakecuda_test;

TEST_CASE("a stream runs its work later, in order, on its own worker", "[fakecuda][streams]") {
  driver_ready();
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 64 * sizeof(unsigned)));
  PinnedWords out(64);
  out.words[0] = 1;
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuMemsetD32Async(d, 7, 64, s));
    CU_REQUIRE_OK(cuMemsetD32Async(d, 9, 32, s));
    CU_REQUIRE_OK(cuMemcpyDtoHAsync(out.words, d, 64 * sizeof(unsigned), s));
    CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK(out.words[0] == 1);  // nothing ran: the copy into pinned memory is truly asynchronous
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  CU_CHECK_IS(cuStreamQuery(s), CUDA_SUCCESS);
  CHECK(out.words[0] == 9);
  CHECK(out.words[31] == 9);
  CHECK(out.words[32] == 7);
  CHECK(out.words[63] == 7);
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("an event orders a memset on stream A before a copy on stream B", "[fakecuda][streams][events]") {
  driver_ready();
  CUstream a = nullptr;
  CUstream b = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_REQUIRE_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUevent done = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 1024 * sizeof(unsigned)));
  CU_REQUIRE_OK(cuMemsetD32(d, 0, 1024));
  CU_REQUIRE_OK(cuCtxSynchronize());
  PinnedWords out(1024);
  {
    Gate gate;
    gate.hold(a);  // stream A cannot have run the memset when B's copy is issued
    CU_REQUIRE_OK(cuMemsetD32Async(d, 0xABCD, 1024, a));
    CU_REQUIRE_OK(cuEventRecord(done, a));
    CU_REQUIRE_OK(cuStreamWaitEvent(b, done, 0));
    CU_REQUIRE_OK(cuMemcpyDtoHAsync(out.words, d, 1024 * sizeof(unsigned), b));
    CU_CHECK_IS(cuEventQuery(done), CUDA_ERROR_NOT_READY);
    CU_CHECK_IS(cuStreamQuery(b), CUDA_ERROR_NOT_READY);  // B waits for A
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(b));
  }
  CU_CHECK_IS(cuEventQuery(done), CUDA_SUCCESS);
  CHECK(out.words[0] == 0xABCDu);
  CHECK(out.words[1023] == 0xABCDu);
  CU_CHECK_IS(cuEventDestroy(done), CUDA_SUCCESS);
  CU_CHECK_IS(cuEventDestroy(done), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(a), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(b), CUDA_SUCCESS);
}

TEST_CASE("the legacy default stream waits for blocking streams, not non-blocking ones", "[fakecuda][streams]") {
  driver_ready();
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 16 * sizeof(unsigned)));
  CU_REQUIRE_OK(cuMemsetD32(d, 1, 16));
  unsigned host[16] = {};

  SECTION("blocking stream: a synchronous copy sees its earlier memset") {
    CUstream s = nullptr;
    CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuMemsetD32Async(d, 42, 16, s));
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open();
    });
    CU_REQUIRE_OK(cuMemcpyDtoH(host, d, sizeof host));  // legacy stream: waits for s
    opener.join();
    CHECK(host[0] == 42);
    CHECK(host[15] == 42);
    CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
  }
  SECTION("non-blocking stream: the legacy stream does not wait for it") {
    CUstream s = nullptr;
    CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    Gate gate;
    gate.hold(s);
    // The safety thread only exists so a wrong implementation fails instead of hanging.
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
    bool opened_by_safety = false;
    std::thread safety([&] {
      std::unique_lock<std::mutex> lock(mutex);
      if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return finished; })) {
        opened_by_safety = true;
        gate.open();
      }
    });
    CU_REQUIRE_OK(cuMemcpyDtoH(host, d, sizeof host));
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
      CHECK_FALSE(opened_by_safety);  // returned while s was still held
    }
    cv.notify_all();
    safety.join();
    CHECK(host[0] == 1);
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
  }
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
}

TEST_CASE("events time work and refuse what the driver refuses", "[fakecuda][streams][events]") {
  driver_ready();
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, 0));
  CUevent start = nullptr;
  CUevent stop = nullptr;
  CUevent untimed = nullptr;
  CUevent never = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&start, 0));
  CU_REQUIRE_OK(cuEventCreate(&stop, 0));
  CU_REQUIRE_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  CU_REQUIRE_OK(cuEventCreate(&never, 0));
  CUevent bad = nullptr;
  CU_CHECK_IS(cuEventCreate(&bad, 0x40), CUDA_ERROR_INVALID_VALUE);
  float ms = -1;
  {
    Gate gate;
    CU_REQUIRE_OK(cuEventRecord(start, s));
    gate.hold(s);
    CU_REQUIRE_OK(cuEventRecord(stop, s));
    CU_REQUIRE_OK(cuEventRecord(untimed, s));
    CU_CHECK_IS(cuEventQuery(stop), CUDA_ERROR_NOT_READY);
    CU_CHECK_IS(cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_NOT_READY);
    gate.open();
    CU_REQUIRE_OK(cuEventSynchronize(stop));
  }
  CU_REQUIRE_OK(cuEventElapsedTime(&ms, start, stop));
  CHECK(ms >= 0.0f);  // stop ran after start: no timing assertion beyond the order
  float reverse = 1;
  CU_REQUIRE_OK(cuEventElapsedTime(&reverse, stop, start));
  CHECK(reverse == -ms);
  CU_CHECK_IS(cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuEventElapsedTime(&ms, start, never), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuEventQuery(never), CUDA_SUCCESS);  // never recorded: nothing pending
  CU_CHECK_IS(cuStreamWaitEvent(s, never, 0), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamWaitEvent(s, start, 5), CUDA_ERROR_INVALID_VALUE);
  for (CUevent e : {start, stop, untimed, never}) {
    CU_CHECK_IS(cuEventDestroy(e), CUDA_SUCCESS);
  }
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("stream handles are checked", "[fakecuda][streams][errors]") {
  driver_ready();
  CUstream s = nullptr;
  CU_CHECK_IS(cuStreamCreate(&s, 0x7), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuStreamCreateWithPriority(&s, 0, -100));
  int priority = 0;
  CU_REQUIRE_OK(cuStreamGetPriority(s, &priority));
  int least = 0;
  int greatest = 0;
  CU_REQUIRE_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  CHECK(priority == greatest);  // clamped
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuStreamDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE);
  unsigned long long legacy = 0;
  unsigned long long per_thread = 0;
  unsigned long long other_thread = 0;
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_LEGACY, &legacy));
  CU_REQUIRE_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread));
  bool other_ok = false;
  std::thread([&] {
    other_ok = make_primary_current() && cuStreamGetId(CU_STREAM_PER_THREAD, &other_thread) == CUDA_SUCCESS;
  }).join();
  CHECK(other_ok);
  CHECK(legacy != per_thread);
  CHECK(per_thread != other_thread);
}

TEST_CASE("stream-ordered allocation: memory returns when the stream reaches the free", "[fakecuda][streams][async]") {
  driver_ready();
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const std::size_t size = std::size_t{64} << 20;
  const fakecuda_stats before = stats_now();
  CUdeviceptr p = 0;
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuMemAllocAsync(&p, size, s));
    CHECK(stats_now().bytes_in_use - before.bytes_in_use == size);
    CU_REQUIRE_OK(cuMemsetD8Async(p, 3, size, s));
    CU_REQUIRE_OK(cuMemFreeAsync(p, s));
    CU_CHECK_IS(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);          // already freed
    CU_CHECK_IS(cuMemsetD8Async(p, 0, 16, s), CUDA_ERROR_INVALID_VALUE);  // no new work on it
    CHECK(stats_now().bytes_in_use - before.bytes_in_use == size);        // the stream has not got there
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  const fakecuda_stats after = stats_now();
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.async_allocations - before.async_allocations == 1);
  CHECK(after.async_frees - before.async_frees == 1);

  SECTION("an allocation that only fits after pending frees waits for them") {
    const std::size_t big = std::size_t{160} << 20;
    CUdeviceptr first = 0;
    CUdeviceptr second = 0;
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuMemAllocAsync(&first, big, s));
    CU_REQUIRE_OK(cuMemFreeAsync(first, s));
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open();
    });
    CU_CHECK_IS(cuMemAllocAsync(&second, big, s), CUDA_SUCCESS);
    opener.join();
    CU_CHECK_IS(cuMemFreeAsync(second, s), CUDA_SUCCESS);
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  SECTION("the default pool is the only pool") {
    CUmemoryPool pool = nullptr;
    CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CUdeviceptr q = 0;
    CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&q, 4096, pool, s));
    CUmemoryPool owner = nullptr;
    CU_REQUIRE_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q));
    CHECK(owner == pool);
    CU_REQUIRE_OK(cuMemFreeAsync(q, s));
    int bogus = 0;
    CU_CHECK_IS(cuMemAllocFromPoolAsync(&q, 4096, reinterpret_cast<CUmemoryPool>(&bogus), s),
                CUDA_ERROR_INVALID_HANDLE);
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("work on a stream-ordered freed buffer faults like a GPU would", "[fakecuda][streams][async]") {
  driver_ready();
  // The fault is sticky, as on a GPU: the context is unusable from then on. A context of its own
  // keeps the rest of the suite on a healthy primary context.
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuCtxCreate(&ctx, nullptr, 0, 0));
  CUstream a = nullptr;
  CUstream b = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_REQUIRE_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocAsync(&p, 4096, a));
  CU_REQUIRE_OK(cuStreamSynchronize(a));
  {
    Gate gate;
    gate.hold(b);
    CU_REQUIRE_OK(cuMemsetD8Async(p, 1, 4096, b));  // valid when issued...
    CU_REQUIRE_OK(cuMemFreeAsync(p, a));            // ...but freed on another stream, unordered
    CU_REQUIRE_OK(cuStreamSynchronize(a));
    gate.open();
    CU_CHECK_IS(cuStreamSynchronize(b), CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr q = 0;
  CU_CHECK_IS(cuMemAllocAsync(&q, 64, b), CUDA_ERROR_ILLEGAL_ADDRESS);
  CU_CHECK_IS(cuCtxDestroy(ctx), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamSynchronize(a), CUDA_ERROR_INVALID_HANDLE);  // destroyed with its context
  driver_ready();
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_CASE("many launches run in order and are counted", "[fakecuda][streams][launch]") {
  driver_ready();
  TestModule module;
  const CUfunction bump = module.get("bump");
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr counter = 0;
  CU_REQUIRE_OK(cuMemAlloc(&counter, sizeof(unsigned long long)));
  CU_REQUIRE_OK(cuMemsetD8(counter, 0, sizeof(unsigned long long)));
  CU_REQUIRE_OK(cuCtxSynchronize());
  const fakecuda_stats before = stats_now();
  const unsigned long long bump_before = fakecuda_kernel_launches("bump");
  constexpr int kLaunches = 20000;
  void* args[] = {&counter};
  int refused = 0;
  for (int i = 0; i < kLaunches; ++i) {
    refused += cuLaunchKernel(bump, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr) == CUDA_SUCCESS ? 0 : 1;
  }
  CHECK(refused == 0);
  unsigned long long value = 0;
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(&value, counter, sizeof value, s));  // pageable: returns when done
  CHECK(value == kLaunches);
  CHECK(stats_now().launches - before.launches == kLaunches);
  CHECK(fakecuda_kernel_launches("bump") - bump_before == kLaunches);
  CU_CHECK_IS(cuMemFree(counter), CUDA_SUCCESS);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}
