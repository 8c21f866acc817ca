// The handlers around fake real functions: result passed through unchanged, allocation
// recorded only after success, free recorded before the real free, streams of _ptsz twins.
#include <catch2/catch.hpp>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/driver_device.hpp"
#include "memtool/interpose/handlers.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;
using memtool::trace::MemoryKind;

namespace {

CollectingSink::Shared* g_shared = nullptr;
CUresult g_next_result = CUDA_SUCCESS;
std::size_t g_events_seen_by_real = 0;  // how many events the sink had when the real function ran

CUresult fake_alloc(CUdeviceptr* dptr, size_t) {
  g_events_seen_by_real = g_shared->events.size();
  if (g_next_result == CUDA_SUCCESS) *dptr = 0xA0000;
  return g_next_result;
}
CUresult fake_alloc_async(CUdeviceptr* dptr, size_t, CUstream) {
  *dptr = 0xB0000;
  return CUDA_SUCCESS;
}
CUresult fake_free(CUdeviceptr) {
  g_events_seen_by_real = g_shared->events.size();
  return g_next_result;
}
CUresult fake_memset_2d(CUdeviceptr, size_t, unsigned int, size_t, size_t) { return CUDA_SUCCESS; }
CUresult fake_copy_2d(const CUDA_MEMCPY2D*) { return CUDA_SUCCESS; }
CUresult fake_map(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  return CUDA_SUCCESS;
}
CUresult fake_unmap(CUdeviceptr, size_t) { return CUDA_SUCCESS; }
CUresult fake_stream_sync(CUstream) {
  g_events_seen_by_real = g_shared->events.size();
  return CUDA_ERROR_LAUNCH_FAILED;
}
unsigned g_launch_grid = 0;
CUresult fake_launch(CUfunction, unsigned gx, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void**, void**) {
  g_launch_grid = gx;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_current_context(CUcontext* ctx) {
  *ctx = reinterpret_cast<CUcontext>(0xC0);
  return CUDA_SUCCESS;
}

// The driver functions the engine's device calls: the allocation family reaches the driver
// through the strategy's stack, not through the handler's `real`.
DriverFunctions fake_driver_functions() {
  DriverFunctions f;
  f.mem_alloc = fake_alloc;
  f.mem_free = fake_free;
  f.mem_alloc_async = fake_alloc_async;
  return f;
}

struct Fixture {
  CollectingSink::Shared shared;
  Recorder recorder{default_options(), std::make_unique<CollectingSink>(shared)};
  DriverDevice device{fake_driver_functions()};
  ContextRuntimes runtimes{memtool::engine::StrategyOptions{}, device, recorder.observer(), fake_current_context};
  Fixture() {
    g_shared = &shared;
    g_next_result = CUDA_SUCCESS;
    install_fake_kernels();
    recorder.set_driver_queries(fake_queries());
  }
  template <class F>
  Call<F> call(F real, Variant variant = Variant::plain) {
    return Call<F>{real, variant, recorder, runtimes};
  }
};

}  // namespace

TEST_CASE("an allocation is recorded after it succeeded, and only then", "[interpose][handlers]") {
  Fixture f;
  CUdeviceptr p = 0;
  CHECK(handle_cuMemAlloc_v2(f.call<fn::cuMemAlloc_v2>(fake_alloc), &p, 100) == CUDA_SUCCESS);
  CHECK(g_events_seen_by_real == 0);
  REQUIRE(f.shared.events.size() == 1);
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[0]).address == 0xA0000);
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[0]).size == 100);

  g_next_result = CUDA_ERROR_OUT_OF_MEMORY;
  CHECK(handle_cuMemAlloc_v2(f.call<fn::cuMemAlloc_v2>(fake_alloc), &p, 1ULL << 40) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(f.shared.events.size() == 1);
}

