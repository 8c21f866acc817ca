// simulate_baselines: one iteration's buffers, in planner::allocation_sequence's order, replayed
// against each baseline resource on its own simulated device (see baselines.hpp).
//
// CnMem is used as it is configured in practice (and as the SmartPool paper compares with it):
// one slab reserved by cnmemInit, no growth (CNMEM_FLAGS_CANNOT_GROW). Its figure is the
// smallest slab that serves the iteration, found by bisection at CnMem's 512 B granularity, as
// the driver rounds that one allocation (so, above 2 MiB, a whole number of 2 MiB pages).
#include <algorithm>
#include <vector>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"
#include "memtool/planner/allocation_sequence.hpp"

namespace memtool::engine {
namespace {

using Sequence = std::vector<planner::AllocationEvent>;

SimDevice::Options unlimited_device() {
  SimDevice::Options options;
  options.capacity = ~std::uint64_t{0};
  options.driver_granularity = true;
  return options;
}

// Replays the sequence against `resource`; false at the first allocation it refuses.
bool replay(Resource& resource, const Sequence& sequence, std::size_t buffers) {
  std::vector<DevicePtr> address(buffers, 0);
  for (const auto& e : sequence) {
    if (e.allocate) {
      if (resource.allocate(AllocationRequest{e.size}, &address[e.buffer]) != kSuccess) return false;
    } else if (address[e.buffer] != 0) {
      (void)resource.deallocate(address[e.buffer], MemoryKind::device, 0);
      address[e.buffer] = 0;
    }
  }
  return true;
}

std::uint64_t peak_of(std::string_view baseline, const Sequence& sequence, std::size_t buffers) {
  SimDevice device(unlimited_device());
  {
    const auto resource = make_baseline(baseline, device);
    (void)replay(*resource, sequence, buffers);
  }
  return device.peak_bytes();
}

bool slab_serves(std::uint64_t slab, const Sequence& sequence, std::size_t buffers) {
  SimDevice device(unlimited_device());
  const auto cnmem = make_cnmem_like(device, make_device_resource(device), CnmemOptions{slab, false});
  return replay(*cnmem, sequence, buffers);
}

// The smallest slab in [low, high] (multiples of `step` above `low`) that serves the sequence,
// `high` serving. Slabs are rarely much larger than the live peak (`low`): gallop up from it,
// then bisect the last stride.
std::uint64_t smallest_slab(std::uint64_t low, std::uint64_t high, std::uint64_t step, const Sequence& sequence,
                            std::size_t buffers) {
  for (std::uint64_t stride = 0; low < high;) {
    const std::uint64_t probe = std::min(high, low + stride * step);
    if (slab_serves(probe, sequence, buffers)) {
      high = probe;
      break;
    }
    low = probe + step;
    stride = stride == 0 ? 1 : 2 * stride;
  }
  while (low < high) {
    const std::uint64_t middle = low + (high - low) / 2 / step * step;
    if (slab_serves(middle, sequence, buffers)) {
      high = middle;
    } else {
      low = middle + step;
    }
  }
  return high;
}

std::uint64_t cnmem_slab_peak(const Sequence& sequence, std::size_t buffers) {
  constexpr std::uint64_t kGranule = 512;                  // CnMem's
  constexpr std::uint64_t kPage = std::uint64_t{2} << 20;  // the driver's, for the slab
  const auto granules = [](std::uint64_t size) { return (size + kGranule - 1) / kGranule * kGranule; };
  std::uint64_t live = 0;
  std::uint64_t live_peak = 0;  // no slab below the most rounded bytes live at once serves
  std::uint64_t total = 0;      // a slab of every request side by side does
  std::vector<std::uint64_t> held(buffers, 0);
  for (const auto& e : sequence) {
    if (e.allocate) {
      held[e.buffer] = granules(e.size);
      live += held[e.buffer];
      total += held[e.buffer];
      live_peak = std::max(live_peak, live);
    } else {
      live -= held[e.buffer];
      held[e.buffer] = 0;
    }
  }
  if (total == 0) return 0;
  // The driver maps the slab in 2 MiB pages, so search those first; below 2 MiB, CnMem's granule.
  const auto pages = [](std::uint64_t size) { return (size + kPage - 1) / kPage * kPage; };
  const std::uint64_t slab = smallest_slab(pages(live_peak), pages(total), kPage, sequence, buffers);
  if (slab > kPage) return slab;
  return SimDevice::driver_footprint(smallest_slab(live_peak, std::min(total, slab), kGranule, sequence, buffers));
}

}  // namespace

std::vector<BaselineResult> simulate_baselines(const trace::Problem& problem) {
  // The names `memtool plan` and the exports have always shown.
  const Sequence sequence = planner::allocation_sequence(problem);
  const std::size_t buffers = problem.buffers.size();
  return {{"cudaMalloc", peak_of("cuda-malloc", sequence, buffers)},
          {"cnmem", cnmem_slab_peak(sequence, buffers)},
          {"pytorch", peak_of("pytorch-caching", sequence, buffers)}};
}

}  // namespace memtool::engine
