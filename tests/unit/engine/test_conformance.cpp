// One conformance suite for every resource and adaptor of the engine (rmm's typed tests): the
// contract of resource.hpp, checked on the simulated device with real bytes behind every
// buffer, so an overlap corrupts a pattern and an unordered reuse across streams is a device
// violation. Each factory below is one TEMPLATE_TEST_CASE type.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"
#include "small_cache.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// The sizes most tests allocate, in this order: tiny, around the 512 B granule, around the
// 1 MiB small/large line, and large.
const std::vector<std::uint64_t> kSizes = {1, 100, 512, 513, 4096, 70000, 1 * MiB, 1 * MiB + 1, 3 * MiB, 12 * MiB};

PoolOptions inline_pool_options() {
  PoolOptions o;
  o.synchronous_planning = true;
  o.plan_time_limit_seconds = 0.02;
  return o;
}

// A window in which the kSizes buffers are allocated in order and all live together: a planned
// pool given it at a boundary serves the next kSizes allocations (in order) from its pool.
Boundary sizes_window() {
  auto window = std::make_shared<IterationWindow>();
  const std::uint64_t n = kSizes.size();
  window->period = 2 * n;
  window->problem.time_horizon = 2 * n;
  for (std::uint64_t i = 0; i < n; ++i) {
    WindowEntry e;
    e.size = kSizes[i];
    e.alloc_tick = i;
    e.free_tick = n + i;
    e.pooled = true;
    e.problem_index = i;
    e.slots = 1;
    window->entries.push_back(e);
    memtool::trace::BufferRequest request;
    request.id = i;
    request.size = kSizes[i];
    request.alignment = 512;
    request.intervals.push_back({i, n + i});
    window->problem.buffers.push_back(request);
  }
  Boundary b;
  b.tick = 2 * n;
  b.period = 2 * n;
  b.window = window;
  return b;
}

// --- the factories (one per resource or adaptor configuration) ---------------------------------
// counts: memory_use() reports reserved and in-use bytes (the plain device resource does not).
// sub_allocates: extent_of answers for its buffers (it hands out parts of larger allocations).
// releases_idle: reclaim() gives back every byte no live buffer uses.
struct DeviceFactory {
  static constexpr const char* kName = "device";
  static constexpr bool kCounts = false, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return make_device_resource(d); }
};
struct CountingDeviceFactory {
  static constexpr bool kCounts = true, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return make_device_resource(d, true); }
};
struct ObservingPoolFactory {  // a planned pool before any plan: everything passes through
  static constexpr bool kCounts = true, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_planned_pool(d, make_device_resource(d), inline_pool_options(), nullptr);
  }
};
struct ApplyingPoolFactory {  // a planned pool serving the kSizes allocations from its plan
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = false;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    auto pool = make_planned_pool(d, make_device_resource(d), inline_pool_options(), nullptr);
    pool->on_boundary(sizes_window());
    return pool;
  }
};
struct FailOpenFactory {
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = false;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_fail_open(ApplyingPoolFactory::make(d), make_device_resource(d));
  }
};
struct StatisticsFactory {
  static constexpr bool kCounts = true, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return make_statistics(make_device_resource(d, true)); }
};
struct BudgetFactory {  // a budget below the device's capacity: refusals come from it
  static constexpr bool kCounts = true, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_budget_limit(make_device_resource(d, true), 40 * MiB);
  }
};
struct CnmemFactory {
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return make_cnmem_like(d, make_device_resource(d)); }
};
struct CnmemReservedFactory {  // with cnmemInit's up-front reservation
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_cnmem_like(d, make_device_resource(d), CnmemOptions{8 * MiB});
  }
};
struct PytorchFactory {
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return make_pytorch_caching(d, make_device_resource(d)); }
};
struct PytorchMaxSplitFactory {  // PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:21
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_pytorch_caching(d, make_device_resource(d), PytorchCachingOptions{21 * MiB});
  }
};
struct PytorchOverBudgetFactory {  // an adaptor over a baseline: the budget makes it free its cache
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_budget_limit(make_statistics(make_pytorch_caching(d, make_device_resource(d))), 200 * MiB);
  }
};

