// Entry points: device, stream-ordered, pinned host and managed allocation; managed advice and
// prefetch; address ranges and pointer attributes.
#include "capture.hpp"
#include "devices.hpp"
#include "driver.hpp"
#include "graph.hpp"
#include "link.hpp"
#include "mem_pool.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <cstring>

using namespace fakecuda;

namespace {

CUresult prologue(Context*& ctx) {
  FC_TRY(check_init());
  return current_context(ctx);
}

// From `pool`, or (nullptr) the current pool of the stream's device, as cuMemAllocAsync does.
CUresult alloc_async(CUdeviceptr* dptr, size_t bytesize, CUstream hStream, bool per_thread, MemPool* pool = nullptr) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (dptr == nullptr || bytesize == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(hStream, per_thread, s));
    FC_TRY(sticky_error(s->context));
    if (captures_exist()) {  // in a capture: a mem-alloc node, "owned by the graph instead of the memory pool"
      bool captured = false;
      FC_TRY(capture_work(
          s,
          [&](NodeParams& node) {
            const CUresult made = alloc_node_params_for_stream(node, bytesize, s->context);
            if (made == CUDA_SUCCESS) {
              *dptr = node.allocation->ptr;
            }
            return made;
          },
          captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    // The memory exists from now on; work issued to `s` afterwards may use it, as stream order
    // guarantees on the GPU.
    MemPool& from = pool != nullptr ? *pool : current_pool(s->context->device);
    return memory().allocate_in_pool(from, bytesize, s->id, s->context, *dptr);
  });
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(hStream, per_thread, s));
    if (captures_exist()) {  // in a capture: a mem-free node, which must name a graph allocation
      bool captured = false;
      FC_TRY(capture_work(
          s, [&](NodeParams& node) { return free_node_params_locked(node, dptr); }, captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    FC_TRY(memory().begin_async_free(dptr, s->id));
    enqueue(s, [dptr] { memory().release_pending(dptr); });
    return CUDA_SUCCESS;
  });
}

// Where a prefetch goes: the device, or the host (CU_DEVICE_CPU).
CUresult prefetch(CUdeviceptr devPtr, size_t bytes, bool to_device, int location, CUstream hStream, bool per_thread) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(memory().check_managed_range(devPtr, bytes));
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(hStream, per_thread, s));
    FC_TRY(capture_refuse(s));  // prefetches are not captured into graphs here
    count(stats().prefetches);
    enqueue(s, [devPtr, bytes, to_device, location] {
      const Migration moved = memory().migrate(devPtr, bytes, to_device, location);
      link_migrate(moved.to_device, moved.to_host);  // the stream waits for the link, not the host
    });
    return CUDA_SUCCESS;
  });
}

CUresult prefetch_v1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream, bool per_thread) {
  if (dstDevice != CU_DEVICE_CPU) {
    FC_TRY(check_device(dstDevice));
  }
  return prefetch(devPtr, count, dstDevice != CU_DEVICE_CPU, dstDevice, hStream, per_thread);
}

