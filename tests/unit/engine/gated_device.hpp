// SimDevice behind a gate that plays two driver situations the simulator alone does not: a stream
// waiting for a value the program writes later (Device::host_wait_may_block: host waits may
// block, counted when made anyway), and a stream whose events are refused for now
// (record_event answers kCaptureImplicit: another thread's per-thread default stream while a
// capture runs). Shared by the swap tests that need either.
#pragma once

#include <cstdint>

#include "sim_forwarding_device.hpp"

namespace memtool::engine::test {

class GatedDevice final : public SimForwardingDevice {
 public:
  using SimForwardingDevice::SimForwardingDevice;

  bool may_block = false;
  StreamId refused = 0;         // record_event on it answers kCaptureImplicit (0: none)
  int waits_while_blocked = 0;  // synchronize_event calls made while may_block

  Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    if (may_block && kind == MemoryKind::managed) ++waits_while_blocked;  // cuMemFree synchronises
    return sim.free(ptr, kind, stream);
  }
  Status record_event(EventId event, StreamId stream) override {
    if (refused != 0 && stream == refused) return kCaptureImplicit;
    return sim.record_event(event, stream);
  }
  Status synchronize_event(EventId event) override {
    if (may_block) ++waits_while_blocked;
    return sim.synchronize_event(event);
  }
  bool host_wait_may_block() override { return may_block; }
};

}  // namespace memtool::engine::test
