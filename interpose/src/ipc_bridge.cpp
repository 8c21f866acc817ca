// IpcBridge: memtool's own IPC handles for the buffers it serves (see ipc_bridge.hpp).
#include "memtool/interpose/ipc_bridge.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "memtool/interpose/log.hpp"

namespace memtool::interpose {
namespace {

// What a memtool handle holds, in the first bytes of the 64 the driver's handle has.
constexpr char kMagic[16] = {'m', 'e', 'm', 't', 'o', 'o', 'l', '-', 'i', 'p', 'c', '-', 'v', '1', 0, 0};
enum class WireKind : std::uint32_t { piece = 1, mapping = 2 };
struct Wire {
  char magic[16];
  WireKind kind;
  std::int32_t pid;
  std::uint64_t a;  // piece: the registry file's serial; mapping: the exporter's descriptor
  std::uint64_t b;  // piece: the buffer's offset in the allocation; mapping: the mapped bytes
};
static_assert(sizeof(Wire) <= sizeof(CUipcMemHandle::reserved));

// Fills the program's handle with a memtool handle of `kind` from this process (zeros after it).
void write_handle(CUipcMemHandle* handle, WireKind kind, std::uint64_t a, std::uint64_t b) {
  Wire wire{};
  std::memcpy(wire.magic, kMagic, sizeof kMagic);
  wire.kind = kind;
  wire.pid = static_cast<std::int32_t>(getpid());
  wire.a = a;
  wire.b = b;
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &wire, sizeof wire);
}

std::string registry_path(int pid, std::uint64_t serial) {
  return std::string(IpcBridge::kRegistryDir) + "/memtool-ipc." + std::to_string(pid) + "." + std::to_string(serial);
}

// A copy of descriptor `fd` of process `pid` (it keeps it open while the buffer lives).
int foreign_fd(int pid, int fd) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    const int out = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    ::close(pidfd);
    if (out >= 0) return out;
  }
#endif
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  return ::open(path, O_RDWR | O_CLOEXEC);
}

bool write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

IpcBridge::IpcBridge(const DriverFunctions& functions) : f_(functions) {}

IpcBridge::~IpcBridge() { remove_files(); }

CUresult IpcBridge::export_handle(CUipcMemHandle* handle, CUdeviceptr ptr, engine::ExportPin pin) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (f_.ipc_get_mem_handle == nullptr || f_.mem_get_address_range == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (pin == engine::ExportPin::mapped) return export_mapping(handle, ptr);
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult range = f_.mem_get_address_range(&base, &size, ptr);
  if (range != CUDA_SUCCESS) return range;
  if (base == ptr) return f_.ipc_get_mem_handle(handle, ptr);  // starts its allocation: the driver's handle reaches it
  return export_piece(handle, ptr, base);
}