// The swap strategy's cache of the small cuMemAlloc buffers (small_cache.hpp), alone: below 1 MiB
// from its PyTorch-policy cache, the rest from the driver (which answers no extent_of).
struct SmallCacheFactory {
  static constexpr bool kCounts = true, kSubAllocates = false, kReleasesIdle = true;
  static std::unique_ptr<Resource> make(SimDevice& d) { return detail::make_small_cache(d, MiB); }
};
// The swapper as MEMTOOL_STRATEGY=swap stacks it (strategy.cpp): over the small cache, buffers of
// 1 MiB and more its own. Its budget is below what kSizes keeps live (about 17 MiB asked, 20 MiB
// in 2 MiB granules, and the small cache's 2 MiB segment), so the suite's cases run with buffers
// going out to the host and coming back; the host may hold 64 MiB, so that filling the device
// ends (at the budget the swapper would else move on to the host for ever).
SwapOptions swap_options(SwapMechanism mode) {
  SwapOptions o;
  o.mode = mode;
  o.budget_bytes = 16 * MiB;
  o.host_limit_bytes = 64 * MiB;
  o.min_bytes = MiB;
  o.policy = "belady";  // no boundaries here: the rule alone decides
  return o;
}
// swaps_out: buffers may live on the host; memory_use's in_use then counts them too (below).
struct SwapExplicitFactory {
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true, kSwapsOut = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_swap(d, detail::make_small_cache(d, MiB), swap_options(SwapMechanism::explicit_copies));
  }
};
// In uvm mode the swapper's buffers are managed memory, moved by prefetches (the simulated
// device's managed memory: chunks resident on the device count, those on the host do not).
// oversubscribes: managed memory takes more than the device holds (the driver evicts to the
// host), so a request past the device is served rather than out of memory.
struct SwapUvmFactory {
  static constexpr bool kCounts = true, kSubAllocates = true, kReleasesIdle = true, kSwapsOut = true,
                        kOversubscribes = true;
  static std::unique_ptr<Resource> make(SimDevice& d) {
    return make_swap(d, detail::make_small_cache(d, MiB), swap_options(SwapMechanism::uvm));
  }
};

#define MEMTOOL_RESOURCE_FACTORIES                                                                                     \
  DeviceFactory, CountingDeviceFactory, ObservingPoolFactory, ApplyingPoolFactory, FailOpenFactory, StatisticsFactory, \
      BudgetFactory, CnmemFactory, CnmemReservedFactory, PytorchFactory, PytorchMaxSplitFactory,                       \
      PytorchOverBudgetFactory, SmallCacheFactory, SwapExplicitFactory, SwapUvmFactory

struct Buffer {
  DevicePtr ptr = 0;
  std::uint64_t size = 0;
  std::uint32_t seed = 0;
  MemoryKind kind = MemoryKind::device;
  StreamId last_stream = 0;
};

// A program and libmemtool.so's hooks together: before a kernel writes a buffer on a stream the
// resource hears of it (before_access); a use on another stream than the last writer's is
// ordered by the program's own event, as any correct program does.
template <class Factory>
struct Rig {
  explicit Rig(std::uint64_t capacity = 256 * MiB)
      : device(SimDevice::Options{capacity}), resource(Factory::make(device)) {}
  ~Rig() {
    if (resource) resource->shutdown(true);
  }

