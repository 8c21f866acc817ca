// The sync probe (sync_probe.hpp).
#include "swap/sync_probe.hpp"

#include <algorithm>
#include <vector>

namespace memtool::engine::detail {

std::optional<double> sync_cost_ns(std::span<const SyncSample> samples) {
  if (samples.empty()) return std::nullopt;
  std::vector<double> costs;
  costs.reserve(samples.size());
  for (const SyncSample& s : samples) {
    const double waited = s.back_ns > s.issued_ns ? static_cast<double>(s.back_ns - s.issued_ns) : 0.0;
    costs.push_back(std::max(0.0, waited - std::max(0.0, s.gpu_ns)));
  }
  const auto mid = costs.begin() + static_cast<std::ptrdiff_t>(costs.size() / 2);
  std::nth_element(costs.begin(), mid, costs.end());
  if (costs.size() % 2 != 0) return *mid;
  return (*mid + *std::max_element(costs.begin(), mid)) / 2;
}

std::optional<double> probe_sync_cost(Device& device, HostCostMeter::Clock clock, std::uint32_t rounds) {
  if (rounds == 0 || device.host_wait_may_block()) return std::nullopt;
  StreamId stream = 0;
  if (device.create_stream(&stream) != kSuccess) return std::nullopt;
  // Two bytes, stream-ordered (a plain free would synchronise the whole device): the copy's
  // source and destination. Without them the events alone are timed.
  DevicePtr scratch = 0;
  const bool copies = device.allocate(2, MemoryKind::async, stream, &scratch) == kSuccess;
  EventId begin = 0;
  EventId end = 0;
  const bool have_begin = device.create_timing_event(&begin) == kSuccess;
  const bool have_end = have_begin && device.create_timing_event(&end) == kSuccess;
  bool ok = have_end;
  std::vector<SyncSample> samples;
  for (std::uint32_t r = 0; ok && r <= rounds; ++r) {
    ok = device.record_event(begin, stream) == kSuccess &&
         (!copies || device.copy_device(scratch + 1, scratch, 1, stream) == kSuccess) &&
         device.record_event(end, stream) == kSuccess;
    if (!ok) break;
    SyncSample sample;
    sample.issued_ns = clock();
    ok = device.synchronize_event(end) == kSuccess;
    sample.back_ns = clock();
    ok = ok && device.elapsed_ns(begin, end, &sample.gpu_ns) == kSuccess;
    if (ok && r != 0) samples.push_back(sample);  // the first warms the stream up
  }
  if (have_end) device.destroy_event(end);
  if (have_begin) device.destroy_event(begin);
  if (copies) (void)device.free(scratch, MemoryKind::async, stream);
  (void)device.destroy_stream(stream);
  if (!ok) return std::nullopt;
  return sync_cost_ns(samples);
}

}  // namespace memtool::engine::detail
