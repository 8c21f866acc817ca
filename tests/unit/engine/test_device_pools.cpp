// DeviceResource against the driver's stream-ordered pools (issue 34): what a pool keeps after
// cuMemFreeAsync counts as the program's device memory until it is given back; trim_pools gives
// back what a pool keeps beyond its release threshold, or everything; a pool the device cannot
// describe counts its live buffers; and a budget (BudgetLimit) trims before it refuses. The
// device here is a small model of one pool with the driver's figures: a free is reached at once
// (or, with frees_pending, only once the host waits for an event recorded after it: the GPU is
// busy before it), and the memory it held stays reserved until a trim.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <thread>

#include "memtool/engine/resources.hpp"
#include "small_cache.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kPool = 0x9001;
constexpr auto kBusy = std::chrono::milliseconds(2);  // how long a host wait for pending frees takes

class PooledDevice final : public Device {
 public:
  bool describes = true;  // cuMemPoolGetAttribute answers
  bool trims = true;      // cuMemPoolTrimTo is allowed (not during a capture)
  std::uint64_t threshold = 0;
  std::uint64_t reserved = 0;
  std::uint64_t used = 0;
  std::uint64_t idle = 0;  // reserved - used, in blocks of any size (one list is enough here)
  int trim_calls = 0;
  int allocations = 0;
  bool frees_pending = false;  // a stream-ordered free is reached only by a host wait (synchronize_event)
  int host_waits = 0;          // synchronize_event calls that reached pending frees

  Status allocate(std::uint64_t size, MemoryKind kind, StreamId, DevicePtr* out) override {
    ++allocations;
    *out = next_;
    next_ += size;
    sizes_[*out] = size;
    if (kind == MemoryKind::async) {
      if (idle >= size) {
        idle -= size;
      } else {
        reserved += size;
      }
      used += size;
    }
    return kSuccess;
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId) override {
    const std::uint64_t size = sizes_.at(ptr);
    sizes_.erase(ptr);
    if (kind == MemoryKind::async) {
      if (frees_pending) {
        pending_.push_back(size);  // still the pool's used memory until reached
      } else {
        used -= size;
        idle += size;
      }
    }
    return kSuccess;
  }
  std::uint64_t pool_of(DevicePtr) override { return kPool; }
  Status pool_figures(std::uint64_t pool, PoolFigures* out) override {
    if (!describes) return kNotSupported;
    if (pool != kPool) return kInvalidValue;
    *out = PoolFigures{reserved, used, threshold};
    return kSuccess;
  }
  Status trim_pool(std::uint64_t pool, std::uint64_t keep) override {
    if (!trims || pool != kPool) return kNotSupported;
    ++trim_calls;
    const std::uint64_t release = std::min(idle, reserved > keep ? reserved - keep : 0);
    idle -= release;
    reserved -= release;
    return kSuccess;
  }
  Status create_event(EventId* out) override {
    *out = ++events_;
    return kSuccess;
  }
  // One stream's order is enough here: an event completes once the frees queued before it are reached.
  Status record_event(EventId event, StreamId) override {
    marks_[event] = reached_ + pending_.size();
    return kSuccess;
  }
  Status stream_wait_event(StreamId, EventId) override { return kSuccess; }
  bool event_completed(EventId event) override { return marks_[event] <= reached_; }
  void destroy_event(EventId) override {}
  Status synchronize_event(EventId event) override {
    if (event_completed(event)) return kSuccess;
    std::this_thread::sleep_for(kBusy);
    ++host_waits;
    while (reached_ < marks_[event]) {
      used -= pending_.front();
      idle += pending_.front();
      pending_.pop_front();
      ++reached_;
    }
    return kSuccess;
  }

 private:
  DevicePtr next_ = 0x10000;
  std::map<DevicePtr, std::uint64_t> sizes_;
  EventId events_ = 0;
  std::deque<std::uint64_t> pending_;       // frees queued, not reached, in order
  std::uint64_t reached_ = 0;               // frees reached so far
  std::map<EventId, std::uint64_t> marks_;  // event → frees it completes after
};

DevicePtr alloc(Resource& r, std::uint64_t size, MemoryKind kind = MemoryKind::async) {
  DevicePtr ptr = 0;
  REQUIRE(r.allocate(AllocationRequest{size, kind, 1, 0}, &ptr) == kSuccess);
  return ptr;
}

}  // namespace