// CUmemLocation -> device ordinal or CU_DEVICE_CPU.
CUresult location_device(const CUmemLocation& location, int& device) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      FC_TRY(check_device(location.id));
      device = location.id;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      device = CU_DEVICE_CPU;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult prefetch_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned flags, CUstream hStream,
                     bool per_thread) {
  if (flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int device = 0;
  FC_TRY(location_device(location, device));
  return prefetch(devPtr, count, device != CU_DEVICE_CPU, device, hStream, per_thread);
}

template <class T>
void put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

// The access flags the current context's device has on a VMM mapping (another device's: none).
unsigned vmm_access_of_current(CUdeviceptr ptr) {
  Context* ctx = current_context_or_null();
  unsigned flags = 0;
  memory().get_access(ptr, ctx != nullptr ? ctx->device : 0, flags);
  return flags;
}

// One attribute of a known pointer; CUDA_ERROR_INVALID_VALUE where the driver has none.
CUresult pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr, const PointerInfo& info) {
  const bool device_side = info.kind != MemKind::host;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(data, reinterpret_cast<CUcontext>(info.context != nullptr ? info.context : &primary_context(info.device)));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(data, static_cast<unsigned>(device_side ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(data, ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (info.kind == MemKind::device || info.kind == MemKind::vmm) {
        return CUDA_ERROR_INVALID_VALUE;  // device memory has no host mapping
      }
      put(data, reinterpret_cast<void*>(ptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put(data, false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      put(data, static_cast<unsigned long long>(info.buffer_id));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(data, info.kind == MemKind::managed);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, static_cast<int>(info.device));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put(data, info.kind == MemKind::device && !info.async && !info.imported);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put(data, static_cast<CUdeviceptr>(info.base));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      put(data, static_cast<size_t>(info.size));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(data, true);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(data, static_cast<unsigned long long>(info.pool != nullptr ? info.pool->handle_types : 0));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      put(data, false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(data, info.kind == MemKind::vmm ? vmm_access_of_current(ptr)
                                          : static_cast<unsigned>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(data, info.pool != nullptr ? pool_handle(*info.pool) : static_cast<CUmemoryPool>(nullptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      put(data, static_cast<size_t>(info.size));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      put(data, reinterpret_cast<void*>(info.base));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      put(data, static_cast<unsigned long long>(info.buffer_id));
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// cuMemAllocFromPoolAsync[_ptsz]: any live pool the program created or a device's default one,
// whatever device the stream is on; an imported pool cannot allocate.
CUresult alloc_from_pool(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream, bool per_thread) {
  FC_TRY(check_init());
  if (pool == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  MemPool* p = find_pool(pool);
  if (p == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (p->imported) {
    return CUDA_ERROR_INVALID_VALUE;  // "Imported memory pools do not support creating new allocations"
  }
  return alloc_async(dptr, bytesize, hStream, per_thread, p);
}

}  // namespace

// ---- device memory -------------------------------------------------------------------

FAKECUDA_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  if (dptr == nullptr || bytesize == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().allocate(bytesize, MemKind::device, false, ctx, *dptr); });
}

FAKECUDA_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                         unsigned int ElementSizeBytes) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0 ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t pitch = (WidthInBytes + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
  if (Height > (~std::size_t{0}) / pitch) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return guarded([&] {
    FC_TRY(memory().allocate(pitch * Height, MemKind::device, false, ctx, *dptr));
    *pPitch = pitch;
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  if (dptr == 0) {
    return CUDA_SUCCESS;
  }
  return guarded([&] {
    PointerInfo info;
    if (!memory().lookup(dptr, info) || info.base != dptr || info.kind == MemKind::host || info.kind == MemKind::vmm) {
      return CUDA_ERROR_INVALID_VALUE;  // not an allocation start, or already freed
    }
    // cuMemFree synchronises the device first: work already issued may still use the memory.
    synchronize_device();
    return memory().free_now(dptr);
  });
}

FAKECUDA_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, hStream, false);
}
FAKECUDA_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, hStream, true);
}
FAKECUDA_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream, false); }
FAKECUDA_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream, true);
}

FAKECUDA_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return alloc_from_pool(dptr, bytesize, pool, hStream, false);
}
FAKECUDA_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream) {
  return alloc_from_pool(dptr, bytesize, pool, hStream, true);
}

FAKECUDA_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  PointerInfo info;
  if (!memory().lookup(dptr, info) || info.kind == MemKind::host) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (pbase != nullptr) {
    *pbase = info.base;
  }
  if (psize != nullptr) {
    *psize = info.size;
  }
  return CUDA_SUCCESS;
}

// ---- pinned host memory --------------------------------------------------------------

FAKECUDA_API CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  if (pp == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().host_alloc(bytesize, Flags, *pp); });
}

