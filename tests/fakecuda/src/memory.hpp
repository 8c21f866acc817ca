// The emulated device memory: one arena per device (its own address range, carved into device and
// managed allocations, backed by a shared memory file so that another process can map the same
// pages: IPC handles), a capacity per device that makes out-of-memory real, an address range for
// VMM reservations, pinned host ranges, managed residency, physical handles and mappings, and the
// stream-ordered pools' blocks. Everything here is guarded by one mutex; the API layer validates
// arguments against it and the stream workers re-validate at execution.
#pragma once

#include "cuda_abi.hpp"

#include "mem_pool.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fakecuda {

struct Context;
struct MemPool;

constexpr std::size_t kAllocationGranule = 512;  // what cuMemAlloc charges and pitches to
constexpr std::size_t kPageSize = 4096;          // placement and commit granularity
constexpr std::size_t kVmmGranularity = std::size_t{2} << 20;
constexpr std::size_t kResidencyChunk = std::size_t{64} << 10;  // managed migration unit

enum class MemKind : std::uint8_t { device, managed, vmm, host };

// Managed bytes one call moved, in each direction (what the link is busy for); moves from one
// device to another do not cross the host link.
struct Migration {
  std::size_t to_device = 0;
  std::size_t to_host = 0;
  std::size_t between_devices = 0;
};

// What a pointer resolves to.
struct PointerInfo {
  MemKind kind = MemKind::device;
  CUdeviceptr base = 0;  // allocation (or mapping, or host range) start
  std::size_t size = 0;
  std::uint64_t buffer_id = 0;
  Context* context = nullptr;
  unsigned access = 0;        // CUmemAccess_flags for VMM mappings
  bool async = false;         // allocated in stream order
  bool host_located = false;  // a VMM mapping of host memory: copies to it cross the link
  int device = 0;             // the device whose memory it is
  MemPool* pool = nullptr;    // stream-ordered allocations: the pool they came from
  bool imported = false;      // mapped from another process's memory (IPC handle, pool pointer)
};

// Where a range of device memory lives in its backing file (IPC export, dma-buf handles).
struct Backing {
  int fd = -1;               // the file (owned by the memory manager)
  std::uint64_t offset = 0;  // file offset of the range's first byte
  std::uint64_t nonce = 0;   // identifies the file (written in its header) for importers
  int device = 0;
};

// Free address ranges of the reserved span, searchable by size (best fit) and by address (merge).
class AddressSpace {
 public:
  void reset(std::uintptr_t base, std::size_t size);
  bool take(std::size_t size, std::size_t alignment, std::uintptr_t& out);
  bool take_at(std::uintptr_t address, std::size_t size);
  void give(std::uintptr_t address, std::size_t size);
  bool contains(std::uintptr_t address) const { return address >= base_ && address - base_ < size_; }

 private:
  void insert(std::uintptr_t address, std::size_t size);
  void erase(std::map<std::uintptr_t, std::size_t>::iterator it);
  std::uintptr_t base_ = 0;
  std::size_t size_ = 0;
  std::map<std::uintptr_t, std::size_t> by_address_;
  std::set<std::pair<std::size_t, std::uintptr_t>> by_size_;
};

class Memory {
 public:
  // One arena per device, of these capacities.
  bool init(const std::vector<std::size_t>& capacities);
  std::size_t capacity() const;  // all devices
  std::size_t capacity(int device) const;
  std::size_t used(int device) const;

  // cuMemAlloc family and cuMemAllocManaged, on the device of `ctx`. bytes > 0 checked by the caller.
  CUresult allocate(std::size_t bytes, MemKind kind, bool async, Context* ctx, CUdeviceptr& out);
  // cuMemFree: the whole allocation at `base`, released now.
  CUresult free_now(CUdeviceptr base);
  // cuMemFreeAsync: marks the allocation dying now (further use is an error), released when the
  // stream reaches release_pending (into its pool, for pool allocations).
  CUresult begin_async_free(CUdeviceptr base, std::uint64_t stream_id = 0);
  void release_pending(CUdeviceptr base);
  bool has_pending_frees() const;

