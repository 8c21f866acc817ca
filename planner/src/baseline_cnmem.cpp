// A CnMem-like best-fit pool (see baselines.hpp). Free blocks are kept twice: by (size, address)
// for best fit and by address for coalescing; the pool grows at its top when nothing fits (a
// free block touching the top is extended rather than left behind), and the top's high-water
// mark is the slab CnMem would have needed.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "memtool/planner/baselines.hpp"

namespace memtool::planner {

namespace {
constexpr std::uint64_t kGranule = 512;  // CNMEM_GRANULARITY
}

std::uint64_t simulate_cnmem(const std::vector<AllocationEvent>& events) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> by_size;  // (size, address)
  std::map<std::uint64_t, std::uint64_t> by_address;          // address -> size
  std::unordered_map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> used;  // buffer -> (address, size)
  std::uint64_t top = 0;
  std::uint64_t peak = 0;
  auto remove_free = [&](std::map<std::uint64_t, std::uint64_t>::iterator it) {
    by_size.erase({it->second, it->first});
    return by_address.erase(it);
  };
  auto add_free = [&](std::uint64_t address, std::uint64_t size) {
    by_address.emplace(address, size);
    by_size.emplace(size, address);
  };
  for (const auto& e : events) {
    if (e.allocate) {
      const std::uint64_t size = std::max(kGranule, (e.size + kGranule - 1) / kGranule * kGranule);
      std::uint64_t address = 0;
      auto fit = by_size.lower_bound({size, 0});
      if (fit != by_size.end()) {
        const auto [block_size, block_address] = *fit;
        remove_free(by_address.find(block_address));
        address = block_address;
        if (block_size > size) add_free(address + size, block_size - size);
      } else if (!by_address.empty() && std::prev(by_address.end())->first + std::prev(by_address.end())->second == top) {
        auto last = std::prev(by_address.end());  // extend the free block at the top
        address = last->first;
        remove_free(last);
        top = address + size;
      } else {
        address = top;
        top += size;
      }
      peak = std::max(peak, top);
      used[e.buffer] = {address, size};
    } else {
      auto found = used.find(e.buffer);
      if (found == used.end()) continue;
      auto [address, size] = found->second;
      used.erase(found);
      auto next = by_address.lower_bound(address);
      if (next != by_address.end() && address + size == next->first) {
        size += next->second;
        next = remove_free(next);
      }
      if (next != by_address.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == address) {
          address = prev->first;
          size += prev->second;
          remove_free(prev);
        }
      }
      add_free(address, size);
    }
  }
  return peak;
}

}  // namespace memtool::planner
