// The sync probe (swap/sync_probe.hpp): what a wait for the GPU costs the host beyond the GPU's
// time, the median over rounds of (back - issued - the events' elapsed time), the first round
// left out; none measured when the device cannot or a host wait may block.
#include <catch2/catch.hpp>

#include <array>
#include <deque>
#include <vector>

#include "swap/sync_probe.hpp"

using namespace memtool::engine;
using memtool::engine::detail::probe_sync_cost;
using memtool::engine::detail::sync_cost_ns;
using memtool::engine::detail::SyncSample;

namespace {

std::deque<std::uint64_t> clock_script;  // the host clock's readings, in order
std::uint64_t scripted_clock() {
  if (clock_script.empty()) return 0;  // a probe that should not have run reads a still clock
  const std::uint64_t now = clock_script.front();
  clock_script.pop_front();
  return now;
}

// Each round: the GPU's time between the two events (a script), and the calls the probe made.
class ProbeDevice final : public Device {
 public:
  explicit ProbeDevice(std::deque<double> gpu) : gpu_(std::move(gpu)) {}
  Status allocate(std::uint64_t, MemoryKind kind, StreamId stream, DevicePtr* out) override {
    if (kind != MemoryKind::async || stream != kStream) return kInvalidValue;
    *out = 0x1000;
    ++allocated;
    return kSuccess;
  }
  Status free(DevicePtr ptr, MemoryKind kind, StreamId) override {
    if (ptr == 0x1000 && kind == MemoryKind::async) --allocated;
    return kSuccess;
  }
  Status create_stream(StreamId* out) override {
    if (!streams) return kNotSupported;
    *out = kStream;
    return kSuccess;
  }
  Status destroy_stream(StreamId) override {
    ++streams_destroyed;
    return kSuccess;
  }
  Status create_event(EventId*) override { return kNotSupported; }
  Status create_timing_event(EventId* out) override {
    *out = ++events;
    return kSuccess;
  }
  Status record_event(EventId, StreamId stream) override { return stream == kStream ? kSuccess : kInvalidValue; }
  Status stream_wait_event(StreamId, EventId) override { return kSuccess; }
  bool event_completed(EventId) override { return true; }
  void destroy_event(EventId) override { --events; }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId) override {
    copies += dst == src + 1 && bytes == 1 ? 1 : 0;
    return kSuccess;
  }
  Status synchronize_event(EventId) override { return kSuccess; }
  Status elapsed_ns(EventId, EventId, double* out) override {
    *out = gpu_.empty() ? 0 : gpu_.front();
    if (!gpu_.empty()) gpu_.pop_front();
    return kSuccess;
  }
  bool host_wait_may_block() override { return blocked; }

  static constexpr StreamId kStream = 77;
  bool streams = true;
  bool blocked = false;
  int allocated = 0;
  int events = 0;
  int copies = 0;
  int streams_destroyed = 0;

 private:
  std::deque<double> gpu_;
};

}  // namespace

TEST_CASE("sync probe: the median of what the host waited beyond the GPU's time", "[engine][swap][sync_probe]") {
  CHECK_FALSE(sync_cost_ns({}).has_value());
  // Waits of 100, 50, 500 ns beyond the GPU: the median is 100.
  const std::array<SyncSample, 3> odd{{{1000, 1300, 200}, {2000, 2060, 10}, {5000, 6000, 500}}};
  CHECK(sync_cost_ns(odd) == 100);
  // Even: the mean of the two middle ones; a GPU time past the wait counts 0, not less.
  const std::array<SyncSample, 4> even{{{0, 100, 0}, {0, 40, 0}, {0, 50, 80}, {0, 300, 0}}};
  CHECK(sync_cost_ns(even) == Approx(70));
}

TEST_CASE("sync probe: rounds on a private stream, the first left out, everything given back",
          "[engine][swap][sync_probe]") {
  // Three rounds counted after the warm-up: (issued, back) host readings and the GPU's times.
  ProbeDevice device({999, 20, 30, 40});
  clock_script = {0, 100'000, 1000, 1250, 2000, 2100, 3000, 3400};
  const std::optional<double> cost = probe_sync_cost(device, &scripted_clock, 3);
  REQUIRE(cost.has_value());
  CHECK(*cost == 230);  // 230, 70, 360 beyond the GPU: the warm-up's 99'001 left out
  CHECK(clock_script.empty());
  CHECK(device.copies == 4);
  CHECK(device.allocated == 0);
  CHECK(device.events == 0);
  CHECK(device.streams_destroyed == 1);
}

TEST_CASE("sync probe: none where a host wait may block or there is no stream", "[engine][swap][sync_probe]") {
  ProbeDevice blocked({});
  blocked.blocked = true;
  CHECK_FALSE(probe_sync_cost(blocked, &scripted_clock, 3).has_value());
  CHECK(blocked.events == 0);
  CHECK(blocked.copies == 0);
  ProbeDevice streamless({});
  streamless.streams = false;
  CHECK_FALSE(probe_sync_cost(streamless, &scripted_clock, 3).has_value());
  CHECK(streamless.events == 0);
}
