// SmallCache: the swap strategy's unswapped cuMemAlloc buffers, cached (see small_cache.hpp).
#include "small_cache.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "memtool/engine/baselines.hpp"
#include "host_waits.hpp"
#include "memtool/engine/resources.hpp"
#include "spare_events.hpp"

namespace memtool::engine::detail {
namespace {

// PyTorch's policy, but a request out of room for a segment of its stream's takes another
// stream's free block before failing (the program alone had that memory).
PytorchCachingOptions borrowing() {
  PytorchCachingOptions options;
  options.borrow_when_full = true;
  return options;
}

class SmallCache final : public Resource {
 public:
  SmallCache(Device& device, std::uint64_t below_bytes)
      : device_(device),
        below_(below_bytes),
        cache_(make_pytorch_caching(device, make_device_resource(device, true), borrowing())),
        direct_(make_device_resource(device, true)) {}

  ~SmallCache() override {
    std::lock_guard lock(mutex_);
    for (const Unreached& u : unreached_) events_.give(u.event);
    for (const Deferred& d : deferred_) {
      for (const EventId e : d.reached) events_.give(e);
    }
    events_.destroy_all(device_);
  }

  std::string_view name() const override { return "small-cache"; }

  // While a stream waits for a value (HostWaits), a cacheable request goes to the driver as the
  // program made it: the cache's way out of memory (PyTorch's: wait for its pending blocks, then
  // cuMemFree its idle segments, which synchronises the device) could wait for that stream.
  // The cache asks the driver for a whole segment (2 or 20 MiB), more than the program did: where
  // the device has no room for one but has for the request, the driver's own allocation of the
  // request, as without memtool (uncached, never failing where the program alone succeeds).
  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    release_deferred();
    if (!cacheable(request) || !HostWaits(device_).allowed()) return direct_->allocate(request, out);
    const Status status = cache_->allocate(request, out);
    if (status != kOutOfMemory) return status;
    return direct_->allocate(request, out);
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
      // cuMemFree's synchronization, as far as the program can see it: its own streams. Not while
      // one may wait for a value the program has not written (HostWaits): the block then stays
      // out of the cache until every stream got where it is now (release_deferred).
      if (!HostWaits(device_).allowed()) return defer(ptr, stream, streams);
      for (const StreamId s : streams) {
        if (!wait_for(s)) return defer(ptr, stream, streams);  // a value wait came meanwhile
      }
    }
    return cache_->deallocate(ptr, kind, stream);
  }

