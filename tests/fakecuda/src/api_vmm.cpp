// Entry points: the virtual memory management family (reserve, create, map, set access, unmap,
// release) with the driver's 2 MiB granularity.
#include "driver.hpp"
#include "memory.hpp"

#include <utility>
#include <vector>

using namespace fakecuda;

namespace {

CUresult prologue() {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  return current_context(ctx);
}

// Only what the emulated machine can back: pinned memory on one of its devices, or pinned host memory
// (CU_MEM_LOCATION_TYPE_HOST, or HOST_NUMA on node 0: this machine has one node), which a
// device mapping reaches across the link, as since CUDA 12.2.
CUresult check_prop(const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return check_device(prop->location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return prop->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

FAKECUDA_API CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                    CUmemAllocationGranularity_flags option) {
  FC_TRY(check_init());
  if (granularity == nullptr ||
      (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_prop(prop));
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                          unsigned long long flags) {
  FC_TRY(prologue());
  if (ptr == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().reserve(size, alignment, addr, *ptr); });
}

FAKECUDA_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FC_TRY(prologue());
  return guarded([&] { return memory().unreserve(ptr, size); });
}

FAKECUDA_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                  unsigned long long flags) {
  FC_TRY(prologue());
  if (handle == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_prop(prop));
  return guarded([&] { return memory().create_physical(size, *prop, *handle); });
}

FAKECUDA_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FC_TRY(prologue());
  return guarded([&] { return memory().release_physical(handle); });
}

FAKECUDA_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                               unsigned long long flags) {
  FC_TRY(prologue());
  if (flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().map(ptr, size, offset, handle); });
}

FAKECUDA_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FC_TRY(prologue());
  return guarded([&] { return memory().unmap(ptr, size); });
}

FAKECUDA_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  FC_TRY(prologue());
  if (desc == nullptr || count == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    // Each descriptor sets one device's access; devices not named keep what they had.
    std::vector<std::pair<int, unsigned>> per_device;
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      FC_TRY(check_device(desc[i].location.id));
      per_device.emplace_back(desc[i].location.id, static_cast<unsigned>(desc[i].flags));
    }
    return memory().set_access(ptr, size, per_device);
  });
}

FAKECUDA_API CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  FC_TRY(prologue());
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_device(location->id));
  unsigned access = 0;
  FC_TRY(memory().get_access(ptr, location->id, access));
  *flags = access;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  FC_TRY(prologue());
  if (handle == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().retain_physical(reinterpret_cast<CUdeviceptr>(addr), *handle); });
}

FAKECUDA_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                             CUmemGenericAllocationHandle handle) {
  FC_TRY(prologue());
  if (prop == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return memory().physical_properties(handle, *prop);
}
