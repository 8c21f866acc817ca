// simulate_baselines: one iteration's buffers, in planner::allocation_sequence's order, replayed
// against each baseline resource on its own simulated device (see baselines.hpp).
//
// CnMem is used as it is configured in practice (and as the SmartPool paper compares with it):
// one slab reserved by cnmemInit, no growth (CNMEM_FLAGS_CANNOT_GROW). Its figure is the
// smallest slab that serves the iteration, found by bisection at CnMem's 512 B granularity, as
// the driver rounds that one allocation.
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

std::uint64_t cnmem_slab_peak(const Sequence& sequence, std::size_t buffers) {
  constexpr std::uint64_t kGranule = 512;
  std::uint64_t low = kGranule;  // every slab below `low` fails
  std::uint64_t high = 0;        // this slab serves: the sum of every request, each on its own
  for (const auto& e : sequence) {
    if (e.allocate) high += (e.size + kGranule - 1) / kGranule * kGranule;
  }
  if (high == 0) return 0;
  while (low < high) {
    const std::uint64_t middle = low + (high - low) / 2 / kGranule * kGranule;
    if (slab_serves(middle, sequence, buffers)) {
      high = middle;
    } else {
      low = middle + kGranule;
    }
  }
  return SimDevice::driver_footprint(high);
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
