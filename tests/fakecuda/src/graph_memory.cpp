// Graph memory: the allocations of mem-alloc nodes, as the driver documents them at
// cuGraphAddMemAllocNode, cuDeviceGraphMemTrim and cuDeviceGetGraphMemAttribute. The address is
// fixed when the node is created and nothing else is handed that range while a graph or an
// executable graph names it. Physical memory is mapped (charged against the device capacity,
// counted by cuMemGetInfo) when a launch or upload is issued; the alloc node makes the range
// usable when it runs, the free node (or cuMemFree/cuMemFreeAsync outside the graph, or an
// auto-free relaunch) makes it unusable again. The physical memory then stays with the graph pool
// ("destroying a graph ... will not immediately return physical memory", CUDA programming guide)
// until cuDeviceGraphMemTrim hands back what no pending launch or unfreed allocation uses.
#include "memory.hpp"

#include "driver.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace fakecuda {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// What a graph allocation of `bytes` costs in physical memory: the allocator's granule.
std::size_t physical_bytes(std::size_t bytes) { return round_up(bytes, kAllocationGranule); }

void* as_pointer(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

int device_of(const Context* ctx) { return ctx != nullptr ? ctx->device : 0; }

}  // namespace

Memory::GraphPool& Memory::graph_pool_locked(int device) {
  if (graph_pools_.size() <= static_cast<std::size_t>(device)) {
    graph_pools_.resize(static_cast<std::size_t>(device) + 1);
  }
  return graph_pools_[static_cast<std::size_t>(device)];
}

// The process-wide gauges: every device's graph pool together.
void Memory::graph_publish_locked() const {
  std::size_t used = 0;
  std::size_t reserved = 0;
  for (const GraphPool& pool : graph_pools_) {
    used += pool.stats.used;
    reserved += pool.stats.reserved;
  }
  stats().graph_mem_used_bytes.store(used, std::memory_order_relaxed);
  stats().graph_mem_reserved_bytes.store(reserved, std::memory_order_relaxed);
}

CUresult Memory::graph_reserve(std::size_t bytes, Context* ctx, CUdeviceptr& out) {
  if (bytes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Arena& arena = arenas_.at(static_cast<std::size_t>(device_of(ctx)));
  if (bytes > arena.capacity * 64 || bytes + kVmmGranularity < bytes) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t span = round_up(bytes, kPageSize);
  std::lock_guard<std::mutex> lock(mutex_);
  std::uintptr_t p = 0;
  if (!arena.space.take(span, kPageSize, p)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = bytes;
  a.span = span;
  a.kind = MemKind::device;
  a.async = false;  // "the allocation is owned by the graph instead of the memory pool": no pool handle
  a.id = next_id_++;
  a.context = ctx;
  a.device = device_of(ctx);
  a.graph = true;
  a.graph_owned = true;
  allocations_.emplace(p, std::move(a));
  graph_ranges_.fetch_add(1, std::memory_order_relaxed);
  out = p;
  return CUDA_SUCCESS;
}

void Memory::graph_unmap_locked(Allocation& a) {
  if (a.graph_mapped) {
    a.graph_mapped = false;
    graph_pool_locked(a.device).cached += physical_bytes(a.size);  // the pool keeps it for graphs until trimmed
  }
}

// The allocation is no longer usable (its free ran). The range goes back to the address space
// once nothing names it and no launch still has it pending.
void Memory::graph_release_locked(AllocMap::iterator it) {
  Allocation& a = it->second;
  if (a.graph_live) {
    a.graph_live = false;
    graph_pool_locked(a.device).stats.used -= physical_bytes(a.size);
    madvise(as_pointer(it->first), a.span, MADV_DONTNEED);
    mprotect(as_pointer(it->first), a.span, PROT_NONE);
    count(stats().graph_mem_frees);
  }
  if (!a.graph_owned && a.graph_pending == 0 && !a.graph_issued) {
    graph_unmap_locked(a);
    arena_of(it->first)->space.give(it->first, a.span);
    allocations_.erase(it);
    graph_ranges_.fetch_sub(1, std::memory_order_relaxed);
  }
  graph_publish_locked();
}

void Memory::graph_drop(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(p);
  if (it == allocations_.end() || !it->second.graph) {
    return;
  }
  it->second.graph_owned = false;
  // An allocation still live stays until it is freed (cuMemFree/cuMemFreeAsync remain valid).
  if (!it->second.graph_live) {
    graph_release_locked(it);
  }
}

bool Memory::graph_is_allocation(CUdeviceptr base) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  return it != allocations_.end() && it->second.graph;
}

void Memory::graph_update_high_locked() {
  for (GraphPool& pool : graph_pools_) {
    pool.stats.used_high = std::max(pool.stats.used_high, pool.stats.used);
    pool.stats.reserved_high = std::max(pool.stats.reserved_high, pool.stats.reserved);
  }
  graph_publish_locked();
}

CUresult Memory::graph_launch_begin(const std::vector<GraphLaunchAlloc>& allocs, const std::vector<CUdeviceptr>& frees,
                                    bool auto_free, bool upload_only, std::vector<CUdeviceptr>& auto_freed) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (int attempt = 0;; ++attempt) {
    // Validate everything before changing anything: a refused launch leaves no trace.
    std::vector<std::size_t> need(arenas_.size(), 0);  // physical bytes to map, per device
    for (const GraphLaunchAlloc& g : allocs) {
      const auto it = allocations_.find(g.ptr);
      if (it == allocations_.end() || !it->second.graph) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (!upload_only && it->second.graph_issued && !auto_free) {
        return CUDA_ERROR_INVALID_VALUE;  // unfreed from an earlier launch (cuGraphLaunch)
      }
      if (!it->second.graph_mapped) {
        need.at(static_cast<std::size_t>(it->second.device)) += physical_bytes(it->second.size);
      }
    }
    if (!upload_only) {
      for (const CUdeviceptr p : frees) {
        const auto it = allocations_.find(p);
        if (it == allocations_.end() || !it->second.graph || !it->second.graph_issued) {
          return CUDA_ERROR_INVALID_VALUE;  // a free node for memory no launch left allocated
        }
      }
    }
    std::size_t charged_device = 0;  // devices charged so far, undone if a later one cannot be
    std::vector<std::size_t> from_cache(need.size(), 0);
    for (; charged_device < need.size(); ++charged_device) {
      const int device = static_cast<int>(charged_device);
      from_cache[charged_device] = std::min(need[charged_device], graph_pool_locked(device).cached);
      const std::size_t fresh = need[charged_device] - from_cache[charged_device];
      if (fresh > 0 && !charge(device, fresh, nullptr)) {
        break;
      }
    }
    if (charged_device < need.size()) {
      for (std::size_t d = 0; d < charged_device; ++d) {
        if (need[d] - from_cache[d] > 0) {
          uncharge(static_cast<int>(d), need[d] - from_cache[d]);
        }
      }
      if (attempt == 0 && pending_frees_ > 0) {
        // Memory freed in stream order comes back once the streams reach the frees.
        lock.unlock();
        synchronize_device();
        lock.lock();
        continue;
      }
      count(stats().oom_errors);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (std::size_t d = 0; d < need.size(); ++d) {
      GraphPool& pool = graph_pool_locked(static_cast<int>(d));
      pool.cached -= from_cache[d];
      pool.stats.reserved += need[d] - from_cache[d];
    }
    break;
  }
  for (const GraphLaunchAlloc& g : allocs) {
    Allocation& a = allocations_.at(g.ptr);
    a.graph_mapped = true;
    if (upload_only) {
      continue;
    }
    if (a.graph_issued) {
      auto_freed.push_back(g.ptr);  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    }
    a.graph_issued = !g.freed_in_graph;
    ++a.graph_pending;
  }
  if (!upload_only) {
    for (const CUdeviceptr p : frees) {
      allocations_.at(p).graph_issued = false;
    }
  }
  graph_update_high_locked();
  return CUDA_SUCCESS;
}

void Memory::graph_launch_end(const std::vector<GraphLaunchAlloc>& allocs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const GraphLaunchAlloc& g : allocs) {
    const auto it = allocations_.find(g.ptr);
    if (it != allocations_.end() && it->second.graph) {
      --it->second.graph_pending;
      if (!it->second.graph_live) {
        graph_release_locked(it);  // erases it if nothing names it any more
      }
    }
  }
}

