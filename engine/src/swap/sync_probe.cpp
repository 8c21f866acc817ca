// The sync probe (sync_probe.hpp).
#include "swap/sync_probe.hpp"

#include <algorithm>
#include <vector>

namespace memtool::engine::detail {

std::optional<SyncCost> sync_cost_ns(std::span<const SyncSample> samples) {
  std::vector<double> costs;
  costs.reserve(samples.size());
  for (const SyncSample& s : samples) {
    const double waited = s.back_ns > s.issued_ns ? static_cast<double>(s.back_ns - s.issued_ns) : 0.0;
    costs.push_back(std::max(0.0, waited - std::max(0.0, s.gpu_ns)));
  }
  return median_cost(std::move(costs));
}

std::optional<SyncCost> median_cost(std::vector<double> costs) {
  if (costs.empty()) return std::nullopt;
  std::sort(costs.begin(), costs.end());
  const std::size_t half = costs.size() / 2;
  SyncCost cost;
  cost.median_ns = costs.size() % 2 != 0 ? costs[half] : (costs[half - 1] + costs[half]) / 2;
  cost.low_ns = costs.front();
  cost.high_ns = costs.back();
  return cost;
}

std::optional<SyncCost> probe_sync_cost(Device& device, HostCostMeter::Clock clock, std::uint32_t rounds) {
  if (rounds == 0 || device.host_wait_may_block()) return std::nullopt;
  // The events first: a device that cannot time them (SimDevice, old drivers) is left untouched.
  EventId begin = 0;
  EventId end = 0;
  const bool have_begin = device.create_timing_event(&begin) == kSuccess;
  const bool have_end = have_begin && device.create_timing_event(&end) == kSuccess;
  StreamId stream = 0;
  const bool have_stream = have_end && device.create_stream(&stream) == kSuccess;
  bool ok = have_stream;
  std::vector<SyncSample> samples;
  // A round whose events completed before the host came to wait for them measured no wait: not
  // counted, and another is tried, up to a few times the rounds asked for.
  for (std::uint32_t r = 0; ok && samples.size() < rounds && r <= rounds * kSyncProbeTries; ++r) {
    ok = device.record_event(begin, stream) == kSuccess && device.record_event(end, stream) == kSuccess;
    if (!ok) break;
    SyncSample sample;
    sample.issued_ns = clock();
    const bool waits = !device.event_completed(end);
    ok = device.synchronize_event(end) == kSuccess;
    sample.back_ns = clock();
    ok = ok && device.elapsed_ns(begin, end, &sample.gpu_ns) == kSuccess;
    if (ok && waits && r != 0) samples.push_back(sample);  // the first warms the stream up
  }
  if (have_end) device.destroy_event(end);
  if (have_begin) device.destroy_event(begin);
  if (have_stream) (void)device.destroy_stream(stream);
  if (!ok) return std::nullopt;
  return sync_cost_ns(samples);
}

}  // namespace memtool::engine::detail
