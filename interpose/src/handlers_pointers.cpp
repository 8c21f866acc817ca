// The handlers of pointer queries and IPC export (see handlers.hpp). A buffer the engine
// sub-allocated from a pool is, to the driver, a piece of one big allocation: without these the
// program would be told the pool's range and id (and NCCL-style registration caches, which key
// on them, would confuse buffers), and an IPC handle would share the whole pool (DESIGN.md
// invariant 3). So the answers describe the program's own buffer; exporting one pins it first
// and, where the driver's handle would not reach it, hands out memtool's own (ipc_bridge.hpp).
#include "memtool/interpose/handlers.hpp"

#include "memtool/interpose/ipc_bridge.hpp"

namespace memtool::interpose {
namespace {

std::uint64_t u64(CUdeviceptr p) { return static_cast<std::uint64_t>(p); }

// The attributes whose driver answer is the pool's, rewritten for the buffer.
void describe_buffer(CUpointer_attribute attribute, void* data, const engine::BufferExtent& extent) {
  if (data == nullptr) return;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = extent.base;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = static_cast<size_t>(extent.size);
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = extent.id;
      break;
    default:
      break;  // context, memory type, device, mapping, pool...: the same for the buffer
  }
}

}  // namespace

CUresult handle_cuMemGetAddressRange_v2(const Call<fn::cuMemGetAddressRange_v2>& call, CUdeviceptr* pbase,
                                        size_t* psize, CUdeviceptr dptr) noexcept {
  const CUresult result = call.real(pbase, psize, dptr);
  if (result != CUDA_SUCCESS) return result;
  if (const auto extent = call.runtimes.extent_of(u64(dptr))) {
    if (pbase != nullptr) *pbase = extent->base;
    if (psize != nullptr) *psize = static_cast<size_t>(extent->size);
  }
  return result;
}

CUresult handle_cuPointerGetAttribute(const Call<fn::cuPointerGetAttribute>& call, void* data,
                                      CUpointer_attribute attribute, CUdeviceptr ptr) noexcept {
  const CUresult result = call.real(data, attribute, ptr);
  if (result != CUDA_SUCCESS) return result;
  if (const auto extent = call.runtimes.extent_of(u64(ptr))) describe_buffer(attribute, data, *extent);
  return result;
}

CUresult handle_cuPointerGetAttributes(const Call<fn::cuPointerGetAttributes>& call, unsigned int numAttributes,
                                       CUpointer_attribute* attributes, void** data, CUdeviceptr ptr) noexcept {
  const CUresult result = call.real(numAttributes, attributes, data, ptr);
  if (result != CUDA_SUCCESS || attributes == nullptr || data == nullptr) return result;
  if (const auto extent = call.runtimes.extent_of(u64(ptr))) {
    for (unsigned int i = 0; i < numAttributes; ++i) describe_buffer(attributes[i], data[i], *extent);
  }
  return result;
}