CUresult IpcBridge::export_piece(CUipcMemHandle* handle, CUdeviceptr ptr, CUdeviceptr base) {
  std::lock_guard lock(mutex_);
  Exported& e = exported_[ptr];
  if (e.serial == 0) {
    CUipcMemHandle driver{};
    const CUresult result = f_.ipc_get_mem_handle(&driver, base);
    if (result != CUDA_SUCCESS) {
      exported_.erase(ptr);
      return result;
    }
    const std::uint64_t serial = next_serial_++;
    const std::string path = registry_path(static_cast<int>(getpid()), serial);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const bool written = fd >= 0 && write_all(fd, &driver, sizeof driver);
    if (fd >= 0) ::close(fd);
    if (!written) {
      if (fd >= 0) ::unlink(path.c_str());
      exported_.erase(ptr);
      MEMTOOL_LOG_ONCE(LogLevel::warn, "memtool: cannot write {} ({}): an export of a pooled buffer fails", path,
                       std::strerror(errno));
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e.serial = serial;
    exported_count_.store(exported_.size(), std::memory_order_relaxed);
  }
  write_handle(handle, WireKind::piece, e.serial, ptr - base);
  return CUDA_SUCCESS;
}

CUresult IpcBridge::export_mapping(CUipcMemHandle* handle, CUdeviceptr ptr) {
  if (f_.mem_retain_allocation_handle == nullptr || f_.mem_export_to_shareable == nullptr ||
      f_.mem_release == nullptr) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUdeviceptr base = 0;
  size_t bytes = 0;
  CUresult result = f_.mem_get_address_range(&base, &bytes, ptr);
  if (result != CUDA_SUCCESS) return result;
  if (base != ptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mutex_);
  Exported& e = exported_[ptr];
  if (e.fd < 0) {
    CUmemGenericAllocationHandle physical = 0;
    result = f_.mem_retain_allocation_handle(&physical, reinterpret_cast<void*>(ptr));
    int fd = -1;
    if (result == CUDA_SUCCESS) {
      result = f_.mem_export_to_shareable(&fd, physical, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      (void)f_.mem_release(physical);  // the retain's reference; the mapping keeps its own
    }
    if (result != CUDA_SUCCESS) {
      exported_.erase(ptr);
      return result;
    }
    e.fd = fd;
    exported_count_.store(exported_.size(), std::memory_order_relaxed);
  }
  write_handle(handle, WireKind::mapping, static_cast<std::uint64_t>(e.fd), bytes);
  return CUDA_SUCCESS;
}

std::optional<CUresult> IpcBridge::open(CUdeviceptr* out, const CUipcMemHandle& handle, unsigned int flags) {
  Wire wire{};
  std::memcpy(&wire, handle.reserved, sizeof wire);
  if (std::memcmp(wire.magic, kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The driver's answer to a process opening its own export.
  if (wire.pid == static_cast<std::int32_t>(getpid())) return CUDA_ERROR_INVALID_CONTEXT;
  switch (wire.kind) {
    case WireKind::piece:
      return open_piece(out, wire.pid, wire.a, wire.b, flags);
    case WireKind::mapping:
      return open_mapping(out, wire.pid, static_cast<int>(wire.a), wire.b);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult IpcBridge::open_piece(CUdeviceptr* out, int pid, std::uint64_t serial, std::uint64_t offset,
                               unsigned int flags) {
  if (f_.ipc_open_mem_handle == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUipcMemHandle driver{};
  const int fd = ::open(registry_path(pid, serial).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;  // the exporter freed the buffer, or ended
  const bool read_whole = ::read(fd, &driver, sizeof driver) == static_cast<ssize_t>(sizeof driver);
  ::close(fd);
  if (!read_whole) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr base = 0;
  const CUresult result = f_.ipc_open_mem_handle(&base, driver, flags);
  if (result != CUDA_SUCCESS) return result;
  std::lock_guard lock(mutex_);
  Imported& i = imported_[base + offset];
  i.driver_base = base;
  ++i.count;
  *out = base + offset;
  return CUDA_SUCCESS;
}

CUresult IpcBridge::open_mapping(CUdeviceptr* out, int pid, int fd, std::uint64_t bytes) {
  if (f_.mem_import_from_shareable == nullptr || f_.address_reserve == nullptr || f_.mem_map == nullptr ||
      f_.mem_set_access == nullptr || f_.ctx_get_device == nullptr) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 32) | static_cast<std::uint32_t>(fd);
  std::lock_guard lock(mutex_);
  for (auto& [ptr, i] : imported_) {
    if (i.key == key && i.mapped_bytes != 0) {  // opened again: the same pointer, as the driver does
      ++i.count;
      *out = ptr;
      return CUDA_SUCCESS;
    }
  }
  const int local = foreign_fd(pid, fd);
  if (local < 0) return CUDA_ERROR_INVALID_VALUE;
  CUmemGenericAllocationHandle physical = 0;
  CUresult result = f_.mem_import_from_shareable(&physical, reinterpret_cast<void*>(static_cast<std::intptr_t>(local)),
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ::close(local);
  if (result != CUDA_SUCCESS) return result;
  CUdeviceptr va = 0;
  result = f_.address_reserve(&va, bytes, 0, 0, 0);
  if (result == CUDA_SUCCESS) {
    result = f_.mem_map(va, bytes, 0, physical, 0);
    if (result == CUDA_SUCCESS) {
      CUdevice device = 0;
      result = f_.ctx_get_device(&device);
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = device;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if (result == CUDA_SUCCESS) result = f_.mem_set_access(va, bytes, &access, 1);
      if (result != CUDA_SUCCESS) (void)f_.mem_unmap(va, bytes);
    }
    if (result != CUDA_SUCCESS) (void)f_.address_free(va, bytes);
  }
  (void)f_.mem_release(physical);  // the mapping holds the memory from now on
  if (result != CUDA_SUCCESS) return result;
  imported_[va] = Imported{0, bytes, key, 1};
  *out = va;
  return CUDA_SUCCESS;
}

std::optional<CUresult> IpcBridge::close(CUdeviceptr ptr) {
  std::lock_guard lock(mutex_);
  const auto it = imported_.find(ptr);
  if (it == imported_.end()) return std::nullopt;
  Imported& i = it->second;
  CUresult result = CUDA_SUCCESS;
  if (i.mapped_bytes == 0) {
    result = f_.ipc_close_mem_handle != nullptr ? f_.ipc_close_mem_handle(i.driver_base) : CUDA_ERROR_NOT_SUPPORTED;
    if (--i.count == 0) imported_.erase(it);
    return result;
  }
  if (--i.count == 0) {
    result = f_.mem_unmap(ptr, i.mapped_bytes);
    if (result == CUDA_SUCCESS) result = f_.address_free(ptr, i.mapped_bytes);
    imported_.erase(it);
  }
  return result;
}

void IpcBridge::buffer_freed(CUdeviceptr ptr) {
  if (exported_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mutex_);
  const auto it = exported_.find(ptr);
  if (it == exported_.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  if (it->second.serial != 0) ::unlink(registry_path(static_cast<int>(getpid()), it->second.serial).c_str());
  exported_.erase(it);
  exported_count_.store(exported_.size(), std::memory_order_relaxed);
}

void IpcBridge::remove_files() {
  std::lock_guard lock(mutex_);
  for (const auto& [ptr, e] : exported_) {
    if (e.serial != 0) ::unlink(registry_path(static_cast<int>(getpid()), e.serial).c_str());
  }
}

}  // namespace memtool::interpose
