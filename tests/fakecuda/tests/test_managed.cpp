// Managed memory: residency accounting (host vs device), both generations of cuMemAdvise and
// cuMemPrefetchAsync, migration by kernel use, eviction under device pressure, first touches that
// populate without a migration.
#include "fixture.hpp"

using namespace fakecuda_test;

namespace {

CUmemLocation device_location() {
  CUmemLocation l{};
  l.type = CU_MEM_LOCATION_TYPE_DEVICE;
  l.id = 0;
  return l;
}

CUmemLocation host_location() {
  CUmemLocation l{};
  l.type = CU_MEM_LOCATION_TYPE_HOST;
  l.id = 0;
  return l;
}

// The first generation (CUdevice arguments) as cudart 8.0-12.1 resolve it: cuda.h now maps the
// plain names to the second generation.
using AdviseV1 = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUdevice);
using PrefetchV1 = CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream);

template <class F>
F resolve_v1(const char* name) {
  void* fn = nullptr;
  REQUIRE(cuGetProcAddress(name, &fn, 12000, 0, nullptr) == CUDA_SUCCESS);
  return reinterpret_cast<F>(fn);
}

CUresult advise_v1(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev) {
  return resolve_v1<AdviseV1>("cuMemAdvise")(p, n, advice, dev);
}

CUresult prefetch_v1(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) {
  return resolve_v1<PrefetchV1>("cuMemPrefetchAsync")(p, n, dev, s);
}

int range_int(CUmem_range_attribute attribute, CUdeviceptr p, size_t size) {
  int value = 12345;
  REQUIRE(cuMemRangeGetAttribute(&value, sizeof value, attribute, p, size) == CUDA_SUCCESS);
  return value;
}

}  // namespace