  bool wants_accesses() const override { return true; }
  void before_item(const WorkItem& item) override {
    release_deferred();
    note_stream(item.stream);
    cache_->before_item(item);
  }
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) override { cache_->on_host_sync(stream, waited_ns); }

  void on_boundary(const Boundary& boundary) override { cache_->on_boundary(boundary); }

  MemoryUse memory_use() const override {
    const MemoryUse a = cache_->memory_use();
    const MemoryUse b = direct_->memory_use();
    return MemoryUse{a.reserved + b.reserved + unreached_bytes(), a.in_use + b.in_use,
                     a.pool_reserved + b.pool_reserved, a.off_device + b.off_device};
  }

  // What the resources under it did (the driver's: the host's waits for frees into its pools), and
  // the host's waits for the stream-ordered frees this one counts (reclaim): the budget's stalls.
  void summarize(Summary& summary) const override {
    cache_->summarize(summary);
    direct_->summarize(summary);
    summary.stall_ns += stall_ns_.load(std::memory_order_relaxed);
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
  // While the host may not wait (HostWaits), only the frees the GPU has reached already: the
  // cache's release waits for its pending blocks and cuMemFree synchronises the device.
  std::uint64_t reclaim() override {
    release_deferred();
    if (!HostWaits(device_).allowed()) return direct_->reclaim() + reach_frees(false);
    return cache_->reclaim() + direct_->reclaim() + reach_frees(true);
  }

  // Only the driver's allocations use its stream-ordered pools; the cache's segments are cuMemAlloc's.
  std::uint64_t trim_pools(PoolTrim how) override { return direct_->trim_pools(how); }

  void shutdown(bool release_memory) override {
    release_deferred();
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

  // Stream-ordered frees still on their way: with `wait`, waited for (HostWaits), else those the
  // GPU has reached; returns the bytes they give back (the others stay counted).
  std::uint64_t reach_frees(bool wait) {
    std::vector<Unreached> pending;
    {
      std::lock_guard lock(mutex_);
      pending.swap(unreached_);
    }
    std::uint64_t bytes = 0;
    std::vector<Unreached> still;
    HostWaits waits(device_);
    for (const Unreached& u : pending) {
      if (waits.reached(u.event, wait)) {
        bytes += u.bytes;
      } else {
        still.push_back(u);
      }
    }
    stall_ns_.fetch_add(waits.stall_ns(), std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    for (const Unreached& u : pending) {
      if (std::find_if(still.begin(), still.end(), [&](const Unreached& s) { return s.event == u.event; }) ==
          still.end()) {
        events_.give(u.event);
      }
    }
    unreached_.insert(unreached_.end(), still.begin(), still.end());
    return bytes;
  }

  // A freed block kept from the cache until `reached` (one event on each program stream) completed.
  Status defer(DevicePtr ptr, StreamId stream, const std::vector<StreamId>& streams) {
    Deferred d{ptr, stream, {}, false};
    std::lock_guard lock(mutex_);
    for (const StreamId s : streams) {
      bool ok = false;
      const EventId e = events_.take(device_, ok);
      if (!ok) {
        d.unordered = true;  // no event: held until the host may wait again (release_deferred)
        break;
      }
      if (device_.record_event(e, s) != kSuccess) {
        events_.give(e);  // a destroyed stream: nothing of it left to wait for
        continue;
      }
      d.reached.push_back(e);
    }
    deferred_.push_back(std::move(d));
    return kSuccess;
  }

  // Deferred frees whose streams got there go to the cache; where the host may wait again, the
  // others are waited for (as the free would have), then go too.
  void release_deferred() {
    std::vector<Deferred> ready;
    {
      std::lock_guard lock(mutex_);
      if (deferred_.empty()) return;
      const bool may_wait = HostWaits(device_).allowed();
      std::erase_if(deferred_, [&](Deferred& d) {
        const bool reached =
            may_wait || (!d.unordered && std::all_of(d.reached.begin(), d.reached.end(),
                                                     [&](EventId e) { return device_.event_completed(e); }));
        if (reached) ready.push_back(std::move(d));
        return reached;
      });
    }
    for (const Deferred& d : ready) {
      HostWaits waits(device_);
      for (const EventId e : d.reached) (void)waits.wait(e);
      (void)cache_->deallocate(d.ptr, MemoryKind::device, d.stream);
    }
    std::lock_guard lock(mutex_);
    for (const Deferred& d : ready) {
      for (const EventId e : d.reached) events_.give(e);
    }
  }

  void note_stream(StreamId stream) {
    std::lock_guard lock(mutex_);
    if (std::find(program_streams_.begin(), program_streams_.end(), stream) == program_streams_.end()) {
      program_streams_.push_back(stream);
    }
  }

  // The host waits until `stream` has run the work queued on it so far (without the lock: other
  // threads go on meanwhile). A stream that takes no event any more was destroyed by the program
  // (its work runs to its end, as cuStreamDestroy says): it is forgotten. False: the wait was
  // refused (HostWaits: a stream waits for a value) and `stream` may not be there yet.
  bool wait_for(StreamId stream) {
    bool ok = false;
    EventId e = 0;
    {
      std::lock_guard lock(mutex_);
      e = events_.take(device_, ok);
    }
    if (!ok) return true;
    const bool recorded = device_.record_event(e, stream) == kSuccess;
    const bool reached = !recorded || HostWaits(device_).wait(e);
    std::lock_guard lock(mutex_);
    events_.give(e);
    if (!recorded) std::erase(program_streams_, stream);
    return reached;
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
  struct Deferred {
    DevicePtr ptr;                 // a cached block the program freed while the host could not wait
    StreamId stream;               // the free's stream
    std::vector<EventId> reached;  // recorded then on every program stream
    bool unordered;                // an event could not be had: not every stream is in `reached`
  };
  std::vector<Deferred> deferred_;
  mutable SpareEvents events_;
  std::atomic<std::uint64_t> stall_ns_{0};  // host time reach_frees waited for the GPU
};

}  // namespace

std::unique_ptr<Resource> make_small_cache(Device& device, std::uint64_t below_bytes) {
  return std::make_unique<SmallCache>(device, below_bytes);
}

}  // namespace memtool::engine::detail
