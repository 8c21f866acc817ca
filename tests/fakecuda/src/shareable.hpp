// What fakecuda shares with other processes, and how: the layout of the files behind device memory
// (each device's arena file, each VMM physical allocation's file, IPC events' pages), the bodies
// of the opaque handles (CUipcMemHandle, CUipcEventHandle, CUmemPoolPtrExportData, the exported
// pool descriptor), and reaching a file another process holds open. Every file is a memfd; a
// handle names it by (pid, fd number) and a random nonce the file's header repeats, so an importer
// opens /proc/<pid>/fd/<fd> and checks it got the file the exporter meant.
#pragma once

#include "cuda_abi.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace fakecuda {

constexpr std::size_t kShareHeaderBytes = 4096;  // an arena file's header; a physical file's trailer

// Header of a device's arena file; device memory starts kShareHeaderBytes into the file.
struct ArenaHeader {
  char magic[8];
  std::uint64_t nonce;
  std::int32_t device;
  std::int32_t pid;
};

// Trailer of a VMM physical allocation's file, after its `size` bytes of memory.
struct PhysicalTrailer {
  char magic[8];
  std::uint64_t size;
  std::uint64_t nonce;
  CUmemAllocationProp prop;
};

// CUipcMemHandle: an allocation of a device's arena file.
struct IpcMemBody {
  char magic[4];
  std::int32_t pid;
  std::int32_t fd;
  std::int32_t device;
  std::uint64_t nonce;
  std::uint64_t offset;  // file offset of the allocation in the arena file
  std::uint64_t size;
  std::uint64_t buffer_id;
};
static_assert(sizeof(IpcMemBody) <= sizeof(CUipcMemHandle));

// CUipcEventHandle: an event's shared page.
struct IpcEventBody {
  char magic[4];
  std::int32_t pid;
  std::int32_t fd;
  std::int32_t reserved;
  std::uint64_t nonce;
};
static_assert(sizeof(IpcEventBody) <= sizeof(CUipcEventHandle));

// The file cuMemPoolExportToShareableHandle hands out: names the pool and its device's arena file.
struct PoolDescriptor {
  char magic[8];
  std::uint64_t pool_uid;
  std::uint64_t arena_nonce;
  std::int32_t device;
  std::int32_t pid;
  std::int32_t arena_fd;
  std::int32_t handle_types;
};

// CUmemPoolPtrExportData: one allocation of an exported pool.
struct PoolPointerBody {
  char magic[4];
  std::int32_t device;
  std::uint64_t pool_uid;
  std::uint64_t arena_nonce;
  std::uint64_t offset;
  std::uint64_t size;
  std::uint64_t buffer_id;
};
static_assert(sizeof(PoolPointerBody) <= sizeof(CUmemPoolPtrExportData));

inline constexpr char kArenaMagic[8] = {'f', 'c', 'a', 'r', 'e', 'n', 'a', '1'};
inline constexpr char kPhysicalMagic[8] = {'f', 'c', 'v', 'm', 'm', 'p', 'h', '1'};
inline constexpr char kPoolMagic[8] = {'f', 'c', 'm', 'p', 'o', 'o', 'l', '1'};
inline constexpr char kIpcMemMagic[4] = {'f', 'c', 'i', 'm'};
inline constexpr char kIpcEventMagic[4] = {'f', 'c', 'i', 'e'};
inline constexpr char kPoolPointerMagic[4] = {'f', 'c', 'p', 'p'};

// A random 64-bit value, never 0.
std::uint64_t random_nonce();

// A new descriptor for file descriptor `fd` of process `pid` (which must still be alive), or -1:
// /proc/<pid>/fd/<fd> first (a same-user process may read another's fd links), pidfd_getfd where
// that is refused.
int open_foreign_fd(pid_t pid, int fd);

// Whether the process may have a file of `bytes` (RLIMIT_FSIZE): growing one past the limit would
// raise SIGXFSZ, which ends a program that does not expect it.
bool file_size_allowed(std::uint64_t bytes);

// A new open file description of one of our own fds (its own file position), or -1.
int reopen_fd(int fd);

// Whole-buffer pread/pwrite; false on a short transfer or an error.
bool read_at(int fd, void* data, std::size_t bytes, std::uint64_t offset);
bool write_at(int fd, const void* data, std::size_t bytes, std::uint64_t offset);

}  // namespace fakecuda
