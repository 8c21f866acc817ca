// Entry points: CUDA IPC memory handles. A handle names a whole device allocation (the driver
// exports the allocation an interior pointer falls in, not the sub-range), which is what makes
// exporting a pooled buffer dangerous for memtool; tests use these to see what a handle denotes.
// fakecuda is one process, so opening a handle here (which the driver refuses in the exporting
// process) returns the allocation's base address: the bytes the importer would see.
#include "driver.hpp"
#include "memory.hpp"

#include <cstring>

using namespace fakecuda;

namespace {

constexpr char kMagic[8] = {'f', 'c', '-', 'i', 'p', 'c', '1', '\0'};

struct HandleBody {
  char magic[8];
  CUdeviceptr base;
  std::uint64_t size;
  std::uint64_t buffer_id;
};
static_assert(sizeof(HandleBody) <= sizeof(CUipcMemHandle));

bool decode(const CUipcMemHandle& handle, HandleBody& body) {
  std::memcpy(&body, handle.reserved, sizeof body);
  return std::memcmp(body.magic, kMagic, sizeof kMagic) == 0;
}

}  // namespace

FAKECUDA_API CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (pHandle == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PointerInfo info;
  // Only cuMemAlloc memory is exportable this way: managed, VMM (exported through
  // cuMemExportToShareableHandle instead), host and stream-ordered pool memory are not.
  if (!memory().lookup(dptr, info) || info.kind != MemKind::device || info.async) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  HandleBody body{};
  std::memcpy(body.magic, kMagic, sizeof kMagic);
  body.base = info.base;
  body.size = info.size;
  body.buffer_id = info.buffer_id;
  std::memset(pHandle->reserved, 0, sizeof pHandle->reserved);
  std::memcpy(pHandle->reserved, &body, sizeof body);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int /*Flags*/) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (pdptr == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  HandleBody body{};
  PointerInfo info;
  if (!decode(handle, body) || !memory().lookup(body.base, info) || info.base != body.base ||
      info.buffer_id != body.buffer_id) {
    return CUDA_ERROR_INVALID_HANDLE;  // not a handle, or its allocation is gone
  }
  *pdptr = body.base;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  FC_TRY(check_init());
  PointerInfo info;
  return memory().lookup(dptr, info) && info.base == dptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