TEST_CASE("managed memory is accounted where it resides", "[fakecuda][managed]") {
  driver_ready();
  const size_t size = size_t{8} << 20;
  const fakecuda_stats before = stats_now();
  size_t free0 = 0;
  size_t total = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free0, &total));
  CUdeviceptr m = 0;
  CU_REQUIRE_OK(cuMemAllocManaged(&m, size, CU_MEM_ATTACH_GLOBAL));
  bool managed = false;
  CU_REQUIRE_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
  CHECK(managed);
  CHECK(stats_now().managed_bytes - before.managed_bytes == size);
  CHECK(stats_now().managed_device_bytes == before.managed_device_bytes);  // nothing on the device yet
  size_t free1 = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free1, &total));
  CHECK(free1 == free0);

  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  SECTION("first generation: CUdevice arguments") {
    CU_REQUIRE_OK(advise_v1(m, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 0));
    CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, size) == 0);
    CU_REQUIRE_OK(prefetch_v1(m, size, 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size);
    CU_REQUIRE_OK(cuMemGetInfo(&free1, &total));
    CHECK(free0 - free1 == size);
    CU_REQUIRE_OK(prefetch_v1(m + size / 2, size / 2, CU_DEVICE_CPU, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size / 2);
    CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, size) == CU_DEVICE_CPU);
  }
  SECTION("second generation: CUmemLocation arguments") {
    CU_REQUIRE_OK(cuMemAdvise_v2(m, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host_location()));
    CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, size) == CU_DEVICE_CPU);
    CU_REQUIRE_OK(cuMemAdvise_v2(m, size, CU_MEM_ADVISE_SET_READ_MOSTLY, device_location()));
    CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, size) == 1);
    CU_REQUIRE_OK(cuMemPrefetchAsync_v2(m, size, device_location(), 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size);
    CU_REQUIRE_OK(cuMemPrefetchAsync_v2(m, size, host_location(), 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes == before.managed_device_bytes);
    CHECK(stats_now().bytes_migrated_to_host - before.bytes_migrated_to_host == size);
  }
  SECTION("a kernel using the memory pulls it onto the device") {
    TestModule module;
    const unsigned n = 1024;
    unsigned value = 77;
    unsigned count = n;
    void* args[] = {&m, &value, &count};
    CU_REQUIRE_OK(cuLaunchKernel(module.get("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, args, nullptr));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size);
    const auto* host_view = reinterpret_cast<const unsigned*>(m);  // managed: the host reads it directly
    CHECK(host_view[0] == 77);
    CHECK(host_view[n - 1] == 77);
  }
  SECTION("device allocations evict managed pages rather than fail") {
    CU_REQUIRE_OK(prefetch_v1(m, size, 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    size_t free_now = 0;
    CU_REQUIRE_OK(cuMemGetInfo(&free_now, &total));
    CUdeviceptr big = 0;
    CU_REQUIRE_OK(cuMemAlloc(&big, free_now + size / 2));
    const fakecuda_stats pressed = stats_now();
    CHECK(pressed.managed_device_bytes - before.managed_device_bytes <= size / 2);
    CHECK(pressed.bytes_in_use <= kTestCapacity);
    CU_CHECK_IS(cuMemFree(big), CUDA_SUCCESS);
  }
  CU_CHECK_IS(cuMemFree(m), CUDA_SUCCESS);
  CHECK(stats_now().managed_device_bytes == before.managed_device_bytes);
  CHECK(stats_now().managed_bytes == before.managed_bytes);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("a managed chunk's first touch populates it where it happens, without a migration", "[fakecuda][managed]") {
  driver_ready();
  const size_t size = size_t{8} << 20;
  size_t free0 = 0;
  size_t total = 0;
  CU_REQUIRE_OK(cuMemGetInfo(&free0, &total));
  CUdeviceptr m = 0;
  CU_REQUIRE_OK(cuMemAllocManaged(&m, size, CU_MEM_ATTACH_GLOBAL));
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  TestModule module;
  const unsigned n = static_cast<unsigned>(size / sizeof(unsigned));
  unsigned value = 9;
  unsigned count = n;
  void* args[] = {&m, &value, &count};
  const auto free_now = [&] {
    size_t f = 0;
    CU_REQUIRE_OK(cuMemGetInfo(&f, &total));
    return f;
  };
  fakecuda_stats before = stats_now();
  SECTION("a kernel's first touch: charged on the device, nothing migrated; after an eviction it migrates") {
    CU_REQUIRE_OK(cuLaunchKernel(module.get("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, args, nullptr));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_device - before.bytes_migrated_to_device == 0);
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size);
    CHECK(free0 - free_now() == size);
    CU_REQUIRE_OK(cuMemPrefetchAsync_v2(m, size, host_location(), 0, s));  // evicted: a real move
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_host - before.bytes_migrated_to_host == size);
    CHECK(free_now() == free0);
    before = stats_now();
    value = 10;
    CU_REQUIRE_OK(cuLaunchKernel(module.get("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, args, nullptr));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_device - before.bytes_migrated_to_device == size);
    CHECK(reinterpret_cast<const unsigned*>(m)[n - 1] == 10);
  }
  SECTION("a prefetch to the device of a fresh allocation populates it there without a copy") {
    CU_REQUIRE_OK(cuMemPrefetchAsync_v2(m, size, device_location(), 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_device - before.bytes_migrated_to_device == 0);
    CHECK(free0 - free_now() == size);
    CHECK(reinterpret_cast<const unsigned*>(m)[n / 2] == 0);  // new managed memory reads as zeroes here
  }
  SECTION("populated on the host by a prefetch, the kernel's touch is a migration") {
    CU_REQUIRE_OK(cuMemPrefetchAsync_v2(m, size, host_location(), 0, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_host - before.bytes_migrated_to_host == 0);
    CHECK(free_now() == free0);
    CU_REQUIRE_OK(cuLaunchKernel(module.get("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, args, nullptr));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_device - before.bytes_migrated_to_device == size);
  }
  SECTION("a memset through the driver populates on the stream's device; the kernel after it moves nothing") {
    CU_REQUIRE_OK(cuMemsetD32Async(m, 3, n / 2, s));  // the first half only
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == size / 2);
    CHECK(free0 - free_now() == size / 2);
    CU_REQUIRE_OK(cuLaunchKernel(module.get("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, args, nullptr));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(stats_now().bytes_migrated_to_device - before.bytes_migrated_to_device == 0);
    CHECK(free0 - free_now() == size);
  }
  CU_CHECK_IS(cuMemFree(m), CUDA_SUCCESS);
  CHECK(free_now() == free0);
  CU_CHECK_IS(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_CASE("managed calls refuse what the driver refuses", "[fakecuda][managed][errors]") {
  driver_ready();
  CUdeviceptr m = 0;
  CU_CHECK_IS(cuMemAllocManaged(&m, 4096, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
  CUdeviceptr d = 0;
  CU_REQUIRE_OK(cuMemAlloc(&d, 4096));
  CU_CHECK_IS(prefetch_v1(d, 4096, 0, nullptr), CUDA_ERROR_INVALID_VALUE);  // not managed
  CU_CHECK_IS(advise_v1(d, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(prefetch_v1(m, 8192, 0, nullptr), CUDA_ERROR_INVALID_VALUE);  // past the end
  CU_CHECK_IS(prefetch_v1(m, 4096, 3, nullptr), CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(advise_v1(m, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 5), CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(advise_v1(m, 4096, static_cast<CUmem_advise>(7), 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemPrefetchAsync_v2(m, 4096, device_location(), 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemFree(m), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(d), CUDA_SUCCESS);
  CU_CHECK_IS(prefetch_v1(m, 4096, 0, nullptr), CUDA_ERROR_INVALID_VALUE);  // freed
}
