// Virtual memory management: granularity, reserve/create/map/set access/unmap/release, aliasing of
// one physical allocation mapped twice, accounting and the driver's errors.
#include "fixture.hpp"

#include <vector>

using namespace fakecuda_test;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

CUmemAllocationProp device_prop() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

CUresult grant(CUdeviceptr p, size_t size, CUmemAccess_flags flags) {
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 0;
  desc.flags = flags;
  return cuMemSetAccess(p, size, &desc, 1);
}

}  // namespace

TEST_CASE("VMM granularity is 2 MiB", "[fakecuda][vmm]") {
  driver_ready();
  const CUmemAllocationProp prop = device_prop();
  size_t g = 0;
  CU_REQUIRE_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(g == 2 * kMiB);
  CU_REQUIRE_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  CHECK(g == 2 * kMiB);
  CUmemAllocationProp bad = prop;
  bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  CU_CHECK_IS(cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);
  bad = prop;
  bad.location.id = 3;
  CU_CHECK_IS(cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_DEVICE);
}

TEST_CASE("reserve, create, map, access, unmap, release", "[fakecuda][vmm]") {
  driver_ready();
  const CUmemAllocationProp prop = device_prop();
  const fakecuda_stats before = stats_now();
  CUdeviceptr va = 0;
  CU_REQUIRE_OK(cuMemAddressReserve(&va, 8 * kMiB, 0, 0, 0));
  CHECK(va % (2 * kMiB) == 0);
  CHECK(stats_now().bytes_in_use == before.bytes_in_use);  // address space costs no memory
  CUmemGenericAllocationHandle h1 = 0;
  CUmemGenericAllocationHandle h2 = 0;
  CU_REQUIRE_OK(cuMemCreate(&h1, 4 * kMiB, &prop, 0));
  CU_REQUIRE_OK(cuMemCreate(&h2, 4 * kMiB, &prop, 0));
  CHECK(stats_now().bytes_in_use - before.bytes_in_use == 8 * kMiB);
  CU_REQUIRE_OK(cuMemMap(va, 4 * kMiB, 0, h1, 0));
  CU_REQUIRE_OK(cuMemMap(va + 4 * kMiB, 4 * kMiB, 0, h2, 0));

  std::vector<unsigned> host(1024, 5);
  CU_CHECK_IS(cuMemcpyHtoD(va, host.data(), 4096), CUDA_ERROR_INVALID_VALUE);  // mapped, no access yet
  CU_REQUIRE_OK(grant(va, 8 * kMiB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  unsigned long long access = 0;
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CU_REQUIRE_OK(cuMemGetAccess(&access, &where, va + 5 * kMiB));
  CHECK(access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  // One copy across the boundary of the two mappings: contiguous device memory.
  const CUdeviceptr across = va + 4 * kMiB - 2048;
  CU_REQUIRE_OK(cuMemcpyHtoD(across, host.data(), 4096));
  std::vector<unsigned> back(1024, 0);
  CU_REQUIRE_OK(cuMemcpyDtoH(back.data(), across, 4096));
  CHECK(back == host);

  SECTION("one physical allocation mapped twice shows the same bytes") {
    CUdeviceptr alias = 0;
    CU_REQUIRE_OK(cuMemAddressReserve(&alias, 4 * kMiB, 0, 0, 0));
    CU_REQUIRE_OK(cuMemMap(alias, 4 * kMiB, 0, h2, 0));
    CU_REQUIRE_OK(grant(alias, 4 * kMiB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CU_REQUIRE_OK(cuMemsetD32(va + 4 * kMiB + 64, 0xfeedu, 4));
    unsigned seen[4] = {};
    CU_REQUIRE_OK(cuMemcpyDtoH(seen, alias + 64, sizeof seen));
    CHECK(seen[0] == 0xfeedu);
    CHECK(seen[3] == 0xfeedu);
    CUmemGenericAllocationHandle retained = 0;
    CU_REQUIRE_OK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(alias + 100)));
    CHECK(retained == h2);
    CU_REQUIRE_OK(cuMemRelease(retained));
    CU_REQUIRE_OK(cuMemUnmap(alias, 4 * kMiB));
    CU_REQUIRE_OK(cuMemAddressFree(alias, 4 * kMiB));
  }
  SECTION("mapping errors") {
    CUmemGenericAllocationHandle h3 = 0;
    CU_CHECK_IS(cuMemCreate(&h3, 3 * kMiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not a granule multiple
    CU_CHECK_IS(cuMemCreate(&h3, kTestCapacity, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_CHECK_IS(cuMemMap(va, 2 * kMiB, 0, h1, 0), CUDA_ERROR_INVALID_VALUE);             // already mapped
    CU_CHECK_IS(cuMemMap(va + 1024, 2 * kMiB, 0, h1, 0), CUDA_ERROR_INVALID_VALUE);      // unaligned
    CU_CHECK_IS(cuMemMap(va + 8 * kMiB, 2 * kMiB, 0, h1, 0), CUDA_ERROR_INVALID_VALUE);  // outside the reservation
    CU_CHECK_IS(cuMemUnmap(va, 2 * kMiB), CUDA_ERROR_INVALID_VALUE);                     // part of a mapping
    CU_CHECK_IS(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);               // still mapped
    CU_CHECK_IS(grant(va + 8 * kMiB, 2 * kMiB, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK_IS(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);  // VMM memory is not cuMemAlloc memory
  }
  // Releasing the handles while mapped keeps the memory until the unmap.
  CU_REQUIRE_OK(cuMemRelease(h1));
  CU_REQUIRE_OK(cuMemRelease(h2));
  CU_CHECK_IS(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
  CHECK(stats_now().bytes_in_use - before.bytes_in_use == 8 * kMiB);
  CU_REQUIRE_OK(cuMemUnmap(va, 8 * kMiB));
  CHECK(stats_now().bytes_in_use == before.bytes_in_use);
  CU_CHECK_IS(cuMemcpyDtoH(back.data(), va, 16), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemAddressFree(va, 8 * kMiB), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);
  const fakecuda_stats after = stats_now();
  CHECK(after.vmm_creates - before.vmm_creates == 2);
  CHECK(after.vmm_maps - after.vmm_unmaps == before.vmm_maps - before.vmm_unmaps);
}