  std::optional<Buffer> alloc(std::uint64_t size, MemoryKind kind = MemoryKind::device, StreamId stream = 0) {
    Buffer b{0, size, ++next_seed, kind, stream};
    const Status status =
        resource->allocate(AllocationRequest{size, kind, kind == MemoryKind::async ? stream : 0, 0}, &b.ptr);
    if (status != kSuccess) return std::nullopt;
    live.emplace(b.ptr, b.size);
    return b;
  }
  void write(Buffer& b, StreamId stream) {
    if (b.last_stream != stream) {
      EventId e = 0;
      device.create_event(&e);
      device.record_event(e, b.last_stream);
      device.stream_wait_event(stream, e);
      device.destroy_event(e);
    }
    resource->before_access(b.ptr, stream);
    CHECK(device.access(stream, b.ptr, b.size));
    CHECK(device.fill(b.ptr, b.size, b.seed));
    b.last_stream = stream;
  }
  // A kernel reads the buffer on its last stream (announced, as the hooks do): a swapper brings
  // it back first, so bytes lost on the way out or back show here.
  bool intact(const Buffer& b) {
    resource->before_access(b.ptr, b.last_stream);
    return device.access(b.last_stream, b.ptr, b.size) && device.verify(b.ptr, b.size, b.seed);
  }
  Status release(const Buffer& b, StreamId stream = 0) {
    live.erase(b.ptr);
    return resource->deallocate(b.ptr, b.kind, stream);
  }
  bool overlaps_live(const Buffer& b) const {
    for (const auto& [ptr, size] : live) {
      if (ptr != b.ptr && ptr < b.ptr + b.size && b.ptr < ptr + size) return true;
    }
    return false;
  }

  SimDevice device;
  std::unique_ptr<Resource> resource;
  std::map<DevicePtr, std::uint64_t> live;
  std::uint32_t next_seed = 0;
};

template <class Factory>
std::vector<Buffer> alloc_sizes(Rig<Factory>& rig) {
  std::vector<Buffer> buffers;
  for (const std::uint64_t size : kSizes) {
    auto b = rig.alloc(size);
    REQUIRE(b);
    buffers.push_back(*b);
  }
  return buffers;
}

}  // namespace

TEMPLATE_TEST_CASE("conformance: aligned, distinct, non-overlapping live buffers keep their bytes",
                   "[engine][conformance]", MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  for (int round = 0; round < 3; ++round) {  // later rounds reuse what the first freed
    std::vector<Buffer> buffers = alloc_sizes(rig);
    std::set<DevicePtr> distinct;
    for (Buffer& b : buffers) {
      CHECK(b.ptr % 256 == 0);  // cudaMalloc's guarantee
      CHECK_FALSE(rig.overlaps_live(b));
      distinct.insert(b.ptr);
      rig.write(b, 0);
    }
    CHECK(distinct.size() == buffers.size());
    for (const Buffer& b : buffers) CHECK(rig.intact(b));
    for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
  }
  CHECK(rig.device.violations() == 0);
}

TEST_CASE("conformance: the applying planned pool really serves from its plan", "[engine][conformance]") {
  // The suite's planned-pool rows are only worth something if the pool serves them.
  SimDevice device;
  auto pool = ApplyingPoolFactory::make(device);
  Summary before;
  pool->summarize(before);
  REQUIRE(before.state == "apply");
  std::vector<DevicePtr> ptrs;
  for (const std::uint64_t size : kSizes) {
    DevicePtr p = 0;
    REQUIRE(pool->allocate(AllocationRequest{size}, &p) == kSuccess);
    ptrs.push_back(p);
  }
  Summary after;
  pool->summarize(after);
  CHECK(after.allocs_from_pool == kSizes.size());
  CHECK(device.allocate_calls() == 1);  // the pool itself
  for (const DevicePtr p : ptrs) CHECK(pool->deallocate(p, MemoryKind::device, 0) == kSuccess);
  pool->shutdown(true);
  CHECK(device.live_bytes() == 0);
}

TEST_CASE("conformance: the explicit swapper's row really swaps, and the bytes come back", "[engine][conformance]") {
  // The suite's swapper row is only worth something if its cases run with buffers on the host.
  Rig<SwapExplicitFactory> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  for (Buffer& b : buffers) rig.write(b, 0);
  Summary s;
  rig.resource->summarize(s);
  REQUIRE(s.swap_mode == "explicit");
  CHECK(s.bytes_swapped_out >= 4 * MiB);
  CHECK(rig.resource->memory_use().off_device > 0);
  CHECK(rig.device.live_bytes() <= 16 * MiB);
  for (const Buffer& b : buffers) CHECK(rig.intact(b));  // each read again: back first
  Summary after;
  rig.resource->summarize(after);
  CHECK(after.swap_ins_on_demand >= 1);
  CHECK(rig.device.violations() == 0);
  for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
}