void Memory::graph_alloc_run(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(p);
  if (it == allocations_.end() || !it->second.graph || it->second.graph_live) {
    return;
  }
  Allocation& a = it->second;
  if (!a.graph_mapped) {
    // Trimmed between launch and run cannot happen (trim skips pending launches); map anyway.
    GraphPool& pool = graph_pool_locked(a.device);
    const std::size_t need = physical_bytes(a.size);
    const std::size_t from_cache = std::min(need, pool.cached);
    if (need - from_cache > 0 && !charge(a.device, need - from_cache, nullptr)) {
      set_sticky_error(a.context, CUDA_ERROR_OUT_OF_MEMORY);
      return;
    }
    pool.cached -= from_cache;
    pool.stats.reserved += need - from_cache;
    a.graph_mapped = true;
  }
  mprotect(as_pointer(it->first), a.span, PROT_READ | PROT_WRITE);
  a.graph_live = true;
  graph_pool_locked(a.device).stats.used += physical_bytes(a.size);
  count(stats().graph_mem_allocs);
  graph_update_high_locked();
}

void Memory::graph_free_run(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(p);
  if (it != allocations_.end() && it->second.graph && it->second.graph_live) {
    graph_release_locked(it);
  }
}

CUresult Memory::graph_trim(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  GraphPool& pool = graph_pool_locked(device);
  std::size_t released = pool.cached;
  pool.cached = 0;
  for (auto& [base, a] : allocations_) {
    // Unfreed allocations and launches scheduled or running keep their physical memory.
    if (a.graph && a.device == device && a.graph_mapped && !a.graph_live && !a.graph_issued && a.graph_pending == 0) {
      a.graph_mapped = false;
      released += physical_bytes(a.size);
    }
  }
  uncharge(device, released);
  pool.stats.reserved -= released;
  graph_publish_locked();
  return CUDA_SUCCESS;
}

bool Memory::graph_unmapped(CUdeviceptr word) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(word);
  return it != allocations_.end() && it->second.graph && !it->second.graph_live;
}

Memory::GraphMemStats Memory::graph_stats(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(device) < graph_pools_.size() ? graph_pools_[static_cast<std::size_t>(device)].stats
                                                                : GraphMemStats{};
}

void Memory::graph_reset_high(int device, bool used, bool reserved) {
  std::lock_guard<std::mutex> lock(mutex_);
  GraphPool& pool = graph_pool_locked(device);
  // A high watermark "can only be reset to zero": it restarts from what is in use now.
  if (used) {
    pool.stats.used_high = pool.stats.used;
  }
  if (reserved) {
    pool.stats.reserved_high = pool.stats.reserved;
  }
}

}  // namespace fakecuda
