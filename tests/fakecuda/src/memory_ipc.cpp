// Inter-process sharing in the memory manager: where an allocation's bytes live in its device's
// file (for an IPC handle or a dma-buf), mapping another process's device file into this one's
// arena, and VMM physical allocations exported and imported as file descriptors.
#include "memory.hpp"

#include "devices.hpp"
#include "shareable.hpp"
#include "stats.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace fakecuda {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void* as_pointer(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

}  // namespace

Backing Memory::arena_backing(int device) const {
  const Arena& arena = arenas_.at(static_cast<std::size_t>(device));
  return Backing{arena.fd, 0, nonce_, device};
}

CUresult Memory::export_allocation(CUdeviceptr p, PointerInfo& info, Backing& backing) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || it->second.dying || it->second.kind != MemKind::device || it->second.imported) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  info = info_of(it->first, it->second);
  const Arena& arena = arenas_[static_cast<std::size_t>(it->second.device)];
  if (arena.fd < 0) {
    return CUDA_ERROR_MAP_FAILED;  // the device's memory is private here (memory.cpp, share_arena)
  }
  backing = Backing{arena.fd, kShareHeaderBytes + (it->first - arena.base), nonce_, it->second.device};
  return CUDA_SUCCESS;
}

CUresult Memory::map_foreign(int device, int fd, std::uint64_t offset, std::size_t size, Context* ctx, MemPool* pool,
                             std::uint32_t extra_devices, CUdeviceptr& out) {
  if (device < 0 || static_cast<std::size_t>(device) >= arenas_.size() || size == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t span = round_up(size, kPageSize);
  std::lock_guard<std::mutex> lock(mutex_);
  Arena& arena = arenas_[static_cast<std::size_t>(device)];
  std::uintptr_t p = 0;
  if (!arena.space.take(span, kPageSize, p)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (mmap(as_pointer(p), span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(offset)) ==
      MAP_FAILED) {
    arena.space.give(p, span);
    return CUDA_ERROR_MAP_FAILED;
  }
  madvise(as_pointer(p), span, MADV_DONTFORK);
  Allocation a;
  a.size = size;
  a.span = span;
  a.kind = MemKind::device;
  a.async = pool != nullptr;
  a.imported = true;
  a.device = device;
  a.id = next_id_++;
  a.context = ctx;
  a.pool = pool;
  a.readable_by = extra_devices;
  a.writable_by = extra_devices;
  a.access = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  a.ipc_refs = 1;
  allocations_.emplace(p, std::move(a));
  out = p;
  return CUDA_SUCCESS;
}

bool Memory::find_opened(std::uint64_t nonce, std::uint64_t offset, std::uint64_t buffer_id, CUdeviceptr& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = opened_.find(OpenedKey{nonce, offset, buffer_id});
  if (it == opened_.end()) {
    return false;
  }
  ++allocations_.at(it->second).ipc_refs;
  out = it->second;
  return true;
}

void Memory::remember_opened(CUdeviceptr base, std::uint64_t nonce, std::uint64_t offset, std::uint64_t buffer_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  opened_[OpenedKey{nonce, offset, buffer_id}] = base;
}

CUresult Memory::close_opened(CUdeviceptr base) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end() || !it->second.imported || it->second.pool != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;  // not memory cuIpcOpenMemHandle returned
  }
  if (--it->second.ipc_refs == 0) {
    release_locked(it);
  }
  return CUDA_SUCCESS;
}

CUresult Memory::range_backing(CUdeviceptr p, std::size_t size, Backing& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || it->second.dying) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Allocation& a = it->second;
  if (a.kind == MemKind::device && !a.imported) {
    if (p + size - it->first > a.span) {
      return CUDA_ERROR_INVALID_VALUE;  // past the allocation
    }
    const Arena& arena = arenas_[static_cast<std::size_t>(a.device)];
    if (arena.fd < 0) {
      return CUDA_ERROR_NOT_SUPPORTED;  // private memory: no file to hand out
    }
    out = Backing{arena.fd, kShareHeaderBytes + (p - arena.base), nonce_, a.device};
    return CUDA_SUCCESS;
  }
  if (a.kind != MemKind::vmm) {
    return CUDA_ERROR_INVALID_VALUE;  // managed memory has no dma-buf
  }
  // Fully mapped, by mappings of one physical allocation laid out as in its file: one file range.
  const Physical& ph = physical_.at(a.handle);
  const std::uint64_t start = a.handle_offset + (p - it->first);
  std::uintptr_t at = p;
  auto m = it;
  while (at < p + size) {
    if (m == allocations_.end() || m->second.kind != MemKind::vmm || at < m->first || at - m->first >= m->second.size) {
      return CUDA_ERROR_INVALID_VALUE;  // a hole: the range must be fully mapped
    }
    if (m->second.handle != a.handle || m->second.handle_offset + (at - m->first) != start + (at - p)) {
      return CUDA_ERROR_NOT_SUPPORTED;  // several physical allocations: no single file holds the range
    }
    at = m->first + m->second.size;
    ++m;
  }
  out = Backing{ph.fd, start, 0, ph.device};
  return CUDA_SUCCESS;
}

CUresult Memory::export_physical(CUmemGenericAllocationHandle handle, int& fd_out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.user_refs == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Physical& ph = it->second;
  if ((ph.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;  // not created as exportable
  }
  const int fd = dup(ph.fd);
  if (fd < 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ph.shared = true;
  fd_out = fd;
  return CUDA_SUCCESS;
}

CUresult Memory::import_physical(int fd, CUmemGenericAllocationHandle& out) {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) < kShareHeaderBytes + kVmmGranularity) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto size = static_cast<std::size_t>(st.st_size) - kShareHeaderBytes;
  PhysicalTrailer trailer{};
  if (!read_at(fd, &trailer, sizeof trailer, size) ||
      std::memcmp(trailer.magic, kPhysicalMagic, sizeof trailer.magic) != 0 || trailer.size != size) {
    return CUDA_ERROR_INVALID_VALUE;  // not a file cuMemExportToShareableHandle made
  }
  const bool host_located = trailer.prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  if (!host_located &&
      (trailer.prop.location.id < 0 || static_cast<std::size_t>(trailer.prop.location.id) >= arenas_.size())) {
    return CUDA_ERROR_NOT_SUPPORTED;  // memory of a device this process does not have
  }
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Physical ph;
  ph.size = size;
  ph.fd = own;
  ph.prop = trailer.prop;
  ph.host_located = host_located;
  ph.device = host_located ? 0 : trailer.prop.location.id;
  ph.shared = true;
  ph.imported = true;
  out = next_handle_++;
  physical_.emplace(out, ph);
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
