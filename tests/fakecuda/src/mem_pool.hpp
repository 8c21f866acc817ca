// Stream-ordered memory pools (cuMemPoolCreate, each device's default pool, imported pools): what a
// pool is, and the registry that hands out and validates their handles. A pool's memory lives in
// its device's arena (memory.hpp): freed blocks stay reserved in the pool, charged to the device,
// until a synchronisation releases what exceeds the release threshold, cuMemPoolTrimTo releases
// them, or a later allocation from the pool reuses them. The accounting fields are guarded by the
// memory manager's mutex; the attributes are atomics the API sets at any time.
#pragma once

#include "cuda_abi.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace fakecuda {

// A freed block the pool keeps: its pages stay committed (PROT_NONE while idle, so a stale access
// still faults) and charged to the device.
struct IdleBlock {
  std::uintptr_t address = 0;
  std::size_t span = 0;               // address space it covers (page multiple)
  std::size_t charged = 0;            // bytes it holds against the device's capacity
  std::uint64_t freed_on_stream = 0;  // the stream whose cuMemFreeAsync returned it
};

struct MemPool {
  int device = 0;
  bool is_default = false;
  bool imported = false;  // cuMemPoolImportFromShareableHandle: maps pointers, never allocates
  CUmemAllocationHandleType handle_types = CU_MEM_HANDLE_TYPE_NONE;
  std::size_t max_size = 0;  // 0: bounded by the device only
  std::uint64_t uid = 0;     // names the pool in exported pointers, in every process

  std::atomic<std::uint64_t> release_threshold{0};
  std::atomic<int> reuse_follow_event_dependencies{1};
  std::atomic<int> reuse_allow_opportunistic{1};
  std::atomic<int> reuse_allow_internal_dependencies{1};
  std::atomic<bool> destroyed{false};
  // Devices other than its own that may access its memory (cuMemPoolSetAccess), as bit masks.
  std::atomic<std::uint32_t> readable_by{0};
  std::atomic<std::uint32_t> writable_by{0};

  // Guarded by the memory manager's mutex.
  std::size_t used = 0;      // bytes of live allocations (their charges)
  std::size_t reserved = 0;  // used + idle
  std::size_t used_high = 0;
  std::size_t reserved_high = 0;
  std::multimap<std::size_t, IdleBlock> idle;  // by span

  // An imported pool: the exporter's device memory file and its identity.
  int import_fd = -1;
  std::uint64_t import_nonce = 0;
};

// Each device's default pool (also its current pool until cuDeviceSetMemPool).
MemPool& default_pool(int device) noexcept;
CUmemoryPool pool_handle(const MemPool& pool) noexcept;
// A live pool (created, default or imported, not destroyed); nullptr otherwise.
MemPool* find_pool(CUmemoryPool handle);
MemPool& current_pool(int device);
void set_current_pool(int device, MemPool& pool);
// Registers a new pool (created or imported); the registry owns it.
MemPool& register_pool(MemPool* pool);
// Marks a pool destroyed: its handle is refused from now on, a device whose current pool it was
// goes back to its default pool. The object stays (allocations still name it) and is never freed.
void unregister_pool(MemPool& pool);
// Every live pool of a device (for releasing at synchronisation points).
std::vector<MemPool*> pools_of_device(int device);

}  // namespace fakecuda