TEST_CASE("conformance: the uvm swapper's row really swaps, and the bytes come back", "[engine][conformance]") {
  // The same for managed memory: prefetches move the buffers' chunks, and only those on the
  // device count there.
  Rig<SwapUvmFactory> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  for (Buffer& b : buffers) rig.write(b, 0);
  Summary s;
  rig.resource->summarize(s);
  REQUIRE(s.swap_mode == "uvm");
  CHECK(s.bytes_swapped_out >= 4 * MiB);
  CHECK(rig.resource->memory_use().off_device > 0);
  CHECK(rig.device.bytes_migrated_to_host() >= 4 * MiB);
  CHECK(rig.device.live_bytes() <= 16 * MiB);
  CHECK(rig.resource->memory_use().reserved == rig.device.live_bytes());
  for (const Buffer& b : buffers) CHECK(rig.intact(b));  // each read again: back first
  Summary after;
  rig.resource->summarize(after);
  CHECK(after.swap_ins_on_demand >= 1);
  CHECK(rig.device.bytes_migrated_to_device() >= 1 * MiB);
  CHECK(rig.device.bytes_accessed_on_host() == 0);  // every buffer was back before its kernel
  CHECK(rig.device.violations() == 0);
  for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
}

TEMPLATE_TEST_CASE("conformance: memory_use agrees with what is live and what the device holds",
                   "[engine][conformance]", MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  std::uint64_t requested = 0;
  for (const Buffer& b : buffers) requested += b.size;
  MemoryUse use = rig.resource->memory_use();
  if constexpr (TestType::kCounts) {
    CHECK(use.in_use == requested);
    // in_use is among the reserved device bytes, but for the swapper's buffers on the host, which
    // it counts in off_device as well (resource.hpp says why).
    if constexpr (requires { TestType::kSwapsOut; }) {
      CHECK(use.off_device > 0);
      CHECK(use.reserved + use.off_device >= use.in_use);
    } else {
      CHECK(use.reserved >= use.in_use);
    }
    CHECK(use.reserved == rig.device.live_bytes());
    CHECK(use.pool_reserved <= use.reserved);
  } else {
    CHECK(use.in_use <= use.reserved);
  }
  for (const Buffer& b : buffers) REQUIRE(rig.release(b) == kSuccess);
  use = rig.resource->memory_use();
  CHECK(use.in_use == 0);
  if constexpr (TestType::kCounts) CHECK(use.reserved == rig.device.live_bytes());
}

TEMPLATE_TEST_CASE("conformance: out of memory is kOutOfMemory, leaves *out alone and leaks nothing",
                   "[engine][conformance]", MEMTOOL_RESOURCE_FACTORIES) {
  constexpr std::uint64_t kCapacity = 48 * MiB;
  Rig<TestType> rig(kCapacity);
  std::vector<Buffer> buffers = alloc_sizes(rig);
  for (Buffer& b : buffers) rig.write(b, 0);
  constexpr bool kOversubscribes = requires { TestType::kOversubscribes; };
  if constexpr (kOversubscribes) {
    // Past the device, served: the driver keeps what does not fit on the host.
    auto big = rig.alloc(64 * MiB);
    REQUIRE(big);
    rig.write(*big, 0);
    CHECK(rig.intact(*big));
    CHECK(rig.device.peak_bytes() <= kCapacity);
    CHECK(rig.release(*big) == kSuccess);
  } else {
    DevicePtr out = 0xabcdef;
    CHECK(rig.resource->allocate(AllocationRequest{64 * MiB}, &out) == kOutOfMemory);
    CHECK(out == 0xabcdef);
  }
  // Nothing live was touched, and smaller requests still succeed.
  for (const Buffer& b : buffers) CHECK(rig.intact(b));
  auto small = rig.alloc(4096);
  REQUIRE(small);
  rig.write(*small, 0);
  CHECK_FALSE(rig.overlaps_live(*small));
  CHECK(rig.release(*small) == kSuccess);
  for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
  // Until the device is full (twice its size where it oversubscribes), and after freeing the
  // lot, the device has it all back.
  std::vector<Buffer> filled;
  constexpr std::size_t kOversubscribed = 2 * kCapacity / (3 * MiB);
  while (!kOversubscribes || filled.size() < kOversubscribed) {
    auto b = rig.alloc(3 * MiB);
    if (!b) break;
    filled.push_back(*b);
  }
  CHECK(filled.size() >= 8);
  if constexpr (kOversubscribes) {
    CHECK(filled.size() == kOversubscribed);
    for (Buffer& b : filled) rig.write(b, 0);
    for (const Buffer& b : filled) CHECK(rig.intact(b));
    CHECK(rig.device.peak_bytes() <= kCapacity);
  }
  for (const Buffer& b : filled) CHECK(rig.release(b) == kSuccess);
  rig.resource->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
  DevicePtr out = 0xabcdef;
  CHECK(rig.resource->allocate(AllocationRequest{0}, &out) == kInvalidValue);
}

