// Plain cudaMalloc: one driver allocation per buffer, rounded as baselines.hpp describes.
#include <algorithm>
#include <unordered_map>

#include "memtool/planner/baselines.hpp"

namespace memtool::planner {

namespace {
constexpr std::uint64_t kPage = std::uint64_t{2} << 20;
constexpr std::uint64_t kSmallGranule = 512;

std::uint64_t driver_bytes(std::uint64_t size) {
  if (size > (std::uint64_t{1} << 20)) return (size + kPage - 1) / kPage * kPage;
  return std::max<std::uint64_t>(kSmallGranule, (size + kSmallGranule - 1) / kSmallGranule * kSmallGranule);
}
}  // namespace

std::uint64_t simulate_cuda_malloc(const std::vector<AllocationEvent>& events) {
  std::unordered_map<std::uint32_t, std::uint64_t> live;  // buffer -> bytes held
  std::uint64_t reserved = 0;
  std::uint64_t peak = 0;
  for (const auto& e : events) {
    if (e.allocate) {
      const std::uint64_t bytes = driver_bytes(e.size);
      live[e.buffer] = bytes;
      reserved += bytes;
      peak = std::max(peak, reserved);
    } else if (auto it = live.find(e.buffer); it != live.end()) {
      reserved -= it->second;
      live.erase(it);
    }
  }
  return peak;
}

}  // namespace memtool::planner