  // Stream-ordered pools (memory_pool.cpp). An allocation from `pool` on the stream `stream_id`:
  // reuses an idle block the pool's reuse rules allow, else takes new memory from the pool's device.
  CUresult allocate_in_pool(MemPool& pool, std::size_t bytes, std::uint64_t stream_id, Context* ctx, CUdeviceptr& out);
  // Releases idle blocks while the pool would keep at least `keep` bytes reserved (cuMemPoolTrimTo).
  void trim_pool(MemPool& pool, std::size_t keep);
  // A synchronisation point: every pool of `device` releases what exceeds its release threshold.
  void release_pools_to_threshold(int device);
  // What a pool attribute reads (CU_MEMPOOL_ATTR_{RESERVED,USED}_MEM_{CURRENT,HIGH}).
  std::size_t pool_figure(const MemPool& pool, CUmemPool_attribute attribute) const;
  void reset_pool_high(MemPool& pool, CUmemPool_attribute attribute);

  // A kernel of `ctx` is handed `word`: false when it points into device memory that context may
  // not access (another device's, without peer, VMM or pool access), as a GPU would fault.
  bool kernel_may_access(CUdeviceptr word, Context& ctx) const;
  bool single_device() const { return arenas_.size() == 1; }

  // Inter-process sharing (memory_ipc.cpp). Where an allocation's bytes live in its device's file.
  CUresult export_allocation(CUdeviceptr p, PointerInfo& info, Backing& backing) const;
  // Maps `size` bytes of another process's device file at file offset `offset` into this process's arena of
  // `device` (not charged here: the exporter holds the memory). `extra_devices` may access it too.
  CUresult map_foreign(int device, int fd, std::uint64_t offset, std::size_t size, Context* ctx, MemPool* pool,
                       std::uint32_t extra_devices, CUdeviceptr& out);
  // An IPC handle opened before in this process (by the exporter's file nonce and offset).
  bool find_opened(std::uint64_t nonce, std::uint64_t offset, std::uint64_t buffer_id, CUdeviceptr& out);
  void remember_opened(CUdeviceptr base, std::uint64_t nonce, std::uint64_t offset, std::uint64_t buffer_id);
  // cuIpcCloseMemHandle: drops one reference; unmapped at the last one.
  CUresult close_opened(CUdeviceptr base);
  // The backing file range of [p, p+size) for a dma-buf handle: one allocation or VMM mappings
  // of one physical allocation.
  CUresult range_backing(CUdeviceptr p, std::size_t size, Backing& out) const;
  // cuMemExportToShareableHandle / cuMemImportFromShareableHandle (POSIX file descriptors).
  CUresult export_physical(CUmemGenericAllocationHandle handle, int& fd_out);
  CUresult import_physical(int fd, CUmemGenericAllocationHandle& out);
  // This process's device file (the pool export descriptor names it).
  Backing arena_backing(int device) const;
  std::uint64_t nonce() const { return nonce_; }

  // Is [p, p+bytes) device-accessible memory (device, managed, mapped VMM with access, or pinned
  // host)? `writable` asks for write access; `include_dying` accepts allocations whose async free
  // is issued but not yet reached (a worker re-validating work queued before the free).
  bool device_range_ok(CUdeviceptr p, std::size_t bytes, bool writable, bool include_dying = false) const;
  bool is_pinned_host(const void* p, std::size_t bytes) const;
  bool lookup(CUdeviceptr p, PointerInfo& out) const;
  // Whether p lies in a VMM mapping of host-located physical memory.
  bool is_host_located(CUdeviceptr p) const;

  // Pinned host memory.
  CUresult host_alloc(std::size_t bytes, unsigned flags, void*& out);
  CUresult host_free(void* p);
  CUresult host_register(void* p, std::size_t bytes, unsigned flags);
  CUresult host_unregister(void* p);

