// cnmem-like: NVIDIA CnMem's manager as a BlockCache policy (see baselines.hpp). Facts from
// CnMem's src/cnmem.cpp: sizes rounded up to CNMEM_GRANULARITY (512 B); findBestBlockUnsafe
// takes the smallest free block that fits (the first in address order among equals);
// allocateBlockUnsafe grows the manager by one cudaMalloc of exactly the rounded request when
// none does; extractBlockUnsafe splits off any rest; releaseBlockUnsafe merges a freed block with
// its free neighbours but never across cudaMalloc boundaries (head blocks); memory goes back to
// the device only in releaseAllUnsafe.
#include <algorithm>

#include "block_cache.hpp"
#include "memtool/engine/baselines.hpp"

namespace memtool::engine {
namespace {

constexpr std::uint64_t kGranularity = 512;

class CnmemPolicy final : public detail::CachePolicy {
 public:
  explicit CnmemPolicy(CnmemOptions options) : options_(options) {}
  std::string_view name() const override { return "cnmem-like"; }
  std::uint64_t round(std::uint64_t size) const override {
    return std::max(kGranularity, (size + kGranularity - 1) / kGranularity * kGranularity);
  }
  int pool_of(std::uint64_t) const override { return 0; }
  std::uint64_t segment_size(std::uint64_t rounded) const override { return rounded; }
  bool may_take(std::uint64_t, std::uint64_t) const override { return true; }
  bool should_split(int, std::uint64_t, std::uint64_t rest) const override { return rest > 0; }
  bool frees_cache_when_full() const override { return false; }
  std::uint64_t initial_reserve() const override {
    return options_.initial_reserve_bytes == 0 ? 0 : round(options_.initial_reserve_bytes);
  }
  bool grows() const override { return options_.grows; }

 private:
  CnmemOptions options_;
};

}  // namespace

std::unique_ptr<Resource> make_cnmem_like(Device& device, std::unique_ptr<Resource> upstream, CnmemOptions options) {
  return detail::make_block_cache(device, std::move(upstream), std::make_unique<CnmemPolicy>(options));
}

}  // namespace memtool::engine
