// pytorch-caching: PyTorch's CUDA caching allocator as a BlockCache policy (see baselines.hpp).
// Facts from c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator): round_size rounds up to
// kMinBlockSize (512 B); get_pool sends sizes up to kSmallSize (1 MiB) to the small pool;
// get_allocation_size makes kSmallBuffer (2 MiB) segments for it, kLargeBuffer (20 MiB) ones for
// requests under kMinLargeAlloc (10 MiB) and the request rounded up to kRoundLarge (2 MiB)
// beyond; get_free_block's best fit by (stream, size, address) refuses, with max_split_size set,
// an oversize block for a request under it and a block 20 MiB or more too large for one over
// it; should_split keeps a small rest of at least 512 B and a large rest of more than 1 MiB (for
// requests under max_split_size); malloc, when cudaMalloc fails, frees oversize cached blocks
// (release_available_cached_blocks), then all whole cached segments (release_cached_blocks), and
// retries. Left out: roundup_power2_divisions, expandable segments, the garbage collection
// threshold, the memory fraction, CUDA graph pools.
#include <stdexcept>

#include "block_cache.hpp"
#include "memtool/engine/baselines.hpp"

namespace memtool::engine {
namespace {

constexpr std::uint64_t kMinBlockSize = 512;
constexpr std::uint64_t kSmallSize = std::uint64_t{1} << 20;
constexpr std::uint64_t kSmallBuffer = std::uint64_t{2} << 20;
constexpr std::uint64_t kLargeBuffer = std::uint64_t{20} << 20;
constexpr std::uint64_t kMinLargeAlloc = std::uint64_t{10} << 20;
constexpr std::uint64_t kRoundLarge = std::uint64_t{2} << 20;

constexpr std::uint64_t round_up(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }

class PytorchPolicy final : public detail::CachePolicy {
 public:
  explicit PytorchPolicy(PytorchCachingOptions options) : options_(options) {}
  std::string_view name() const override { return "pytorch-caching"; }
  std::uint64_t round(std::uint64_t size) const override {
    return size < kMinBlockSize ? kMinBlockSize : round_up(size, kMinBlockSize);
  }
  int pool_of(std::uint64_t rounded) const override { return rounded <= kSmallSize ? 0 : 1; }
  std::uint64_t segment_size(std::uint64_t rounded) const override {
    if (rounded <= kSmallSize) return kSmallBuffer;
    if (rounded < kMinLargeAlloc) return kLargeBuffer;
    return round_up(rounded, kRoundLarge);
  }
  bool may_take(std::uint64_t rounded, std::uint64_t block_size) const override {
    const std::uint64_t max_split = options_.max_split_size;
    if (rounded < max_split && block_size >= max_split) return false;
    if (rounded >= max_split && block_size - rounded >= kLargeBuffer) return false;
    return true;
  }
  bool should_split(int pool, std::uint64_t rounded, std::uint64_t rest) const override {
    if (pool == 0) return rest >= kMinBlockSize;
    return rounded < options_.max_split_size && rest > kSmallSize;
  }
  bool frees_cache_when_full() const override { return true; }
  std::uint64_t oversize() const override { return options_.max_split_size; }
  bool borrows_when_full() const override { return options_.borrow_when_full; }

 private:
  PytorchCachingOptions options_;
};

}  // namespace

std::unique_ptr<Resource> make_pytorch_caching(Device& device, std::unique_ptr<Resource> upstream,
                                               PytorchCachingOptions options) {
  if (options.max_split_size < kLargeBuffer) {
    throw std::invalid_argument("max_split_size must be at least 20 MiB (PyTorch refuses smaller values)");
  }
  return detail::make_block_cache(device, std::move(upstream), std::make_unique<PytorchPolicy>(options));
}

}  // namespace memtool::engine