TEST_CASE("a free is recorded before the real free, whatever it returns", "[interpose][handlers]") {
  Fixture f;
  CUdeviceptr p = 0;
  (void)handle_cuMemAlloc_v2(f.call<fn::cuMemAlloc_v2>(fake_alloc), &p, 100);
  g_next_result = CUDA_ERROR_INVALID_VALUE;
  CHECK(handle_cuMemFree_v2(f.call<fn::cuMemFree_v2>(fake_free), p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_events_seen_by_real == 2);  // the free event was already there
  CHECK(std::get<memtool::trace::FreeEvent>(f.shared.events[1]).address == 0xA0000);
  // Freeing null is a no-op for the driver and not an event.
  g_next_result = CUDA_SUCCESS;
  CHECK(handle_cuMemFree_v2(f.call<fn::cuMemFree_v2>(fake_free), 0) == CUDA_SUCCESS);
  CHECK(f.shared.events.size() == 2);
}

TEST_CASE("a _ptsz twin records stream 0 as the calling thread's per-thread stream", "[interpose][handlers]") {
  Fixture f;
  CUdeviceptr p = 0;
  (void)handle_cuMemAllocAsync(f.call<fn::cuMemAllocAsync>(fake_alloc_async, Variant::ptsz), &p, 64, nullptr);
  (void)handle_cuMemAllocAsync(f.call<fn::cuMemAllocAsync>(fake_alloc_async, Variant::plain), &p, 64, nullptr);
  const auto s = reinterpret_cast<CUstream>(0x55);
  (void)handle_cuMemAllocAsync(f.call<fn::cuMemAllocAsync>(fake_alloc_async, Variant::ptsz), &p, 64, s);
  (void)handle_cuMemAllocAsync(f.call<fn::cuMemAllocAsync>(fake_alloc_async, Variant::plain), &p, 64,
                               CU_STREAM_PER_THREAD);
  REQUIRE(f.shared.events.size() == 4);
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[0]).stream.value() == own_per_thread_stream());
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[1]).stream.value() == 0);
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[2]).stream.value() == 0x55);
  // The handle CU_STREAM_PER_THREAD is the same stream as the twin's stream 0 on this thread.
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[3]).stream.value() == own_per_thread_stream());
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[0]).kind == MemoryKind::async);
}

TEST_CASE("memsets and copies record their extent", "[interpose][handlers]") {
  Fixture f;
  (void)handle_cuMemsetD2D32_v2(f.call<fn::cuMemsetD2D32_v2>(fake_memset_2d), 0x1000, 4096, 7u, 10, 3);
  CHECK(std::get<memtool::trace::MemsetEvent>(f.shared.events[0]).bytes == 10 * 4 * 3);
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = reinterpret_cast<const void*>(0x5000);
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = 0x9000;
  copy.WidthInBytes = 16;
  copy.Height = 4;
  (void)handle_cuMemcpy2D_v2(f.call<fn::cuMemcpy2D_v2>(fake_copy_2d), &copy);
  const auto& event = std::get<memtool::trace::CopyEvent>(f.shared.events[1]);
  CHECK(event.kind == memtool::trace::CopyKind::h2d);
  CHECK(event.bytes == 64);
  CHECK(event.src == 0x5000);
  CHECK(event.dst == 0x9000);
  CHECK_FALSE(event.async);
}

TEST_CASE("VMM: map is the allocation, unmap the free", "[interpose][handlers]") {
  Fixture f;
  (void)handle_cuMemMap(f.call<fn::cuMemMap>(fake_map), 0x200000, 0x400000, 0, 1, 0);
  (void)handle_cuMemUnmap(f.call<fn::cuMemUnmap>(fake_unmap), 0x200000, 0x400000);
  REQUIRE(f.shared.events.size() == 2);
  CHECK(std::get<memtool::trace::AllocEvent>(f.shared.events[0]).kind == MemoryKind::vmm);
  CHECK(std::get<memtool::trace::FreeEvent>(f.shared.events[1]).address == 0x200000);
}

TEST_CASE("sync is recorded after the wait; results pass through unchanged", "[interpose][handlers]") {
  Fixture f;
  CHECK(handle_cuStreamSynchronize(f.call<fn::cuStreamSynchronize>(fake_stream_sync), nullptr) ==
        CUDA_ERROR_LAUNCH_FAILED);
  CHECK(g_events_seen_by_real == 0);
  CHECK(std::get<memtool::trace::SyncEvent>(f.shared.events[0]).kind == memtool::trace::SyncKind::stream);
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint64_t c = 0;
  int n = 0;
  void* params[] = {&a, &b, &c, &n};
  CHECK(handle_cuLaunchKernel(f.call<fn::cuLaunchKernel>(fake_launch), handle(0x100), 17, 1, 1, 32, 1, 1, 0, nullptr,
                              params, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_launch_grid == 17);
}
