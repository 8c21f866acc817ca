// Entry points: VMM allocations shared as file descriptors, and dma-buf handles of address ranges.
// A physical allocation is a memfd (memory.cpp), so its exported POSIX handle is a real file
// descriptor of those pages: another process that receives it (SCM_RIGHTS, pidfd_getfd) imports
// and maps the same memory. A dma-buf handle (cuMemGetHandleForAddressRange) is likewise a
// descriptor of the range's backing file, a new open file description whose file position is where
// the range starts in it (0 for a whole physical allocation); a range over several physical
// allocations has no single file and is CUDA_ERROR_NOT_SUPPORTED here.
#include "driver.hpp"
#include "memory.hpp"
#include "shareable.hpp"

#include <unistd.h>

#include <cstdint>

using namespace fakecuda;

namespace {

CUresult prologue() {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  return current_context(ctx);
}

// Handle types this machine can have: POSIX file descriptors. Fabric and Windows handles are
// valid types it does not support.
CUresult posix_fd_only(CUmemAllocationHandleType type) {
  switch (type) {
    case CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
      return CUDA_SUCCESS;
    case CU_MEM_HANDLE_TYPE_WIN32:
    case CU_MEM_HANDLE_TYPE_WIN32_KMT:
    case CU_MEM_HANDLE_TYPE_FABRIC:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

FAKECUDA_API CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                                   CUmemAllocationHandleType handleType, unsigned long long flags) {
  FC_TRY(prologue());
  if (shareableHandle == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(posix_fd_only(handleType));
  int fd = -1;
  FC_TRY(memory().export_physical(handle, fd));
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                     CUmemAllocationHandleType shHandleType) {
  FC_TRY(prologue());
  if (handle == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(posix_fd_only(shHandleType));
  // For POSIX file descriptors the OS handle is the descriptor itself, passed as a pointer value.
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(osHandle));
  return guarded([&] { return memory().import_physical(fd, *handle); });
}

FAKECUDA_API CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                                    CUmemRangeHandleType handleType, unsigned long long flags) {
  FC_TRY(prologue());
  if (handle == nullptr || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (flags == CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) {
    return CUDA_ERROR_NOT_SUPPORTED;  // no PCIe BAR1 on the CPU
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (flags != 0 || size == 0 || dptr % page != 0 || size % page != 0) {
    return CUDA_ERROR_INVALID_VALUE;  // "aligned to the host page size"
  }
  Backing backing;
  FC_TRY(memory().range_backing(dptr, size, backing));
  const int fd = reopen_fd(backing.fd);
  if (fd < 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (lseek(fd, static_cast<off_t>(backing.offset), SEEK_SET) < 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *static_cast<int*>(handle) = fd;
  return CUDA_SUCCESS;
}
