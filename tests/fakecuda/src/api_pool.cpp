// Entry points: stream-ordered memory pools. Each device's default and current pool, pools the
// program creates (location, handle types, maxSize), their attributes, trimming, access from other
// devices, and exporting a pool and its pointers to another process. The allocations themselves
// (cuMemAllocAsync, cuMemAllocFromPoolAsync) are in api_memory.cpp; the pool mechanics in
// memory_pool.cpp.
#include "devices.hpp"
#include "driver.hpp"
#include "mem_pool.hpp"
#include "memory.hpp"
#include "shareable.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>

using namespace fakecuda;

namespace {

// Handle types a pool may be created with: file descriptors are real here; fabric and Windows
// handles have nothing to stand on.
CUresult check_handle_types(unsigned types) {
  constexpr unsigned known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
                             CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
  if ((types & ~known) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return (types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != 0 ? CUDA_ERROR_NOT_SUPPORTED
                                                                                         : CUDA_SUCCESS;
}

CUresult check_props(const CUmemPoolProps* props) {
  if (props == nullptr || props->win32SecurityAttributes != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const unsigned char b : props->reserved) {
    if (b != 0) {
      return CUDA_ERROR_INVALID_VALUE;  // "reserved for future use, must be 0"
    }
  }
  if (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      FC_TRY(check_device(props->location.id));
      break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return CUDA_ERROR_NOT_SUPPORTED;  // host pools: not emulated
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return check_handle_types(props->handleTypes);
}

// A pool handle the program may use: live, and for allocation or current-pool use, not imported.
CUresult live_pool(CUmemoryPool handle, MemPool*& out) {
  out = handle == nullptr ? nullptr : find_pool(handle);
  return out == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult check_device_location(const CUmemLocation* location) {
  if (location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return check_device(location->id);
}

// CUDA 13's location-and-type forms: device pinned memory is what fakecuda has pools of.
CUresult device_pinned(const CUmemLocation* location, CUmemAllocationType type) {
  if (location == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (type == CU_MEM_ALLOCATION_TYPE_MANAGED ||
      (location->type != CU_MEM_LOCATION_TYPE_DEVICE &&
       (location->type == CU_MEM_LOCATION_TYPE_HOST || location->type == CU_MEM_LOCATION_TYPE_HOST_NUMA))) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return check_device_location(location);
}

}  // namespace

// ---- default and current pools ---------------------------------------------------------

FAKECUDA_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  FC_TRY(check_init());
  FC_TRY(check_device(dev));
  if (pool_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pool_out = pool_handle(default_pool(dev));
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  FC_TRY(check_init());
  FC_TRY(check_device(dev));
  if (pool == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pool = pool_handle(current_pool(dev));
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  FC_TRY(check_init());
  FC_TRY(check_device(dev));
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (p->device != dev || p->imported) {
    return CUDA_ERROR_INVALID_VALUE;  // "must be local to the specified device"; imported pools never allocate
  }
  set_current_pool(dev, *p);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                             CUmemAllocationType type) {
  FC_TRY(check_init());
  FC_TRY(device_pinned(location, type));
  return cuDeviceGetDefaultMemPool(pool_out, location->id);
}

FAKECUDA_API CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  FC_TRY(check_init());
  FC_TRY(device_pinned(location, type));
  return cuDeviceGetMemPool(pool, location->id);
}

FAKECUDA_API CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  FC_TRY(check_init());
  FC_TRY(device_pinned(location, type));
  return cuDeviceSetMemPool(location->id, pool);
}

// ---- created pools ----------------------------------------------------------------------

FAKECUDA_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  FC_TRY(check_init());
  if (pool == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_props(poolProps));
  return guarded([&] {
    auto created = std::make_unique<MemPool>();
    created->device = poolProps->location.id;
    created->handle_types = poolProps->handleTypes;
    created->max_size = poolProps->maxSize;
    *pool = pool_handle(register_pool(created.release()));
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (p->is_default) {
    return CUDA_ERROR_INVALID_VALUE;  // "A device's default memory pool cannot be destroyed"
  }
  // Returns at once; what it holds unused goes now, outstanding allocations go when freed.
  unregister_pool(*p);
  memory().trim_pool(*p, 0);
  if (p->import_fd >= 0) {
    close(p->import_fd);
    p->import_fd = -1;
  }
  return CUDA_SUCCESS;
}

// ---- attributes, trimming, access -----------------------------------------------------------

FAKECUDA_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = *static_cast<cuuint64_t*>(value);
      break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      p->reuse_follow_event_dependencies = *static_cast<int*>(value) != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      p->reuse_allow_opportunistic = *static_cast<int*>(value) != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse_allow_internal_dependencies = *static_cast<int*>(value) != 0 ? 1 : 0;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<cuuint64_t*>(value) != 0) {
        return CUDA_ERROR_INVALID_VALUE;  // "It is illegal to set this attribute to a non-zero value"
      }
      memory().reset_pool_high(*p, attr);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // the current figures are read-only
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = p->release_threshold.load();
      break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *static_cast<int*>(value) = p->reuse_follow_event_dependencies.load();
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *static_cast<int*>(value) = p->reuse_allow_opportunistic.load();
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = p->reuse_allow_internal_dependencies.load();
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = memory().pool_figure(*p, attr);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  memory().trim_pool(*p, minBytesToKeep);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (map == nullptr || count == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < count; ++i) {
    FC_TRY(check_device_location(&map[i].location));
    const CUmemAccess_flags flags = map[i].flags;
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (map[i].location.id == p->device && !p->imported && flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;  // the pool's own device keeps its access
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const std::uint32_t bit = device_bit(map[i].location.id);
    const CUmemAccess_flags flags = map[i].flags;
    if ((flags & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0) {
      p->readable_by.fetch_or(bit);
    } else {
      p->readable_by.fetch_and(~bit);
    }
    if (flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      p->writable_by.fetch_or(bit);
    } else {
      p->writable_by.fetch_and(~bit);
    }
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(memPool, p));
  if (flags == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_device_location(location));
  const std::uint32_t bit = device_bit(location->id);
  if ((location->id == p->device && !p->imported) || (p->writable_by.load() & bit) != 0) {
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  } else {
    *flags = (p->readable_by.load() & bit) != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  }
  return CUDA_SUCCESS;
}

// ---- sharing a pool with another process ------------------------------------------------------

// The exported handle is a small file of our own describing the pool and naming its device's
// arena file; the importer maps each exported pointer's range of that arena file.
FAKECUDA_API CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                       CUmemAllocationHandleType handleType, unsigned long long flags) {
  FC_TRY(check_init());
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (handle_out == nullptr || flags != 0 || p->imported) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    return check_handle_types(handleType) == CUDA_ERROR_NOT_SUPPORTED ? CUDA_ERROR_NOT_SUPPORTED
                                                                      : CUDA_ERROR_INVALID_VALUE;
  }
  if ((p->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;  // not created IPC-capable
  }
  const Backing arena = memory().arena_backing(p->device);
  if (arena.fd < 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;  // the device's memory could not be put in a shared file
  }
  PoolDescriptor d{};
  std::memcpy(d.magic, kPoolMagic, sizeof d.magic);
  d.pool_uid = p->uid;
  d.arena_nonce = arena.nonce;
  d.device = p->device;
  d.pid = static_cast<std::int32_t>(getpid());
  d.arena_fd = arena.fd;
  d.handle_types = static_cast<std::int32_t>(p->handle_types);
  const int fd = memfd_create("fakecuda-pool", 0);  // no CLOEXEC: a handle for other processes
  if (fd < 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!write_at(fd, &d, sizeof d, 0)) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *static_cast<int*>(handle_out) = fd;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                         CUmemAllocationHandleType handleType,
                                                         unsigned long long flags) {
  FC_TRY(check_init());
  if (pool_out == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    return check_handle_types(handleType) == CUDA_ERROR_NOT_SUPPORTED ? CUDA_ERROR_NOT_SUPPORTED
                                                                      : CUDA_ERROR_INVALID_VALUE;
  }
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(handle));
  PoolDescriptor d{};
  if (fd < 0 || !read_at(fd, &d, sizeof d, 0) || std::memcmp(d.magic, kPoolMagic, sizeof d.magic) != 0) {
    return CUDA_ERROR_INVALID_VALUE;  // not a file cuMemPoolExportToShareableHandle made
  }
  if (check_device(d.device) != CUDA_SUCCESS) {
    return CUDA_ERROR_NOT_SUPPORTED;  // a device this process does not have
  }
  const int arena_fd = open_foreign_fd(d.pid, d.arena_fd);
  ArenaHeader header{};
  if (arena_fd < 0 || !read_at(arena_fd, &header, sizeof header, 0) ||
      std::memcmp(header.magic, kArenaMagic, sizeof header.magic) != 0 || header.nonce != d.arena_nonce) {
    if (arena_fd >= 0) {
      close(arena_fd);
    }
    return CUDA_ERROR_INVALID_VALUE;  // its exporter is gone
  }
  return guarded([&] {
    auto imported = std::make_unique<MemPool>();
    imported->device = d.device;
    imported->imported = true;
    imported->uid = d.pool_uid;
    imported->handle_types = static_cast<CUmemAllocationHandleType>(d.handle_types);
    imported->import_fd = arena_fd;
    imported->import_nonce = d.arena_nonce;
    *pool_out = pool_handle(register_pool(imported.release()));
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
  FC_TRY(check_init());
  if (shareData_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PointerInfo info;
  Backing backing;
  FC_TRY(memory().export_allocation(ptr, info, backing));
  if (info.pool == nullptr || info.base != ptr || info.pool->imported ||
      (info.pool->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;  // the start of an allocation from an IPC-capable pool
  }
  PoolPointerBody body{};
  std::memcpy(body.magic, kPoolPointerMagic, sizeof body.magic);
  body.device = backing.device;
  body.pool_uid = info.pool->uid;
  body.arena_nonce = backing.nonce;
  body.offset = backing.offset;
  body.size = info.size;
  body.buffer_id = info.buffer_id;
  std::memset(shareData_out->reserved, 0, sizeof shareData_out->reserved);
  std::memcpy(shareData_out->reserved, &body, sizeof body);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                             CUmemPoolPtrExportData* shareData) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  MemPool* p = nullptr;
  FC_TRY(live_pool(pool, p));
  if (ptr_out == nullptr || shareData == nullptr || !p->imported) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PoolPointerBody body{};
  std::memcpy(&body, shareData->reserved, sizeof body);
  if (std::memcmp(body.magic, kPoolPointerMagic, sizeof body.magic) != 0 || body.pool_uid != p->uid ||
      body.arena_nonce != p->import_nonce) {
    return CUDA_ERROR_INVALID_VALUE;  // not a pointer of this pool
  }
  return guarded([&] {
    return memory().map_foreign(p->device, p->import_fd, body.offset, body.size, ctx, p, device_bit(ctx->device),
                                *ptr_out);
  });
}

bool fakecuda::is_default_pool(CUmemoryPool pool) noexcept {
  for (int d = 0; d < device_count(); ++d) {
    if (pool == pool_handle(default_pool(d))) {
      return true;
    }
  }
  return false;
}
