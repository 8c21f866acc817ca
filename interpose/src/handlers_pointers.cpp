// The handlers of pointer queries and IPC export (see handlers.hpp). A buffer the engine
// sub-allocated from a pool is, to the driver, a piece of one big allocation: without these the
// program would be told the pool's range and id (and NCCL-style registration caches, which key
// on them, would confuse buffers), and an IPC handle would share the whole pool (DESIGN.md
// invariant 3). So the answers describe the program's own buffer, and exporting one is refused.
#include "memtool/interpose/handlers.hpp"

namespace memtool::interpose {
namespace {

std::uint64_t u64(CUdeviceptr p) { return static_cast<std::uint64_t>(p); }

// The attributes whose driver answer is the pool's, rewritten for the buffer.
void describe_buffer(CUpointer_attribute attribute, void* data, const engine::BufferExtent& extent) {
  if (data == nullptr) return;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = extent.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = static_cast<size_t>(extent.size); break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data) = extent.id; break;
    default: break;  // context, memory type, device, mapping, pool...: the same for the buffer
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

// The driver would export the whole pool the buffer lives in: an importer would map the pool's
// base and read another buffer's bytes. Refused with the driver's answer for memory it cannot
// export; the pool keeps that allocation out from the next iteration on, when the export works.
CUresult handle_cuIpcGetMemHandle(const Call<fn::cuIpcGetMemHandle>& call, CUipcMemHandle* pHandle,
                                  CUdeviceptr dptr) noexcept {
  if (call.runtimes.refuse_export(u64(dptr))) return CUDA_ERROR_INVALID_VALUE;
  return call.real(pHandle, dptr);
}

}  // namespace memtool::interpose
