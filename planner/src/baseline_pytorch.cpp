// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator),
// replayed on one device and one stream. Modelled as in the source:
//  - a request is rounded up to a multiple of 512 B (kMinBlockSize), at least 512 B;
//  - requests of at most 1 MiB (kSmallSize) use the small pool, larger ones the large pool;
//  - a cached free block is found by best fit ordered by (stream, size, address): the first free
//    block of the pool at least as large as the request; with max_split_size set, a request
//    under it does not take a block at or over it, and a request at or over it does not take a
//    block 20 MiB (kLargeBuffer) or more larger than itself;
//  - when none fits, a new segment is cudaMalloc'ed: 2 MiB (kSmallBuffer) for the small pool,
//    20 MiB for requests under 10 MiB (kMinLargeAlloc), else the request rounded up to 2 MiB
//    (kRoundLarge); segments are never released, so reserved bytes only grow;
//  - the block handed out is split when the rest is at least 512 B (small pool) or more than
//    1 MiB (large pool, and only for requests under max_split_size); the rest stays cached;
//  - a freed block merges with free neighbours of its own segment and goes back to its pool.
// Left out: several streams (one stream, so no cross-stream event waits or per-stream pools),
// out-of-memory handling (no device limit: no freeing of cached segments and retry, no garbage
// collection threshold), roundup_power2_divisions, expandable segments, CUDA graph pools and the
// record_stream deferral of frees.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "memtool/planner/baselines.hpp"

namespace memtool::planner {

namespace {

constexpr std::uint64_t kMinBlockSize = 512;
constexpr std::uint64_t kSmallSize = std::uint64_t{1} << 20;
constexpr std::uint64_t kSmallBuffer = std::uint64_t{2} << 20;
constexpr std::uint64_t kLargeBuffer = std::uint64_t{20} << 20;
constexpr std::uint64_t kMinLargeAlloc = std::uint64_t{10} << 20;
constexpr std::uint64_t kRoundLarge = std::uint64_t{2} << 20;
constexpr std::uint32_t kNone = UINT32_MAX;

std::uint64_t round_up(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }

std::uint64_t round_size(std::uint64_t size) {
  return size < kMinBlockSize ? kMinBlockSize : round_up(size, kMinBlockSize);
}

std::uint64_t allocation_size(std::uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

struct Block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint32_t prev = kNone;  // neighbours within the segment
  std::uint32_t next = kNone;
  bool small = false;
  bool allocated = false;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(const PytorchCachingOptions& options) : options_(options) {}

  std::uint32_t allocate(std::uint64_t request) {
    const std::uint64_t size = round_size(request);
    const bool small = size <= kSmallSize;
    auto& pool = small ? small_free_ : large_free_;
    std::uint32_t block = find_free(pool, size);
    if (block == kNone) {
      const std::uint64_t segment = allocation_size(size);
      block = new_block(next_address_, segment, small);
      next_address_ += segment;
      reserved_ += segment;
      peak_reserved_ = std::max(peak_reserved_, reserved_);
    } else {
      pool.erase({blocks_[block].size, blocks_[block].address, block});
    }
    Block& b = blocks_[block];
    const std::uint64_t remaining = b.size - size;
    const bool split = small ? remaining >= kMinBlockSize
                             : (size < options_.max_split_size && remaining > kSmallSize);
    if (split) {
      const std::uint32_t rest = new_block(b.address + size, remaining, small);
      Block& r = blocks_[rest];
      Block& head = blocks_[block];  // new_block may have moved the vector
      r.prev = block;
      r.next = head.next;
      if (head.next != kNone) blocks_[head.next].prev = rest;
      head.next = rest;
      head.size = size;
      pool.insert({r.size, r.address, rest});
    }
    blocks_[block].allocated = true;
    return block;
  }

  void release(std::uint32_t block) {
    Block* b = &blocks_[block];
    b->allocated = false;
    auto& pool = b->small ? small_free_ : large_free_;
    for (std::uint32_t neighbour : {b->prev, b->next}) {
      if (neighbour == kNone || blocks_[neighbour].allocated) continue;
      Block& n = blocks_[neighbour];
      pool.erase({n.size, n.address, neighbour});
      if (neighbour == b->prev) {
        b->address = n.address;
        b->prev = n.prev;
        if (n.prev != kNone) blocks_[n.prev].next = block;
      } else {
        b->next = n.next;
        if (n.next != kNone) blocks_[n.next].prev = block;
      }
      b->size += n.size;
      n.size = 0;
    }
    pool.insert({b->size, b->address, block});
  }

  [[nodiscard]] std::uint64_t peak_reserved() const { return peak_reserved_; }

 private:
  using FreeSet = std::set<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>>;  // (size, address, block)

  std::uint32_t find_free(const FreeSet& pool, std::uint64_t size) const {
    auto it = pool.lower_bound({size, 0, 0});
    if (it == pool.end()) return kNone;
    const std::uint64_t block_size = std::get<0>(*it);
    if (size < options_.max_split_size && block_size >= options_.max_split_size) return kNone;
    if (size >= options_.max_split_size && block_size >= size + kLargeBuffer) return kNone;
    return std::get<2>(*it);
  }

  std::uint32_t new_block(std::uint64_t address, std::uint64_t size, bool small) {
    blocks_.push_back({address, size, kNone, kNone, small, false});
    return static_cast<std::uint32_t>(blocks_.size() - 1);
  }

  PytorchCachingOptions options_;
  std::vector<Block> blocks_;
  FreeSet small_free_, large_free_;
  std::uint64_t next_address_ = 0;
  std::uint64_t reserved_ = 0;
  std::uint64_t peak_reserved_ = 0;
};

}  // namespace

std::uint64_t simulate_pytorch_caching(const std::vector<AllocationEvent>& events,
                                       const PytorchCachingOptions& options) {
  CachingAllocator allocator(options);
  std::unordered_map<std::uint32_t, std::uint32_t> live;  // buffer -> block
  for (const auto& e : events) {
    if (e.allocate) {
      live[e.buffer] = allocator.allocate(e.size);
    } else if (auto it = live.find(e.buffer); it != live.end()) {
      allocator.release(it->second);
      live.erase(it);
    }
  }
  return allocator.peak_reserved();
}

}  // namespace memtool::planner
