// Entry points: CUDA IPC memory and event handles, across processes. A memory handle names a whole
// cuMemAlloc allocation (the driver exports the allocation an interior pointer falls in, not the
// sub-range, which is what makes exporting a pooled buffer dangerous for memtool) by where it lies
// in its device's shared arena file; another process maps those same pages into its own address
// space, so both see every byte the other writes. The exporting process may not open its own
// handle (the driver answers CUDA_ERROR_INVALID_CONTEXT, "invalid device context").
#include "cuda_abi_devices.hpp"
#include "devices.hpp"
#include "driver.hpp"
#include "ipc_event.hpp"
#include "memory.hpp"
#include "shareable.hpp"
#include "streams.hpp"

#include <unistd.h>

#include <cstring>

using namespace fakecuda;

namespace {

template <class Body, class Handle>
bool decode(const Handle& handle, const char (&magic)[4], Body& body) {
  static_assert(sizeof(Body) <= sizeof(handle.reserved));
  std::memcpy(&body, handle.reserved, sizeof body);
  return std::memcmp(body.magic, magic, sizeof magic) == 0;
}

template <class Body, class Handle>
void encode(const Body& body, Handle& handle) {
  std::memset(handle.reserved, 0, sizeof handle.reserved);
  std::memcpy(handle.reserved, &body, sizeof body);
}

CUresult open_mem_handle(CUdeviceptr* pdptr, const CUipcMemHandle& handle, unsigned flags) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (pdptr == nullptr || (flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  IpcMemBody body{};
  if (!decode(handle, kIpcMemMagic, body)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (body.pid == static_cast<std::int32_t>(getpid()) && body.nonce == memory().nonce()) {
    return CUDA_ERROR_INVALID_CONTEXT;  // the exporting process itself
  }
  if (check_device(body.device) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_HANDLE;  // memory of a device this process does not have
  }
  // Opened before here: one more reference to the same mapping.
  if (memory().find_opened(body.nonce, body.offset, body.buffer_id, *pdptr)) {
    return CUDA_SUCCESS;
  }
  const int fd = open_foreign_fd(body.pid, body.fd);
  ArenaHeader header{};
  if (fd < 0 || !read_at(fd, &header, sizeof header, 0) ||
      std::memcmp(header.magic, kArenaMagic, sizeof header.magic) != 0 || header.nonce != body.nonce) {
    if (fd >= 0) {
      close(fd);
    }
    return CUDA_ERROR_INVALID_HANDLE;  // the exporting process is gone
  }
  // The memory is the handle's device's; a context of another device opening it gets access to it
  // as with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.
  const CUresult r = guarded([&] {
    return memory().map_foreign(body.device, fd, body.offset, body.size, ctx, nullptr, device_bit(ctx->device), *pdptr);
  });
  close(fd);  // the mapping keeps the file
  if (r == CUDA_SUCCESS) {
    memory().remember_opened(*pdptr, body.nonce, body.offset, body.buffer_id);
  }
  return r;
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
  Backing backing;
  // Only cuMemAlloc memory is exportable this way: managed, VMM (exported through
  // cuMemExportToShareableHandle instead), host, imported and stream-ordered pool memory
  // (cuMemPoolExportPointer) are not.
  FC_TRY(memory().export_allocation(dptr, info, backing));
  if (info.async) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  IpcMemBody body{};
  std::memcpy(body.magic, kIpcMemMagic, sizeof body.magic);
  body.pid = static_cast<std::int32_t>(getpid());
  body.fd = backing.fd;
  body.device = backing.device;
  body.nonce = backing.nonce;
  body.offset = backing.offset;
  body.size = info.size;
  body.buffer_id = info.buffer_id;
  encode(body, *pHandle);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return open_mem_handle(pdptr, handle, Flags);
}

FAKECUDA_API CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return open_mem_handle(pdptr, handle, Flags);
}

FAKECUDA_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  // Work already issued on it may still run: the mapping goes once the device got past it.
  synchronize_device();
  return guarded([&] { return memory().close_opened(dptr); });
}

// ---- events ---------------------------------------------------------------------------------

FAKECUDA_API CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  FC_TRY(check_init());
  if (pHandle == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Event> e;
    FC_TRY(find_event(event, e));
    constexpr unsigned kNeeded = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    if ((e->flags & kNeeded) != kNeeded) {
      return CUDA_ERROR_INVALID_VALUE;  // "Event allocated with CU_EVENT_INTERPROCESS and DISABLE_TIMING"
    }
    std::shared_ptr<IpcEventPage> page;
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      if (!e->ipc) {
        e->ipc = IpcEventPage::create();
      }
      page = e->ipc;
    }
    if (!page || page->fd() < 0) {
      return page ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;  // an imported event is not re-exported
    }
    IpcEventBody body{};
    std::memcpy(body.magic, kIpcEventMagic, sizeof body.magic);
    body.pid = static_cast<std::int32_t>(getpid());
    body.fd = page->fd();
    body.nonce = page->nonce();
    encode(body, *pHandle);
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (phEvent == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  IpcEventBody body{};
  if (!decode(handle, kIpcEventMagic, body)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return guarded([&] {
    std::shared_ptr<IpcEventPage> page = IpcEventPage::open(body.pid, body.fd, body.nonce);
    if (!page) {
      return CUDA_ERROR_INVALID_HANDLE;  // the exporting process or its event is gone
    }
    // Behaves like a local event created with CU_EVENT_DISABLE_TIMING.
    CUevent created = nullptr;
    FC_TRY(create_event(*ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, created));
    std::shared_ptr<Event> e;
    FC_TRY(find_event(created, e));
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      e->ipc = std::move(page);
    }
    *phEvent = created;
    return CUDA_SUCCESS;
  });
}