TEST_CASE("device resource: what a stream-ordered pool keeps after frees counts until it is trimmed",
          "[engine][device_pools]") {
  PooledDevice device;
  auto resource = make_device_resource(device, true);
  const DevicePtr a = alloc(*resource, 8 * MiB);
  const DevicePtr b = alloc(*resource, 4 * MiB);
  (void)alloc(*resource, 2 * MiB, MemoryKind::device);  // cuMemAlloc: its bytes, no pool
  CHECK(resource->memory_use().reserved == 14 * MiB);
  REQUIRE(resource->deallocate(a, MemoryKind::async, 1) == kSuccess);
  // Freed, but the pool keeps it: still the device's.
  CHECK(resource->memory_use().reserved == 14 * MiB);
  CHECK(resource->memory_use().in_use == 6 * MiB);

  SECTION("beyond the release threshold only, then everything") {
    device.threshold = 10 * MiB;
    CHECK(resource->trim_pools(Resource::PoolTrim::beyond_threshold) == 2 * MiB);
    CHECK(resource->memory_use().reserved == 12 * MiB);
    CHECK(resource->trim_pools(Resource::PoolTrim::all) == 6 * MiB);
    CHECK(resource->memory_use().reserved == 6 * MiB);
    CHECK(resource->trim_pools(Resource::PoolTrim::all) == 0);  // nothing idle: no driver call
  }
  SECTION("memory running short trims everything, whatever the threshold") {
    device.threshold = ~std::uint64_t{0};
    CHECK(resource->trim_pools(Resource::PoolTrim::beyond_threshold) == 0);
    CHECK(resource->reclaim() == 8 * MiB);
    CHECK(resource->memory_use().reserved == 6 * MiB);
  }
  SECTION("a trim refused (a capture runs) leaves it counted") {
    device.trims = false;
    CHECK(resource->trim_pools(Resource::PoolTrim::all) == 0);
    CHECK(resource->memory_use().reserved == 14 * MiB);
  }
  SECTION("a pool the device can no longer describe counts its live buffers once asked again") {
    device.describes = false;
    CHECK(resource->memory_use().reserved == 14 * MiB);  // as last asked
    CHECK(resource->trim_pools(Resource::PoolTrim::all) == 0);
    CHECK(resource->memory_use().reserved == 6 * MiB);
  }
  SECTION("a pool that released memory at a synchronisation counts less once asked again") {
    device.idle = 0;
    device.reserved = device.used;
    CHECK(resource->memory_use().reserved == 14 * MiB);  // as last asked: high, never low
    CHECK(resource->trim_pools(Resource::PoolTrim::beyond_threshold) == 0);
    CHECK(resource->memory_use().reserved == 6 * MiB);
  }
  REQUIRE(resource->deallocate(b, MemoryKind::async, 1) == kSuccess);
}

TEST_CASE("budget limit: the pool's kept memory goes before a request is refused", "[engine][device_pools]") {
  PooledDevice device;
  device.threshold = ~std::uint64_t{0};  // the program asked the pool to keep everything
  auto budget = make_budget_limit(make_device_resource(device, true), 16 * MiB);
  const DevicePtr a = alloc(*budget, 12 * MiB);
  REQUIRE(budget->deallocate(a, MemoryKind::async, 1) == kSuccess);
  // 12 MiB kept by the pool; a 14 MiB request fits the budget only once they are given back.
  const DevicePtr b = alloc(*budget, 14 * MiB);
  CHECK(device.reserved == 14 * MiB);
  CHECK(device.trim_calls >= 1);
  REQUIRE(budget->deallocate(b, MemoryKind::async, 1) == kSuccess);
  SECTION("beyond the threshold first, before the driver is asked") {
    device.threshold = 0;
    const int before = device.allocations;
    const DevicePtr c = alloc(*budget, 15 * MiB);
    CHECK(device.reserved == 15 * MiB);
    CHECK(device.allocations == before + 1);  // served at once: nothing given back and asked again
    REQUIRE(budget->deallocate(c, MemoryKind::async, 1) == kSuccess);
  }
}

TEST_CASE("budget limit: its own free of a refused stream-ordered request is waited for, never counted",
          "[engine][device_pools]") {
  // The refused request's memory goes back to the pool only once its stream reaches the free
  // memtool queued: counted until then, it refused a request that fits beside the program's.
  PooledDevice device;
  device.frees_pending = true;
  auto budget = make_budget_limit(make_device_resource(device, true), 16 * MiB);
  const DevicePtr a = alloc(*budget, 6 * MiB);
  DevicePtr refused = 0;
  CHECK(budget->allocate(AllocationRequest{12 * MiB, MemoryKind::async, 1, 0}, &refused) == kOutOfMemory);
  CHECK(device.host_waits >= 1);
  CHECK(device.reserved == 6 * MiB);
  CHECK(budget->memory_use().reserved == 6 * MiB);
  const DevicePtr b = alloc(*budget, 8 * MiB);  // 14 MiB with a's
  CHECK(device.reserved == 14 * MiB);
  REQUIRE(budget->deallocate(b, MemoryKind::async, 1) == kSuccess);
  REQUIRE(budget->deallocate(a, MemoryKind::async, 1) == kSuccess);
}

TEST_CASE("swap: the host's wait for the pools' frees is a stall, counted", "[engine][device_pools]") {
  PooledDevice device;
  device.frees_pending = true;
  SwapOptions options;
  options.mode = SwapMechanism::uvm;
  options.budget_bytes = 16 * MiB;
  options.min_bytes = 64 * MiB;  // nothing is swapped: only the pool's frees can make room
  auto swap = make_swap(device, detail::make_small_cache(device, options.min_bytes), options);
  const DevicePtr a = alloc(*swap, 12 * MiB);
  REQUIRE(swap->deallocate(a, MemoryKind::async, 1) == kSuccess);
  // Fits once a's free is reached (a host wait) and the pool trimmed.
  const DevicePtr b = alloc(*swap, 8 * MiB);
  CHECK(device.host_waits == 1);
  CHECK(device.reserved == 8 * MiB);
  Summary summary;
  swap->summarize(summary);
  CHECK(summary.stall_ns >= static_cast<std::uint64_t>(std::chrono::nanoseconds(kBusy).count()));
  REQUIRE(swap->deallocate(b, MemoryKind::async, 1) == kSuccess);
}
