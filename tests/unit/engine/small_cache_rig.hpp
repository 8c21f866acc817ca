// The swap strategy's small-block cache (small_cache.hpp) over a test's device, with the two
// things its tests do: allocate through the cache, and run a kernel on a block (the cache told
// first, as the swapper tells it, then the access counted by the simulator's vector clocks).
// The device is the simulator itself or one that forwards to it (SimForwardingDevice).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "memtool/engine/sim_device.hpp"
#include "sim_forwarding_device.hpp"
#include "small_cache.hpp"

namespace memtool::engine::test {

// The simulator that counts a device's accesses.
inline SimDevice& simulator_of(SimDevice& device) { return device; }
inline SimDevice& simulator_of(SimForwardingDevice& device) { return device.sim; }

template <class TestDevice>
struct SmallCacheRig {
  static constexpr std::uint64_t kCachedBelow = std::uint64_t{1} << 20;  // smaller requests are the cache's

  TestDevice device;
  std::unique_ptr<Resource> cache;

  explicit SmallCacheRig(std::uint64_t capacity = SimForwardingDevice::kDefaultCapacity)
      : device(built(capacity)), cache(detail::make_small_cache(device, kCachedBelow)) {}

  DevicePtr alloc(std::uint64_t size, MemoryKind kind = MemoryKind::device, StreamId stream = 0) {
    DevicePtr ptr = 0;
    REQUIRE(cache->allocate(AllocationRequest{size, kind, stream, 0}, &ptr) == kSuccess);
    return ptr;
  }
  void kernel(DevicePtr ptr, std::uint64_t size, StreamId stream) {
    const DevicePtr bases[] = {ptr};
    cache->before_work(bases, stream);
    REQUIRE(simulator_of(device).access(stream, ptr, size));
  }

 private:
  static TestDevice built(std::uint64_t capacity) {
    if constexpr (std::is_same_v<TestDevice, SimDevice>) {
      return SimDevice{SimDevice::Options{capacity}};
    } else {
      return TestDevice{capacity};
    }
  }
};

}  // namespace memtool::engine::test
