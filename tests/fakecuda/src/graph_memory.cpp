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

void publish(const Memory::GraphMemStats& g) {
  stats().graph_mem_used_bytes.store(g.used, std::memory_order_relaxed);
  stats().graph_mem_reserved_bytes.store(g.reserved, std::memory_order_relaxed);
}

}  // namespace

CUresult Memory::graph_reserve(std::size_t bytes, Context* ctx, CUdeviceptr& out) {
  if (bytes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (bytes > capacity_ * 64 || bytes + kVmmGranularity < bytes) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t span = round_up(bytes, kPageSize);
  std::lock_guard<std::mutex> lock(mutex_);
  std::uintptr_t p = 0;
  if (!space_.take(span, kPageSize, p)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = bytes;
  a.span = span;
  a.kind = MemKind::device;
  a.async = false;  // "the allocation is owned by the graph instead of the memory pool": no pool handle
  a.id = next_id_++;
  a.context = ctx;
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
    graph_cached_ += physical_bytes(a.size);  // the pool keeps it for graphs until trimmed
  }
}

// The allocation is no longer usable (its free ran). The range goes back to the address space
// once nothing names it and no launch still has it pending.
void Memory::graph_release_locked(AllocMap::iterator it) {
  Allocation& a = it->second;
  if (a.graph_live) {
    a.graph_live = false;
    graph_stats_.used -= physical_bytes(a.size);
    madvise(as_pointer(it->first), a.span, MADV_DONTNEED);
    mprotect(as_pointer(it->first), a.span, PROT_NONE);
    count(stats().graph_mem_frees);
  }
  if (!a.graph_owned && a.graph_pending == 0 && !a.graph_issued) {
    graph_unmap_locked(a);
    space_.give(it->first, a.span);
    allocations_.erase(it);
    graph_ranges_.fetch_sub(1, std::memory_order_relaxed);
  }
  publish(graph_stats_);
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
  graph_stats_.used_high = std::max(graph_stats_.used_high, graph_stats_.used);
  graph_stats_.reserved_high = std::max(graph_stats_.reserved_high, graph_stats_.reserved);
  publish(graph_stats_);
}

CUresult Memory::graph_launch_begin(const std::vector<GraphLaunchAlloc>& allocs, const std::vector<CUdeviceptr>& frees,
                                    bool auto_free, bool upload_only, std::vector<CUdeviceptr>& auto_freed) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (int attempt = 0;; ++attempt) {
    // Validate everything before changing anything: a refused launch leaves no trace.
    std::size_t need = 0;
    for (const GraphLaunchAlloc& g : allocs) {
      const auto it = allocations_.find(g.ptr);
      if (it == allocations_.end() || !it->second.graph) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (!upload_only && it->second.graph_issued && !auto_free) {
        return CUDA_ERROR_INVALID_VALUE;  // unfreed from an earlier launch (cuGraphLaunch)
      }
      if (!it->second.graph_mapped) {
        need += physical_bytes(it->second.size);
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
    const std::size_t from_cache = std::min(need, graph_cached_);
    if (need - from_cache > 0 && !charge(need - from_cache, nullptr)) {
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
    graph_cached_ -= from_cache;
    graph_stats_.reserved += need - from_cache;
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
    const std::size_t need = physical_bytes(a.size);
    const std::size_t from_cache = std::min(need, graph_cached_);
    if (need - from_cache > 0 && !charge(need - from_cache, nullptr)) {
      set_sticky_error(a.context, CUDA_ERROR_OUT_OF_MEMORY);
      return;
    }
    graph_cached_ -= from_cache;
    graph_stats_.reserved += need - from_cache;
    a.graph_mapped = true;
  }
  mprotect(as_pointer(it->first), a.span, PROT_READ | PROT_WRITE);
  a.graph_live = true;
  graph_stats_.used += physical_bytes(a.size);
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

CUresult Memory::graph_trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t released = graph_cached_;
  graph_cached_ = 0;
  for (auto& [base, a] : allocations_) {
    // Unfreed allocations and launches scheduled or running keep their physical memory.
    if (a.graph && a.graph_mapped && !a.graph_live && !a.graph_issued && a.graph_pending == 0) {
      a.graph_mapped = false;
      released += physical_bytes(a.size);
    }
  }
  uncharge(released);
  graph_stats_.reserved -= released;
  publish(graph_stats_);
  return CUDA_SUCCESS;
}

bool Memory::graph_unmapped(CUdeviceptr word) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(word);
  return it != allocations_.end() && it->second.graph && !it->second.graph_live;
}

Memory::GraphMemStats Memory::graph_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return graph_stats_;
}

void Memory::graph_reset_high(bool used, bool reserved) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A high watermark "can only be reset to zero": it restarts from what is in use now.
  if (used) {
    graph_stats_.used_high = graph_stats_.used;
  }
  if (reserved) {
    graph_stats_.reserved_high = graph_stats_.reserved;
  }
}

}  // namespace fakecuda