  // Managed memory.
  bool any_managed() const { return managed_count_.load(std::memory_order_relaxed) > 0; }
  // Validates a prefetch/advise range: inside one managed allocation.
  CUresult check_managed_range(CUdeviceptr p, std::size_t bytes) const;
  // Moves the chunks of [p, p+bytes) to device `location_for_record` (to_device) or the host;
  // returns the bytes moved, evictions it caused included.
  Migration migrate(CUdeviceptr p, std::size_t bytes, bool to_device, int location_for_record);
  // A kernel argument that points into managed memory pulls that allocation onto the kernel's device
  // (chunks never populated are populated there: charged, not moved).
  Migration touch_managed(CUdeviceptr word, int device = 0);
  // A copy or memset through the driver reaches [p, p+bytes) on `device`: the chunks of a managed
  // allocation there that were never populated are populated on that device (charged, not moved);
  // populated chunks stay where they are. Returns the evictions that made room.
  Migration populate_managed(CUdeviceptr p, std::size_t bytes, int device);
  CUresult advise(CUdeviceptr p, std::size_t bytes, CUmem_advise advice, int device);
  CUresult range_attribute(void* data, std::size_t data_size, CUmem_range_attribute attribute, CUdeviceptr p,
                           std::size_t bytes) const;

  // VMM.
  CUresult reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint, CUdeviceptr& out);
  CUresult unreserve(CUdeviceptr p, std::size_t size);
  CUresult create_physical(std::size_t size, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle& out);
  CUresult release_physical(CUmemGenericAllocationHandle handle);
  CUresult retain_physical(CUdeviceptr address, CUmemGenericAllocationHandle& out);
  CUresult physical_properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp& out) const;
  CUresult map(CUdeviceptr p, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle);
  CUresult unmap(CUdeviceptr p, std::size_t size);
  // cuMemSetAccess: `flags` for device 0 (the one-device form).
  CUresult set_access(CUdeviceptr p, std::size_t size, unsigned flags);
  // Per device: each (device, CUmemAccess_flags) pair sets that device's access; others keep theirs.
  CUresult set_access(CUdeviceptr p, std::size_t size, const std::vector<std::pair<int, unsigned>>& per_device);
  CUresult get_access(CUdeviceptr p, unsigned& flags) const;  // any device's (the union)
  CUresult get_access(CUdeviceptr p, int device, unsigned& flags) const;

  // Graph memory (graph_memory.cpp; see GraphMemStats). A graph allocation's address range is
  // reserved when its alloc node is created and stays the graph's until the graph, its
  // executable graphs and the allocation itself are all gone. Physical memory is charged when a
  // launch (or upload) maps it, kept by the graph pool after a free for reuse by graphs, and
  // returned to the device by graph_trim.
  CUresult graph_reserve(std::size_t bytes, Context* ctx, CUdeviceptr& out);
  void graph_drop(CUdeviceptr p);  // the last graph or executable graph naming it is gone
  bool graph_is_allocation(CUdeviceptr base) const;
  // cuGraphLaunch/cuGraphUpload, when issued: `allocs` are the launch's alloc nodes (with whether
  // the same graph frees them), `frees` the allocations of other graphs it frees. Fails with
  // CUDA_ERROR_INVALID_VALUE when an allocation is still unfreed from an earlier launch (unless
  // auto_free: then it is freed at the start of this launch and listed in auto_freed) or a free
  // names an allocation that is not outstanding; CUDA_ERROR_OUT_OF_MEMORY when it cannot be
  // mapped. upload_only maps without issuing.
  struct GraphLaunchAlloc {
    CUdeviceptr ptr = 0;
    bool freed_in_graph = false;
  };
  CUresult graph_launch_begin(const std::vector<GraphLaunchAlloc>& allocs, const std::vector<CUdeviceptr>& frees,
                              bool auto_free, bool upload_only, std::vector<CUdeviceptr>& auto_freed);
  void graph_launch_end(const std::vector<GraphLaunchAlloc>& allocs);  // on the worker, after the launch
  void graph_alloc_run(CUdeviceptr p);                                 // an alloc node ran: the allocation is usable
  void graph_free_run(CUdeviceptr p);                                  // a free node (or an auto free) ran: it is not
  CUresult graph_trim(int device);
  bool any_graph_ranges() const { return graph_ranges_.load(std::memory_order_relaxed) > 0; }
  // A kernel argument pointing into a graph allocation that is not usable now.
  bool graph_unmapped(CUdeviceptr word) const;
  struct GraphMemStats {
    std::size_t used = 0;  // bytes of graph allocations usable now
    std::size_t used_high = 0;
    std::size_t reserved = 0;  // physical bytes the graph pool holds (mapped or cached)
    std::size_t reserved_high = 0;
  };
  GraphMemStats graph_stats(int device) const;
  void graph_reset_high(int device, bool used, bool reserved);

 private:
  struct Managed {
    std::vector<std::int8_t> where;  // per kResidencyChunk: the device it is on, kOnHost or kUnpopulated
    std::size_t device_bytes = 0;
    int preferred_location = CU_DEVICE_INVALID;
    int last_prefetch = CU_DEVICE_INVALID;
    bool read_mostly = false;
    std::uint32_t accessed_by_devices = 0;
    bool accessed_by_host = false;
  };
  static constexpr std::int8_t kOnHost = -1;
  // Never touched through the driver: no physical page anywhere (a GPU populates such pages where
  // the first touch happens, without a transfer). The data lives in host memory whatever the state.
  static constexpr std::int8_t kUnpopulated = -2;
  struct Physical {
    std::size_t size = 0;
    int fd = -1;
    int user_refs = 1;
    int mappings = 0;
    CUmemAllocationProp prop{};
    bool host_located = false;  // host memory: not charged to the device's capacity
    int device = 0;
    bool shared = false;    // exported or imported: its file is never recycled
    bool imported = false;  // another handle's memory: charged by its creator
  };
  struct Allocation {
    std::size_t size = 0;     // requested bytes (mapping size for VMM)
    std::size_t charged = 0;  // bytes counted in bytes_in_use (device kind)
    std::size_t span = 0;     // address space taken (page multiple)
    MemKind kind = MemKind::device;
    bool async = false;
    bool dying = false;     // async free issued, not yet reached
    bool imported = false;  // another process's pages mapped here
    int device = 0;
    std::uint64_t id = 0;
    Context* context = nullptr;
    MemPool* pool = nullptr;
    std::uint64_t freeing_stream = 0;
    std::unique_ptr<Managed> managed;
    CUmemGenericAllocationHandle handle = 0;  // VMM mapping
    std::size_t handle_offset = 0;
    unsigned access = 0;            // union of every device's access (what the pages allow)
    std::uint32_t readable_by = 0;  // VMM: devices with read access; imported: extra devices
    std::uint32_t writable_by = 0;
    int ipc_refs = 0;  // cuIpcOpenMemHandle references
    // Graph allocations (graph_memory.cpp): the range is reserved for a graph; `granule` bytes of
    // physical memory are mapped (graph_mapped) from a launch on; graph_issued: a launch
    // allocated it and no free was issued yet (the host's view); graph_live: its alloc node ran
    // and its free did not (the device's view, what work checks when it runs).
    bool graph = false;
    bool graph_owned = false;  // a graph or executable graph still names it
    bool graph_mapped = false;
    bool graph_issued = false;
    bool graph_live = false;
    int graph_pending = 0;  // launches issued and not finished that allocate it
  };
  // A device's memory: its address range, backed by one shared file, and its capacity.
  struct Arena {
    std::size_t capacity = 0;
    std::size_t used = 0;
    std::uintptr_t base = 0;
    std::size_t size = 0;
    AddressSpace space;
    int fd = -1;  // the shared file behind it; -1: private memory, not exportable
  };
  struct OpenedKey {
    std::uint64_t nonce;
    std::uint64_t offset;
    std::uint64_t buffer_id;
    bool operator<(const OpenedKey& o) const {
      return nonce != o.nonce ? nonce < o.nonce : offset != o.offset ? offset < o.offset : buffer_id < o.buffer_id;
    }
  };
  struct HostRange {
    std::size_t size = 0;
    bool owned = false;  // allocated by us (cuMemAllocHost), not registered user memory
    std::uint64_t id = 0;
  };

  using AllocMap = std::map<std::uintptr_t, Allocation>;
  AllocMap::iterator find_containing(std::uintptr_t p);
  AllocMap::const_iterator find_containing(std::uintptr_t p) const;
  // The arena whose range holds p, or nullptr.
  Arena* arena_of(std::uintptr_t p);
  const Arena* arena_of(std::uintptr_t p) const;
  bool charge(int device, std::size_t bytes, const Allocation* keep_resident);        // mutex held
  void uncharge(int device, std::size_t bytes);                                       // mutex held
  std::size_t evict_managed(int device, std::size_t wanted, const Allocation* keep);  // mutex held
  void release_locked(AllocMap::iterator it);
  // The shared file backing an arena (mapped over its range), or -1 where it cannot have one.
  int share_arena(const Arena& a, int device) const;
  // Puts the arena's own memory back under [p, p+span) (after another process's was mapped there).
  static void unshared_range_locked(const Arena& arena, std::uintptr_t p, std::size_t span);
  // Drops [p, p+span) of an arena: pages freed, access revoked, address space given back.
  void give_back_locked(int device, std::uintptr_t p, std::size_t span);
  void destroy_physical_locked(std::unordered_map<CUmemGenericAllocationHandle, Physical>::iterator it);
  CUresult charge_or_wait(std::unique_lock<std::mutex>& lock, int device, std::size_t bytes);
  void migrate_locked(Allocation& a, std::uintptr_t base, std::uintptr_t from, std::uintptr_t to, int target,
                      Migration& moved);
  void release_idle_locked(MemPool& pool, std::multimap<std::size_t, IdleBlock>::iterator it);
  void trim_locked(MemPool& pool, std::size_t keep);
  void return_to_pool_locked(AllocMap::iterator it);
  PointerInfo info_of(std::uintptr_t base, const Allocation& a) const;

  mutable std::mutex mutex_;
  std::vector<Arena> arenas_;  // one per device, fixed at init
  std::size_t used_ = 0;       // all devices
  std::uintptr_t vmm_base_ = 0;
  std::size_t vmm_size_ = 0;
  AddressSpace vmm_space_;                      // VMM reservations
  std::uintptr_t lowest_ = 0;                   // every arena and the VMM range lie in
  std::uintptr_t highest_ = 0;                  // [lowest_, highest_)
  std::uint64_t nonce_ = 0;                     // identifies this process's device files
  AllocMap allocations_;                        // device, managed and VMM mappings by start
  std::map<OpenedKey, std::uintptr_t> opened_;  // IPC handles opened here
  std::map<std::uintptr_t, std::size_t> reservations_;
  std::unordered_map<CUmemGenericAllocationHandle, Physical> physical_;
  // Released physical memory's files, by size, kept for the next cuMemCreate of that size: a new
  // file's pages are zeroed and faulted in again, an emulation cost a GPU does not have (its
  // cuMemCreate makes no promise about the contents either). At most kSpareFileBytes in all.
  std::multimap<std::size_t, int> spare_files_;
  std::size_t spare_file_bytes_ = 0;
  std::map<std::uintptr_t, HostRange> host_;
  std::uint64_t next_id_ = 1;
  CUmemGenericAllocationHandle next_handle_ = 0x10001;
  std::size_t pending_frees_ = 0;
  std::atomic<std::size_t> managed_count_{0};
  // Graph pool (graph_memory.cpp): physical bytes cached for graphs and not mapped to any
  // allocation, and the attributes cuDeviceGetGraphMemAttribute reports.
  void graph_release_locked(AllocMap::iterator it);
  void graph_unmap_locked(Allocation& a);
  void graph_update_high_locked();
  std::atomic<std::size_t> graph_ranges_{0};
  // Each device's graph pool: physical bytes kept for graphs after their frees, and its figures.
  struct GraphPool {
    std::size_t cached = 0;
    GraphMemStats stats;
  };
  std::vector<GraphPool> graph_pools_;  // by device, grown on first use (mutex)
  GraphPool& graph_pool_locked(int device);
  void graph_publish_locked() const;
};

Memory& memory() noexcept;

}  // namespace fakecuda
