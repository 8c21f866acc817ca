// DeviceResource: the real allocator behind every strategy (see resources.hpp). Counting its
// bytes, it reports what the driver holds for it: its cuMemAlloc buffers' bytes, and for its
// stream-ordered ones the pools they come from, whole (RESERVED_MEM_CURRENT: their live
// allocations, frees not reached yet, and what a pool keeps after the frees it reached, which the
// default pool gives back only at a synchronisation or on cuMemPoolTrimTo). trim_pools and
// reclaim make those pools give back what they keep unused. A pool's figure is asked of the
// driver after each allocation from it and each trim, not at each count (a budget counts at every
// work item): between those it can only have dropped (a synchronisation released memory), so the
// count errs high until the next trim, which a budget tries before anything leaves. A free's
// memory goes back to its pool only when its stream reaches it (pool_frees.hpp): the last trim a
// budget asks for (PoolTrim::all_after_frees) waits for those first.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "pool_frees.hpp"

namespace memtool::engine {
namespace {

class DeviceResource final : public Resource {
 public:
  DeviceResource(Device& device, bool count_bytes) : device_(device), count_bytes_(count_bytes), pool_frees_(device) {}

  std::string_view name() const override { return "device"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    const Status status = request.memory_pool != 0
                              ? device_.allocate_from_pool(request.size, request.memory_pool, request.stream, out)
                              : device_.allocate(request.size, request.kind, request.stream, out);
    if (status == kSuccess && count_bytes_) {
      const bool pooled = request.memory_pool != 0 || request.kind == MemoryKind::async;
      const std::uint64_t pool = request.memory_pool != 0 ? request.memory_pool : pooled ? device_.pool_of(*out) : 0;
      Device::PoolFigures figures;
      const bool described = pool != 0 && device_.pool_figures(pool, &figures) == kSuccess;
      std::lock_guard lock(mutex_);
      sizes_[*out] = Held{request.size, pooled};
      held_ += request.size;
      if (pooled) pooled_ += request.size;
      if (described) pools_[pool] = figures.reserved;
    }
    return status;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    bool pooled = false;
    if (count_bytes_) {
      std::lock_guard lock(mutex_);
      if (const auto it = sizes_.find(ptr); it != sizes_.end()) {
        held_ -= it->second.size;
        pooled = it->second.pooled;
        if (pooled) pooled_ -= it->second.size;
        sizes_.erase(it);
      }
    }
    const Status status = device_.free(ptr, kind, stream);
    // A stream-ordered free gives its memory to the pool when the stream gets there (a
    // synchronous one of pooled memory waited for the device already).
    if (pooled && kind == MemoryKind::async && status == kSuccess) pool_frees_.freed_on(stream);
    return status;
  }

  // Sub-allocates nothing, and keeps nothing idle itself: what the driver's pools keep is theirs,
  // counted here, as last asked (a pool the driver cannot describe counts its live buffers only).
  MemoryUse memory_use() const override {
    std::lock_guard lock(mutex_);
    std::uint64_t in_pools = 0;
    for (const auto& [pool, reserved] : pools_) in_pools += reserved;
    const std::uint64_t reserved = held_ - pooled_ + std::max(pooled_, in_pools);
    return MemoryUse{reserved + graph_bytes_.load(std::memory_order_relaxed), held_, 0, 0};
  }
  void set_graph_memory(std::uint64_t bytes) override { graph_bytes_.store(bytes, std::memory_order_relaxed); }

  // The host's waits for frees into the pools (trim_pools, all_after_frees) are a budget's stall.
  void summarize(Summary& summary) const override { summary.stall_ns += pool_frees_.stall_ns(); }

  // Each pool keeps its release threshold (beyond_threshold) or nothing (all, all_after_frees) of
  // what it holds unused; all_after_frees first waits on the host for the frees into them the GPU
  // has not reached, where the host may wait (HostWaits). A pool the driver no longer knows
  // (destroyed) is forgotten.
  std::uint64_t trim_pools(PoolTrim how) override {
    if (how == PoolTrim::all_after_frees) (void)pool_frees_.reach();
    std::vector<std::uint64_t> pools;
    {
      std::lock_guard lock(mutex_);
      for (const auto& entry : pools_) pools.push_back(entry.first);
    }
    std::uint64_t freed = 0;
    for (const std::uint64_t pool : pools) {
      Device::PoolFigures figures;
      const Status status = device_.pool_figures(pool, &figures);
      if (status == kSuccess && figures.reserved > figures.used) {
        const std::uint64_t before = figures.reserved;
        const std::uint64_t keep = how == PoolTrim::beyond_threshold ? figures.release_threshold : 0;
        if (before > keep && device_.trim_pool(pool, keep) == kSuccess &&
            device_.pool_figures(pool, &figures) == kSuccess && figures.reserved < before) {
          freed += before - figures.reserved;
        }
      }
      std::lock_guard lock(mutex_);
      if (status == kSuccess) {
        pools_[pool] = figures.reserved;
      } else {
        pools_.erase(pool);  // destroyed, or no longer described: its live buffers count
      }
    }
    return freed;
  }

  // Memory is short: the pools keep nothing unused, whatever their thresholds ask.
  std::uint64_t reclaim() override { return trim_pools(PoolTrim::all); }

 private:
  struct Held {
    std::uint64_t size = 0;
    bool pooled = false;  // from a stream-ordered pool (cuMemAllocAsync, cuMemAllocFromPoolAsync)
  };

  Device& device_;
  const bool count_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<DevicePtr, Held> sizes_;
  std::uint64_t held_ = 0;
  std::uint64_t pooled_ = 0;  // of held_, in stream-ordered pools
  // The pools this resource allocated from (CUmemoryPool handles), with what each held when last asked.
  std::map<std::uint64_t, std::uint64_t> pools_;
  std::atomic<std::uint64_t> graph_bytes_{0};  // held by the driver for the program's graphs
  detail::PoolFrees pool_frees_;               // stream-ordered frees into the pools, until reached
};

}  // namespace

std::unique_ptr<Resource> make_device_resource(Device& device, bool count_bytes) {
  return std::make_unique<DeviceResource>(device, count_bytes);
}

}  // namespace memtool::engine
