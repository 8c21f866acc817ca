// SmallCache: the swap strategy's unswapped cuMemAlloc buffers, cached (see small_cache.hpp).
#include "small_cache.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/resources.hpp"
#include "spare_events.hpp"

namespace memtool::engine::detail {
namespace {

class SmallCache final : public Resource {
 public:
  SmallCache(Device& device, std::uint64_t below_bytes)
      : device_(device),
        below_(below_bytes),
        cache_(make_pytorch_caching(device, make_device_resource(device, true))),
        direct_(make_device_resource(device, true)) {}

  ~SmallCache() override {
    std::lock_guard lock(mutex_);
    for (const Unreached& u : unreached_) events_.give(u.event);
    events_.destroy_all(device_);
  }

  std::string_view name() const override { return "small-cache"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    return cacheable(request) ? cache_->allocate(request, out) : direct_->allocate(request, out);
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    const std::optional<BufferExtent> block = cached(ptr);
    if (!block) {
      // The driver's free, outside the lock. A stream-ordered one gives the memory back when the
      // stream gets there: counted until then.
      const std::uint64_t before = kind == MemoryKind::async ? direct_->memory_use().reserved : 0;
      const Status status = direct_->deallocate(ptr, kind, stream);
      if (status == kSuccess && kind == MemoryKind::async) {
        const std::uint64_t freed = before - std::min(before, direct_->memory_use().reserved);
        if (freed != 0) count_until_reached(freed, stream);
      }
      return status;
    }
    if (kind == MemoryKind::device) {
      std::vector<StreamId> streams;
      {
        std::lock_guard lock(mutex_);
        streams = program_streams_;
      }
      // cuMemFree's synchronization, as far as the program can see it: its own streams.
      for (const StreamId s : streams) wait_for(s);
    }
    return cache_->deallocate(ptr, kind, stream);
  }

  bool wants_accesses() const override { return true; }
  void before_item(const WorkItem& item) override {
    note_stream(item.stream);
    cache_->before_item(item);
  }

  void on_boundary(const Boundary& boundary) override { cache_->on_boundary(boundary); }

  MemoryUse memory_use() const override {
    const MemoryUse a = cache_->memory_use();
    const MemoryUse b = direct_->memory_use();
    return MemoryUse{a.reserved + b.reserved + unreached_bytes(), a.in_use + b.in_use,
                     a.pool_reserved + b.pool_reserved, a.off_device + b.off_device};
  }

  void set_graph_memory(std::uint64_t bytes) override { direct_->set_graph_memory(bytes); }

  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    if (std::optional<BufferExtent> extent = cache_->extent_of(ptr)) return extent;
    return direct_->extent_of(ptr);
  }

  // A cached block is a piece of one of the cache's cuMemAlloc segments: exported in place (the
  // handler names the segment and the block's offset); the block is live, so the cache does not
  // hand its memory to another buffer until the program frees it, and blocks of its size are the
  // driver's own from now on.
  ExportPin pin_for_export(DevicePtr ptr) override {
    const std::optional<BufferExtent> block = cached(ptr);
    if (!block) return direct_->pin_for_export(ptr);
    std::lock_guard lock(mutex_);
    exported_sizes_.insert(block->size);
    return ExportPin::in_place;
  }

  std::uint64_t growth_of(const AllocationRequest& request) const override {
    return cacheable(request) ? cache_->growth_of(request) : direct_->growth_of(request);
  }

  // What is idle in the cache, and stream-ordered frees once their streams got there (waited for).
  std::uint64_t reclaim() override { return cache_->reclaim() + direct_->reclaim() + reach_frees(); }

  void shutdown(bool release_memory) override {
    cache_->shutdown(release_memory);
    direct_->shutdown(release_memory);
  }

 private:
  // A live buffer the cache handed out, starting at `ptr` (the cache's own record of it).
  std::optional<BufferExtent> cached(DevicePtr ptr) const {
    std::optional<BufferExtent> block = cache_->extent_of(ptr);
    if (block && block->base != ptr) block.reset();
    return block;
  }

  bool cacheable(const AllocationRequest& request) const {
    if (request.kind != MemoryKind::device || request.memory_pool != 0 || request.size >= below_) return false;
    std::lock_guard lock(mutex_);
    return !exported_sizes_.contains(request.size);
  }

  // `bytes` freed on `stream` are the device's until the stream reaches the free.
  void count_until_reached(std::uint64_t bytes, StreamId stream) {
    std::lock_guard lock(mutex_);
    bool ok = false;
    const EventId e = events_.take(device_, ok);
    if (!ok) return;
    if (device_.record_event(e, stream) != kSuccess) {
      events_.give(e);
      return;
    }
    unreached_.push_back(Unreached{e, bytes});
  }

  // Bytes of stream-ordered frees the device has not reached yet; those it has are forgotten.
  std::uint64_t unreached_bytes() const {
    std::lock_guard lock(mutex_);
    std::uint64_t bytes = 0;
    std::erase_if(unreached_, [&](const Unreached& u) {
      if (device_.event_completed(u.event)) {
        events_.give(u.event);
        return true;
      }
      bytes += u.bytes;
      return false;
    });
    return bytes;
  }

  // Waits for every stream-ordered free still on its way; returns the bytes they give back.
  std::uint64_t reach_frees() {
    std::vector<Unreached> pending;
    {
      std::lock_guard lock(mutex_);
      pending.swap(unreached_);
    }
    std::uint64_t bytes = 0;
    for (const Unreached& u : pending) {
      (void)device_.synchronize_event(u.event);
      bytes += u.bytes;
    }
    std::lock_guard lock(mutex_);
    for (const Unreached& u : pending) events_.give(u.event);
    return bytes;
  }

  void note_stream(StreamId stream) {
    std::lock_guard lock(mutex_);
    if (std::find(program_streams_.begin(), program_streams_.end(), stream) == program_streams_.end()) {
      program_streams_.push_back(stream);
    }
  }

  // The host waits until `stream` has run the work queued on it so far (without the lock: other
  // threads go on meanwhile). A stream that takes no event any more was destroyed by the program
  // (its work runs to its end, as cuStreamDestroy says): it is forgotten.
  void wait_for(StreamId stream) {
    bool ok = false;
    EventId e = 0;
    {
      std::lock_guard lock(mutex_);
      e = events_.take(device_, ok);
    }
    if (!ok) return;
    const bool recorded = device_.record_event(e, stream) == kSuccess;
    if (recorded) (void)device_.synchronize_event(e);
    std::lock_guard lock(mutex_);
    events_.give(e);
    if (!recorded) std::erase(program_streams_, stream);
  }

  Device& device_;
  const std::uint64_t below_;
  std::unique_ptr<Resource> cache_;
  std::unique_ptr<Resource> direct_;
  mutable std::mutex mutex_;
  std::unordered_set<std::uint64_t> exported_sizes_;
  std::vector<StreamId> program_streams_;  // every stream the program's work ran on
  struct Unreached {
    EventId event;  // recorded after the free on its stream
    std::uint64_t bytes;
  };
  mutable std::vector<Unreached> unreached_;  // stream-ordered frees on their way (polled)
  mutable SpareEvents events_;
};

}  // namespace

std::unique_ptr<Resource> make_small_cache(Device& device, std::uint64_t below_bytes) {
  return std::make_unique<SmallCache>(device, below_bytes);
}

}  // namespace memtool::engine::detail
