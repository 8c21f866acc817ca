// SimDevice behind a gate that plays two driver situations the simulator alone does not: a stream
// waiting for a value the program writes later (Device::host_wait_may_block: host waits may
// block, counted when made anyway), and a stream whose events are refused for now
// (record_event answers kCaptureImplicit: another thread's per-thread default stream while a
// capture runs). Shared by the swap tests that need either.
#pragma once

#include <cstdint>

#include "memtool/engine/sim_device.hpp"

namespace memtool::engine::test {

class GatedDevice final : public Device {
 public:
  static constexpr std::uint64_t kDefaultCapacity = std::uint64_t{64} << 20;
  explicit GatedDevice(std::uint64_t capacity = kDefaultCapacity) : sim(SimDevice::Options{capacity}) {}

  SimDevice sim;
  bool may_block = false;
  StreamId refused = 0;         // record_event on it answers kCaptureImplicit (0: none)
  int waits_while_blocked = 0;  // synchronize_event calls made while may_block

  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) override {
    return sim.allocate(size, kind, stream, out);
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    if (may_block && kind == MemoryKind::managed) ++waits_while_blocked;  // cuMemFree synchronises
    return sim.free(ptr, kind, stream);
  }
  Status create_event(EventId* out) override { return sim.create_event(out); }
  Status record_event(EventId event, StreamId stream) override {
    if (refused != 0 && stream == refused) return kCaptureImplicit;
    return sim.record_event(event, stream);
  }
  Status stream_wait_event(StreamId stream, EventId event) override { return sim.stream_wait_event(stream, event); }
  bool event_completed(EventId event) override { return sim.event_completed(event); }
  void destroy_event(EventId event) override { sim.destroy_event(event); }
  Status synchronize_event(EventId event) override {
    if (may_block) ++waits_while_blocked;
    return sim.synchronize_event(event);
  }
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
  bool host_wait_may_block() override { return may_block; }
};

}  // namespace memtool::engine::test