TEMPLATE_TEST_CASE("conformance: freeing what it did not hand out is an error and harms nothing",
                   "[engine][conformance]", MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  for (Buffer& b : buffers) rig.write(b, 0);
  CHECK(rig.resource->deallocate(0xdead0000, MemoryKind::device, 0) != kSuccess);             // wild
  CHECK(rig.resource->deallocate(buffers[9].ptr + 4096, MemoryKind::device, 0) != kSuccess);  // interior
  const Buffer freed = buffers[8];
  REQUIRE(rig.release(freed) == kSuccess);
  CHECK(rig.resource->deallocate(freed.ptr, MemoryKind::device, 0) != kSuccess);  // double
  buffers.erase(buffers.begin() + 8);
  for (const Buffer& b : buffers) CHECK(rig.intact(b));
  auto again = rig.alloc(3 * MiB);
  REQUIRE(again);
  rig.write(*again, 0);
  CHECK_FALSE(rig.overlaps_live(*again));
  for (const Buffer& b : buffers) CHECK(rig.intact(b));
  CHECK(rig.release(*again) == kSuccess);
  for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
  rig.resource->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
}

TEMPLATE_TEST_CASE("conformance: reclaim gives back idle memory and says how much", "[engine][conformance]",
                   MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  const Buffer kept = buffers.back();  // 12 MiB stays live
  buffers.pop_back();
  for (const Buffer& b : buffers) REQUIRE(rig.release(b) == kSuccess);
  const std::uint64_t held = rig.device.live_bytes();
  const std::uint64_t given_back = rig.resource->reclaim();
  CHECK(rig.device.live_bytes() == held - given_back);
  if constexpr (TestType::kCounts) CHECK(rig.resource->memory_use().reserved == rig.device.live_bytes());
  // What holds the live 12 MiB: its own allocation, or (PyTorch) the 20 MiB segment it was cut from.
  if constexpr (TestType::kReleasesIdle) CHECK(rig.device.live_bytes() <= 20 * MiB);
  CHECK(rig.release(kept) == kSuccess);
  if constexpr (TestType::kReleasesIdle) {
    (void)rig.resource->reclaim();
    CHECK(rig.device.live_bytes() == 0);
  }
}

TEMPLATE_TEST_CASE("conformance: shutdown releases everything, also what was live at the time", "[engine][conformance]",
                   MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  for (Buffer& b : buffers) rig.write(b, 0);
  rig.resource->shutdown(true);
  for (const Buffer& b : buffers) CHECK(rig.intact(b));  // live buffers keep their memory
  auto after = rig.alloc(5000);                          // still served (passed through) after shutdown
  REQUIRE(after);
  rig.write(*after, 0);
  CHECK_FALSE(rig.overlaps_live(*after));
  for (const Buffer& b : buffers) CHECK(rig.release(b) == kSuccess);
  CHECK(rig.release(*after) == kSuccess);
  CHECK(rig.device.live_bytes() == 0);
  rig.resource.reset();
  CHECK(rig.device.live_bytes() == 0);
  CHECK(rig.device.live_events() == 0);
}

