// A Device that forwards every call to a SimDevice it holds (`sim`), for the engine tests that
// play one driver behaviour the simulator alone does not: each overrides only that (a gate on
// host waits, slow copies, a log of copies) and keeps the simulator's checks (sim.violations()).
#pragma once

#include <cstdint>

#include "memtool/engine/sim_device.hpp"

namespace memtool::engine::test {

class SimForwardingDevice : public Device {
 public:
  static constexpr std::uint64_t kDefaultCapacity = std::uint64_t{64} << 20;
  explicit SimForwardingDevice(std::uint64_t capacity = kDefaultCapacity) : sim(SimDevice::Options{capacity}) {}

  SimDevice sim;

  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) override {
    return sim.allocate(size, kind, stream, out);
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override { return sim.free(ptr, kind, stream); }
  Status create_event(EventId* out) override { return sim.create_event(out); }
  Status record_event(EventId event, StreamId stream) override { return sim.record_event(event, stream); }
  Status stream_wait_event(StreamId stream, EventId event) override { return sim.stream_wait_event(stream, event); }
  bool event_completed(EventId event) override { return sim.event_completed(event); }
  void destroy_event(EventId event) override { sim.destroy_event(event); }
  Status synchronize_event(EventId event) override { return sim.synchronize_event(event); }
  Status create_stream(StreamId* out) override { return sim.create_stream(out); }
  Status allocate_managed(std::uint64_t bytes, DevicePtr* out) override { return sim.allocate_managed(bytes, out); }
  Status advise(DevicePtr ptr, std::uint64_t bytes, Residence preferred) override {
    return sim.advise(ptr, bytes, preferred);
  }
  Status prefetch(DevicePtr ptr, std::uint64_t bytes, Residence to, StreamId stream) override {
    return sim.prefetch(ptr, bytes, to, stream);
  }
  Status vmm_granularity(std::uint64_t* bytes) override { return sim.vmm_granularity(bytes); }
  Status host_vmm_granularity(std::uint64_t* bytes) override { return sim.host_vmm_granularity(bytes); }
  Status reserve(std::uint64_t bytes, DevicePtr* out) override { return sim.reserve(bytes, out); }
  Status unreserve(DevicePtr ptr, std::uint64_t bytes) override { return sim.unreserve(ptr, bytes); }
  Status create_physical(std::uint64_t bytes, PhysicalHandle* out) override { return sim.create_physical(bytes, out); }
  Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) override {
    return sim.create_host_physical(bytes, out);
  }
  Status release_physical(PhysicalHandle handle) override { return sim.release_physical(handle); }
  Status map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) override { return sim.map(ptr, bytes, handle); }
  Status unmap(DevicePtr ptr, std::uint64_t bytes) override { return sim.unmap(ptr, bytes); }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    return sim.copy_device(dst, src, bytes, stream);
  }
  Status copy_to_host(void* dst, DevicePtr src, std::uint64_t bytes, StreamId stream) override {
    return sim.copy_to_host(dst, src, bytes, stream);
  }
};

}  // namespace memtool::engine::test
