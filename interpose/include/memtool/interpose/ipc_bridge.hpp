// Exporting buffers memtool serves, and opening what such an export names (DESIGN.md §9,
// "exported and registered memory"). A buffer memtool serves is either a piece of a larger
// cuMemAlloc allocation (a planned pool's arena, a cached segment) or, swapped explicitly, a VMM
// mapping of one physical allocation: cuIpcGetMemHandle of the first would name the whole
// allocation (an importer would map its base, not the buffer), of the second it fails. So the
// handle the program gets is memtool's own (it says so in its first bytes), and the memtool in
// the importing process opens it:
//  - a piece: the driver's handle of the enclosing allocation is left in a small file (named by
//    the exporter's pid and a serial, in kRegistryDir) and the handle carries the buffer's offset;
//    the importer opens the driver's handle and returns its base plus the offset, and
//    cuIpcCloseMemHandle of that pointer closes the driver's mapping;
//  - a mapping: the physical allocation is exported as a POSIX file descriptor, the handle
//    carries the exporter's pid and that descriptor; the importer takes a copy of it
//    (pidfd_getfd, or /proc/PID/fd), imports it, maps it at a range of its own with read-write
//    access for its device, and unmaps it at cuIpcCloseMemHandle.
// A buffer that is a whole allocation of its own is exported by the driver as it is. The
// exporter keeps a descriptor or a file only while the program holds the buffer (forgotten at
// its free, as the driver's handle is then invalid too) and removes its files at exit.
// A process without memtool cannot open memtool's handles: the driver refuses them
// (CUDA_ERROR_INVALID_VALUE), never maps other bytes; every rank of a job runs under memtool.
//
// Thread-safe: one mutex around the tables; the driver calls are the real ones.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "memtool/engine/resource.hpp"
#include "memtool/interpose/driver_device.hpp"

namespace memtool::interpose {

class IpcBridge {
 public:
  explicit IpcBridge(const DriverFunctions& functions);
  IpcBridge(const IpcBridge&) = delete;
  IpcBridge& operator=(const IpcBridge&) = delete;
  ~IpcBridge();

  // cuIpcGetMemHandle of `ptr`, pinned by its resource as `pin` says.
  CUresult export_handle(CUipcMemHandle* handle, CUdeviceptr ptr, engine::ExportPin pin);
  // cuIpcOpenMemHandle: nullopt when `handle` is not memtool's (the driver opens it).
  std::optional<CUresult> open(CUdeviceptr* out, const CUipcMemHandle& handle, unsigned int flags);
  // cuIpcCloseMemHandle: nullopt when `ptr` was not opened by open() (the driver closes it).
  std::optional<CUresult> close(CUdeviceptr ptr);
  // The program frees `ptr`: its exports end (one relaxed load when there are none).
  void buffer_freed(CUdeviceptr ptr);
  // Remove this process's registry files (at exit).
  void remove_files();

  // Where the pieces' files live.
  static constexpr const char* kRegistryDir = "/dev/shm";

 private:
  struct Exported {
    int fd = -1;               // a mapping's exported descriptor
    std::uint64_t serial = 0;  // a piece's registry file
  };
  struct Imported {
    CUdeviceptr driver_base = 0;     // a piece: what the driver's open returned
    std::uint64_t mapped_bytes = 0;  // a mapping: the range reserved for it
    std::uint64_t key = 0;           // a mapping: (pid, fd) of its export
    unsigned count = 0;
  };
  CUresult export_piece(CUipcMemHandle* handle, CUdeviceptr ptr, CUdeviceptr base);
  CUresult export_mapping(CUipcMemHandle* handle, CUdeviceptr ptr);
  CUresult open_piece(CUdeviceptr* out, int pid, std::uint64_t serial, std::uint64_t offset, unsigned int flags);
  CUresult open_mapping(CUdeviceptr* out, int pid, int fd, std::uint64_t bytes);

  DriverFunctions f_;
  std::mutex mutex_;
  std::map<CUdeviceptr, Exported> exported_;  // by the buffer's address
  std::map<CUdeviceptr, Imported> imported_;  // by the pointer open() returned
  std::atomic<std::size_t> exported_count_{0};
  std::uint64_t next_serial_ = 1;
};

}  // namespace memtool::interpose