TEMPLATE_TEST_CASE("conformance: memory reused across streams is ordered after its earlier users",
                   "[engine][conformance][stream]", MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  for (int round = 0; round < 4; ++round) {
    // Stream-ordered: allocated and freed on stream 1; the next allocation on stream 2.
    auto x = rig.alloc(64 * KiB, MemoryKind::async, 1);
    REQUIRE(x);
    rig.write(*x, 1);
    REQUIRE(rig.release(*x, 1) == kSuccess);
    auto y = rig.alloc(64 * KiB, MemoryKind::async, 2);
    REQUIRE(y);
    rig.write(*y, 2);
    // Allocated on 2, used on 3 (ordered by the program), freed on 3; reallocated on 2.
    rig.write(*y, 3);
    REQUIRE(rig.release(*y, 3) == kSuccess);
    auto z = rig.alloc(64 * KiB, MemoryKind::async, 2);
    REQUIRE(z);
    rig.write(*z, 2);
    REQUIRE(rig.release(*z, 2) == kSuccess);
    // cuMemAlloc'ed buffers written on two streams in turn, freed; the next one on a third.
    std::vector<Buffer> buffers = alloc_sizes(rig);
    for (Buffer& b : buffers) rig.write(b, 4);
    for (Buffer& b : buffers) rig.write(b, 5);
    for (const Buffer& b : buffers) REQUIRE(rig.release(b) == kSuccess);
    auto w = rig.alloc(3 * MiB);
    REQUIRE(w);
    rig.write(*w, 6);
    CHECK(rig.intact(*w));
    REQUIRE(rig.release(*w) == kSuccess);
  }
  CHECK(rig.device.violations() == 0);
  // Once the device drained, held-back memory comes back.
  rig.device.synchronize();
  rig.resource->shutdown(true);
  CHECK(rig.device.live_bytes() == 0);
}

TEMPLATE_TEST_CASE("conformance: extent_of describes the buffer, and only while it lives", "[engine][conformance]",
                   MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::vector<Buffer> buffers = alloc_sizes(rig);
  std::set<std::uint64_t> ids;
  for (const Buffer& b : buffers) {
    const auto extent = rig.resource->extent_of(b.ptr + b.size / 2);
    if constexpr (TestType::kSubAllocates) REQUIRE(extent);
    if (!extent) continue;
    CHECK(extent->base == b.ptr);
    CHECK(extent->size == b.size);
    ids.insert(extent->id);
    // One past its end: nothing, the buffer itself (an address in its rounding, as the driver
    // answers for an allocation's padding), or another buffer that contains it.
    const DevicePtr beyond = b.ptr + b.size;
    if (const auto past = rig.resource->extent_of(beyond); past && past->base != b.ptr) {
      CHECK((past->base <= beyond && beyond - past->base < past->size));
    }
  }
  if constexpr (TestType::kSubAllocates) CHECK(ids.size() == buffers.size());
  for (const Buffer& b : buffers) REQUIRE(rig.release(b) == kSuccess);
  for (const Buffer& b : buffers) CHECK_FALSE(rig.resource->extent_of(b.ptr));
}

TEMPLATE_TEST_CASE("conformance: many threads at once", "[engine][conformance][threads]", MEMTOOL_RESOURCE_FACTORIES) {
  Rig<TestType> rig;
  std::atomic<int> broken{0};
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const StreamId stream = 100 + static_cast<StreamId>(t);
      for (int i = 0; i < 200; ++i) {
        const std::uint64_t size = kSizes[static_cast<std::size_t>(i + t) % 7];
        DevicePtr p = 0;
        if (rig.resource->allocate(AllocationRequest{size, MemoryKind::async, stream, 0}, &p) != kSuccess) {
          ++broken;
          continue;
        }
        const auto seed = static_cast<std::uint32_t>(t * 1000 + i);
        rig.resource->before_access(p, stream);
        rig.device.access(stream, p, size);
        rig.device.fill(p, size, seed);
        if (!rig.device.verify(p, size, seed)) ++broken;
        if (rig.resource->deallocate(p, MemoryKind::async, stream) != kSuccess) ++broken;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(broken == 0);
  CHECK(rig.device.violations() == 0);
}