// A buffer memtool serves is pinned by its resource, then exported in a way that reaches its own
// bytes (IpcBridge); managed memory (uvm swapping) cannot be exported by any call: refused with
// the driver's answer for memory it cannot export.
CUresult handle_cuIpcGetMemHandle(const Call<fn::cuIpcGetMemHandle>& call, CUipcMemHandle* pHandle,
                                  CUdeviceptr dptr) noexcept {
  const engine::ExportPin pin = call.runtimes.pin_for_export(u64(dptr));
  if (pin == engine::ExportPin::not_served) return call.real(pHandle, dptr);
  if (pin == engine::ExportPin::unexportable) return CUDA_ERROR_INVALID_VALUE;
  IpcBridge* bridge = call.runtimes.ipc_bridge();
  if (bridge == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return bridge->export_handle(pHandle, dptr, pin);
}

CUresult handle_cuIpcOpenMemHandle_v2(const Call<fn::cuIpcOpenMemHandle_v2>& call, CUdeviceptr* pdptr,
                                      CUipcMemHandle handle, unsigned int Flags) noexcept {
  if (IpcBridge* bridge = call.runtimes.ipc_bridge()) {
    if (const auto result = bridge->open(pdptr, handle, Flags)) return *result;
  }
  return call.real(pdptr, handle, Flags);
}

CUresult handle_cuIpcCloseMemHandle(const Call<fn::cuIpcCloseMemHandle>& call, CUdeviceptr dptr) noexcept {
  if (IpcBridge* bridge = call.runtimes.ipc_bridge()) {
    if (const auto result = bridge->close(dptr)) return *result;
  }
  return call.real(dptr);
}

// The handle names the buffer's physical memory: pinned, so the program's handle stays its memory.
CUresult handle_cuMemRetainAllocationHandle(const Call<fn::cuMemRetainAllocationHandle>& call,
                                            CUmemGenericAllocationHandle* handle, void* addr) noexcept {
  (void)call.runtimes.pin_for_export(reinterpret_cast<std::uintptr_t>(addr));
  return call.real(handle, addr);
}

// NCCL user-buffer registration, GPUDirect (dma-buf): the range's buffers stay where they are.
CUresult handle_cuMemGetHandleForAddressRange(const Call<fn::cuMemGetHandleForAddressRange>& call, void* handle,
                                              CUdeviceptr dptr, size_t size, CUmemRangeHandleType handleType,
                                              unsigned long long flags) noexcept {
  (void)call.runtimes.pin_for_export(u64(dptr));
  return call.real(handle, dptr, size, handleType, flags);
}

CUresult handle_cuMemPoolExportPointer(const Call<fn::cuMemPoolExportPointer>& call,
                                       CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) noexcept {
  (void)call.runtimes.pin_for_export(u64(ptr));
  return call.real(shareData_out, ptr);
}

// The current context's device now reaches the peer context's memory: so must what memtool maps
// there. The peer's device is asked with that context made current for a moment.
CUresult handle_cuCtxEnablePeerAccess(const Call<fn::cuCtxEnablePeerAccess>& call, CUcontext peerContext,
                                      unsigned int Flags) noexcept {
  const CUresult result = call.real(peerContext, Flags);
  if (result == CUDA_SUCCESS) {
    CUdevice accessor = 0;
    CUdevice owner = 0;
    if (call.runtimes.device_of(nullptr, &accessor) && call.runtimes.device_of(peerContext, &owner)) {
      call.runtimes.peer_access_enabled(owner, accessor);
    }
  }
  return result;
}

namespace {

// The device whose pool `pool` is: the one whose default or current pool it is, else (a pool the
// program made and did not make current) the current context's device.
template <class F>
bool pool_device(const Call<F>& call, CUmemoryPool pool, CUdevice* out) {
  const DriverFunctions* driver = call.runtimes.driver_functions();
  int devices = 0;
  if (driver != nullptr && driver->device_count != nullptr && driver->device_count(&devices) == CUDA_SUCCESS) {
    for (CUdevice d = 0; d < devices; ++d) {
      CUmemoryPool p = nullptr;
      if ((driver->default_mem_pool != nullptr && driver->default_mem_pool(&p, d) == CUDA_SUCCESS && p == pool) ||
          (driver->current_mem_pool != nullptr && driver->current_mem_pool(&p, d) == CUDA_SUCCESS && p == pool)) {
        *out = d;
        return true;
      }
    }
  }
  return call.runtimes.device_of(nullptr, out);
}

// Devices given access to memory on `owner`: memory memtool maps there gets it too (read-write,
// whatever was granted: more than the program asked, never less; a revocation is not replayed).
template <class F>
void granted(const Call<F>& call, CUdevice owner, const CUmemAccessDesc* descs, size_t count) {
  if (descs == nullptr) return;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = descs[i];
    if (d.location.type == CU_MEM_LOCATION_TYPE_DEVICE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) {
      call.runtimes.peer_access_enabled(owner, d.location.id);
    }
  }
}

}  // namespace

// A pool's memory made reachable from other devices (PyTorch's cudaMallocAsync backend gives its
// peers access this way, never with cuCtxEnablePeerAccess): the program's cuMemAllocAsync buffers
// that memtool serves from memory it maps (swap's VMM ranges) must be reachable from them too.
CUresult handle_cuMemPoolSetAccess(const Call<fn::cuMemPoolSetAccess>& call, CUmemoryPool pool,
                                   const CUmemAccessDesc* map, size_t count) noexcept {
  const CUresult result = call.real(pool, map, count);
  CUdevice owner = 0;
  if (result == CUDA_SUCCESS && pool_device(call, pool, &owner)) {
    granted(call, owner, map, count);
    call.runtimes.pool_shared(owner);
  }
  return result;
}

// The program's own VMM range made reachable from other devices: so is what memtool maps on the
// range's device (the program means those devices to read memory there).
CUresult handle_cuMemSetAccess(const Call<fn::cuMemSetAccess>& call, CUdeviceptr ptr, size_t size,
                               const CUmemAccessDesc* desc, size_t count) noexcept {
  const CUresult result = call.real(ptr, size, desc, count);
  const DriverFunctions* driver = call.runtimes.driver_functions();
  int owner = 0;
  if (result == CUDA_SUCCESS && driver != nullptr && driver->pointer_get_attribute != nullptr &&
      driver->pointer_get_attribute(&owner, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) == CUDA_SUCCESS) {
    granted(call, owner, desc, count);
  }
  return result;
}

}  // namespace memtool::interpose
