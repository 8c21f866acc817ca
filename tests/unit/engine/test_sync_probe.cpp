// The sync probe (swap/sync_probe.hpp): what a wait for the GPU costs the host beyond the GPU's
// time, the median over rounds of (back - issued - the events' elapsed time), the first round
// and those that did not wait left out; none measured when no round waits, the device cannot or
// a host wait may block.
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
  explicit ProbeDevice(std::deque<double> gpu, std::deque<bool> done = {})
      : gpu_(std::move(gpu)), done_(std::move(done)) {}
  Status allocate(std::uint64_t, MemoryKind, StreamId, DevicePtr*) override {
    ++allocated;
    return kSuccess;
  }
  Status free(DevicePtr, MemoryKind, StreamId) override { return kSuccess; }
  Status create_stream(StreamId* out) override {
    if (!streams) return kNotSupported;
    ++streams_created;
    *out = kStream;
    return kSuccess;
  }
  Status destroy_stream(StreamId) override {
    ++streams_destroyed;
    return kSuccess;
  }
  Status create_event(EventId*) override { return kNotSupported; }
  Status create_timing_event(EventId* out) override {
    if (!timing) return kNotSupported;
    *out = ++events;
    return kSuccess;
  }
  Status record_event(EventId, StreamId stream) override {
    if (stream != kStream) return kInvalidValue;
    ++records;
    return kSuccess;
  }
  Status stream_wait_event(StreamId, EventId) override { return kSuccess; }
  // Whether the round's events had completed when the host came to wait (scripted; then no).
  bool event_completed(EventId) override {
    if (done_.empty()) return always_done;
    const bool done = done_.front();
    done_.pop_front();
    return done;
  }
  void destroy_event(EventId) override { --events; }
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
  bool always_done = false;
  bool timing = true;
  int streams_created = 0;
  int allocated = 0;
  int events = 0;
  int records = 0;
  int streams_destroyed = 0;

 private:
  std::deque<double> gpu_;
  std::deque<bool> done_;
};

}  // namespace

TEST_CASE("sync probe: the median of what the host waited beyond the GPU's time", "[engine][swap][sync_probe]") {
  CHECK_FALSE(sync_cost_ns({}).has_value());
  // Waits of 100, 50, 500 ns beyond the GPU: the median is 100.
  const std::array<SyncSample, 3> odd{{{1000, 1300, 200}, {2000, 2060, 10}, {5000, 6000, 500}}};
  CHECK(sync_cost_ns(odd)->median_ns == 100);
  CHECK(sync_cost_ns(odd)->low_ns == 50);
  CHECK(sync_cost_ns(odd)->high_ns == 500);
  // Even: the mean of the two middle ones; a GPU time past the wait counts 0, not less.
  const std::array<SyncSample, 4> even{{{0, 100, 0}, {0, 40, 0}, {0, 50, 80}, {0, 300, 0}}};
  CHECK(sync_cost_ns(even)->median_ns == Approx(70));
  CHECK(sync_cost_ns(even)->low_ns == 0);
}

TEST_CASE("sync probe: rounds on a private stream, the first and those without a wait left out",
          "[engine][swap][sync_probe]") {
  // Three rounds counted after the warm-up: (issued, back) host readings and the GPU's times.
  // The warm-up, a round whose events had completed before the host waited, then three counted.
  ProbeDevice device({999, 5, 20, 30, 40}, {false, true, false, false, false});
  clock_script = {0, 100'000, 500, 520, 1000, 1250, 2000, 2100, 3000, 3400};
  const auto cost = probe_sync_cost(device, &scripted_clock, 3);
  REQUIRE(cost.has_value());
  // 230, 70 and 360 beyond the GPU: the warm-up's 99'001 and the unwaited round's 15 left out.
  CHECK(cost->median_ns == 230);
  CHECK(cost->low_ns == 70);
  CHECK(cost->high_ns == 360);
  CHECK(clock_script.empty());
  CHECK(device.records == 10);   // two a round on the private stream
  CHECK(device.allocated == 0);  // no memory
  CHECK(device.events == 0);
  CHECK(device.streams_destroyed == 1);
}

TEST_CASE("sync probe: none where no round waits, a host wait may block or there is no stream",
          "[engine][swap][sync_probe]") {
  ProbeDevice quick({});
  quick.always_done = true;
  clock_script.clear();
  CHECK_FALSE(probe_sync_cost(quick, &scripted_clock, 3).has_value());
  CHECK(quick.records == 2 * (1 + 3 * 4));  // the warm-up and 4 tries per round counted, then it gives up
  CHECK(quick.events == 0);
  ProbeDevice blocked({});
  blocked.blocked = true;
  CHECK_FALSE(probe_sync_cost(blocked, &scripted_clock, 3).has_value());
  CHECK(blocked.events == 0);
  CHECK(blocked.records == 0);
  ProbeDevice streamless({});
  streamless.streams = false;
  CHECK_FALSE(probe_sync_cost(streamless, &scripted_clock, 3).has_value());
  CHECK(streamless.events == 0);
  CHECK(streamless.streams_destroyed == 0);
  ProbeDevice untimed({});  // events without timestamps (the simulated device): left untouched
  untimed.timing = false;
  CHECK_FALSE(probe_sync_cost(untimed, &scripted_clock, 3).has_value());
  CHECK(untimed.streams_created == 0);
  CHECK(blocked.streams_destroyed == 0);
}

TEST_CASE("sync probe at the program's waits: a round after every few waits, up to a cap, their median",
          "[engine][swap][sync_probe]") {
  using memtool::engine::detail::kWaitsProbeRounds;
  using memtool::engine::detail::kWaitsProbeStride;
  using memtool::engine::detail::WaitsProbe;
  // Each round: the warm-up, then one counted (a private stream each time).
  ProbeDevice device({0, 10, 0, 20, 0, 30});
  clock_script = {0, 0, 0, 1000, 0, 0, 0, 520, 0, 0, 0, 3030};
  WaitsProbe probe(&scripted_clock);
  CHECK_FALSE(probe.cost().has_value());
  for (std::uint32_t wait = 0; wait < 2 * kWaitsProbeStride + 1; ++wait) probe.after_wait(device);
  REQUIRE(probe.rounds() == 3);  // after waits 0, kWaitsProbeStride and twice that
  CHECK(clock_script.empty());
  CHECK(probe.cost()->median_ns == 990);
  CHECK(probe.cost()->low_ns == 500);
  CHECK(probe.cost()->high_ns == 3000);
  CHECK(device.streams_created == 3);
  CHECK(device.streams_destroyed == 3);
  CHECK(device.events == 0);
  // No more than kWaitsProbeRounds, however many waits.
  for (std::uint32_t wait = 0; wait < 4 * kWaitsProbeRounds * kWaitsProbeStride; ++wait) probe.after_wait(device);
  CHECK(probe.rounds() == kWaitsProbeRounds);
  // None while a host wait may block.
  ProbeDevice blocked({});
  blocked.blocked = true;
  WaitsProbe none(&scripted_clock);
  for (std::uint32_t wait = 0; wait < 2 * kWaitsProbeStride; ++wait) none.after_wait(blocked);
  CHECK(none.rounds() == 0);
  CHECK(blocked.records == 0);
}