FAKECUDA_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

FAKECUDA_API CUresult cuMemFreeHost(void* p) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  return guarded([&] {
    synchronize_device();  // queued copies may still read or write it
    return memory().host_free(p);
  });
}

FAKECUDA_API CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  return guarded([&] { return memory().host_register(p, bytesize, Flags); });
}

FAKECUDA_API CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return cuMemHostRegister_v2(p, bytesize, Flags);
}

FAKECUDA_API CUresult cuMemHostUnregister(void* p) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  return guarded([&] {
    synchronize_device();
    return memory().host_unregister(p);
  });
}

FAKECUDA_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (pdptr == nullptr || Flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!memory().is_pinned_host(p, 1)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (pFlags == nullptr || !memory().is_pinned_host(p, 1)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pFlags = CU_MEMHOSTALLOC_DEVICEMAP;
  return CUDA_SUCCESS;
}

// ---- managed memory ------------------------------------------------------------------

FAKECUDA_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  FC_TRY(capture_check_unsafe_call());
  if (dptr == nullptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return memory().allocate(bytesize, MemKind::managed, false, ctx, *dptr); });
}

FAKECUDA_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  if (device != CU_DEVICE_CPU) {
    FC_TRY(check_device(device));
  }
  return guarded([&] { return memory().advise(devPtr, count, advice, device); });
}

FAKECUDA_API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  int device = 0;
  const bool location_matters = advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
                                advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
  if (location_matters) {
    FC_TRY(location_device(location, device));
  }
  return guarded([&] { return memory().advise(devPtr, count, advice, device); });
}

FAKECUDA_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return prefetch_v1(devPtr, count, dstDevice, hStream, false);
}
FAKECUDA_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return prefetch_v1(devPtr, count, dstDevice, hStream, true);
}
FAKECUDA_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                            unsigned int flags, CUstream hStream) {
  return prefetch_v2(devPtr, count, location, flags, hStream, false);
}
FAKECUDA_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                 unsigned int flags, CUstream hStream) {
  return prefetch_v2(devPtr, count, location, flags, hStream, true);
}

FAKECUDA_API CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                             CUdeviceptr devPtr, size_t count) {
  Context* ctx = nullptr;
  FC_TRY(prologue(ctx));
  return guarded([&] { return memory().range_attribute(data, dataSize, attribute, devPtr, count); });
}

// ---- pointer attributes --------------------------------------------------------------

FAKECUDA_API CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FC_TRY(check_init());
  if (data == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PointerInfo info;
  if (!memory().lookup(ptr, info)) {
    return CUDA_ERROR_INVALID_VALUE;  // not memory the driver knows
  }
  return pointer_attribute(data, attribute, ptr, info);
}

FAKECUDA_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                             CUdeviceptr ptr) {
  FC_TRY(check_init());
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PointerInfo info;
  const bool known = memory().lookup(ptr, info);
  for (unsigned i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (known) {
      FC_TRY(pointer_attribute(data[i], attributes[i], ptr, info));
      continue;
    }
    // Unlike cuPointerGetAttribute, an unknown pointer is not an error here: every attribute
    // reads as "nothing" (memory type 0, no context, ordinal -2).
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_CONTEXT:
        put(data[i], static_cast<CUcontext>(nullptr));
        break;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        put(data[i], 0u);
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        put(data[i], CUdeviceptr{0});
        break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        put(data[i], static_cast<void*>(nullptr));
        break;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        put(data[i], 0ULL);
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        put(data[i], -2);
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        put(data[i], CUdeviceptr{0});
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        put(data[i], size_t{0});
        break;
      case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        put(data[i], 0ULL);
        break;
      case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        put(data[i], 0u);
        break;
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        put(data[i], static_cast<CUmemoryPool>(nullptr));
        break;
      default:
        put(data[i], false);
        break;
    }
  }
  return CUDA_SUCCESS;
}
