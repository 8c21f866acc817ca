// The emulated device memory: one reserved address range that device, managed and VMM memory are
// carved from, a capacity that makes out-of-memory real, pinned host ranges, managed residency and
// VMM reservations, physical handles and mappings. Everything here is guarded by one mutex; the
// API layer validates arguments against it and the stream workers re-validate at execution.
#pragma once

#include "cuda_abi.hpp"

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

constexpr std::size_t kAllocationGranule = 512;            // what cuMemAlloc charges and pitches to
constexpr std::size_t kPageSize = 4096;                    // placement and commit granularity
constexpr std::size_t kVmmGranularity = std::size_t{2} << 20;
constexpr std::size_t kResidencyChunk = std::size_t{64} << 10;  // managed migration unit

enum class MemKind : std::uint8_t { device, managed, vmm, host };

// Managed bytes one call moved, in each direction (what the link is busy for).
struct Migration {
  std::size_t to_device = 0;
  std::size_t to_host = 0;
};

// What a pointer resolves to.
struct PointerInfo {
  MemKind kind = MemKind::device;
  CUdeviceptr base = 0;   // allocation (or mapping, or host range) start
  std::size_t size = 0;
  std::uint64_t buffer_id = 0;
  Context* context = nullptr;
  unsigned access = 0;    // CUmemAccess_flags for VMM mappings
  bool async = false;     // allocated in stream order
  bool host_located = false;  // a VMM mapping of host memory: copies to it cross the link
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
  bool init(std::size_t capacity);
  std::size_t capacity() const { return capacity_; }

  // cuMemAlloc family and cuMemAllocManaged. bytes > 0 checked by the caller.
  CUresult allocate(std::size_t bytes, MemKind kind, bool async, Context* ctx, CUdeviceptr& out);
  // cuMemFree: the whole allocation at `base`, released now.
  CUresult free_now(CUdeviceptr base);
  // cuMemFreeAsync: marks the allocation dying now (further use is an error), released when the
  // stream reaches release_pending.
  CUresult begin_async_free(CUdeviceptr base);
  void release_pending(CUdeviceptr base);
  bool has_pending_frees() const;

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
  // Moves the chunks of [p, p+bytes) to the device (to_device) or the host; returns the bytes
  // moved, evictions it caused included.
  Migration migrate(CUdeviceptr p, std::size_t bytes, bool to_device, int location_for_record);
  // A kernel argument that points into managed memory pulls that allocation onto the device.
  Migration touch_managed(CUdeviceptr word);
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
  CUresult set_access(CUdeviceptr p, std::size_t size, unsigned flags);
  CUresult get_access(CUdeviceptr p, unsigned& flags) const;

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
  void graph_alloc_run(CUdeviceptr p);  // an alloc node ran: the allocation is usable
  void graph_free_run(CUdeviceptr p);   // a free node (or an auto free) ran: it is not
  CUresult graph_trim();
  bool any_graph_ranges() const { return graph_ranges_.load(std::memory_order_relaxed) > 0; }
  // A kernel argument pointing into a graph allocation that is not usable now.
  bool graph_unmapped(CUdeviceptr word) const;
  struct GraphMemStats {
    std::size_t used = 0;           // bytes of graph allocations usable now
    std::size_t used_high = 0;
    std::size_t reserved = 0;       // physical bytes the graph pool holds (mapped or cached)
    std::size_t reserved_high = 0;
  };
  GraphMemStats graph_stats() const;
  void graph_reset_high(bool used, bool reserved);

 private:
  struct Managed {
    std::vector<std::uint8_t> on_device;  // per kResidencyChunk
    std::size_t device_bytes = 0;
    int preferred_location = CU_DEVICE_INVALID;
    int last_prefetch = CU_DEVICE_INVALID;
    bool read_mostly = false;
    bool accessed_by_device = false;
    bool accessed_by_host = false;
  };
  struct Physical {
    std::size_t size = 0;
    int fd = -1;
    int user_refs = 1;
    int mappings = 0;
    CUmemAllocationProp prop{};
    bool host_located = false;  // host memory: not charged to the device's capacity
  };
  struct Allocation {
    std::size_t size = 0;      // requested bytes (mapping size for VMM)
    std::size_t charged = 0;   // bytes counted in bytes_in_use (device kind)
    std::size_t span = 0;      // address space taken (page multiple)
    MemKind kind = MemKind::device;
    bool async = false;
    bool dying = false;        // async free issued, not yet reached
    std::uint64_t id = 0;
    Context* context = nullptr;
    std::unique_ptr<Managed> managed;
    CUmemGenericAllocationHandle handle = 0;  // VMM mapping
    std::size_t handle_offset = 0;
    unsigned access = 0;
    // Graph allocations (graph_memory.cpp): the range is reserved for a graph; `granule` bytes of
    // physical memory are mapped (graph_mapped) from a launch on; graph_issued: a launch
    // allocated it and no free was issued yet (the host's view); graph_live: its alloc node ran
    // and its free did not (the device's view, what work checks when it runs).
    bool graph = false;
    bool graph_owned = false;   // a graph or executable graph still names it
    bool graph_mapped = false;
    bool graph_issued = false;
    bool graph_live = false;
    int graph_pending = 0;      // launches issued and not finished that allocate it
  };
  struct HostRange {
    std::size_t size = 0;
    bool owned = false;  // allocated by us (cuMemAllocHost), not registered user memory
    std::uint64_t id = 0;
  };

  using AllocMap = std::map<std::uintptr_t, Allocation>;
  AllocMap::iterator find_containing(std::uintptr_t p);
  AllocMap::const_iterator find_containing(std::uintptr_t p) const;
  bool charge(std::size_t bytes, const Allocation* keep_resident);  // mutex held
  void uncharge(std::size_t bytes);                                  // mutex held
  std::size_t evict_managed(std::size_t wanted, const Allocation* keep);  // mutex held
  void release_locked(AllocMap::iterator it);
  void destroy_physical_locked(std::unordered_map<CUmemGenericAllocationHandle, Physical>::iterator it);
  CUresult charge_or_wait(std::unique_lock<std::mutex>& lock, std::size_t bytes);
  void migrate_locked(Allocation& a, std::uintptr_t base, std::uintptr_t from, std::uintptr_t to, bool to_device,
                      Migration& moved);

  mutable std::mutex mutex_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::uintptr_t range_base_ = 0;
  std::size_t range_size_ = 0;
  AddressSpace space_;
  AllocMap allocations_;                            // device, managed and VMM mappings by start
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
  std::size_t graph_cached_ = 0;
  GraphMemStats graph_stats_;
};

Memory& memory() noexcept;

}  // namespace fakecuda
