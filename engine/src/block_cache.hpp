// BlockCache: the caching allocator both baselines are (baselines.hpp) — device allocations
// ("segments") cut into blocks, free blocks kept per pool and stream in best-fit order, split on
// allocation, merged with free neighbours of their own segment on free, blocks used on other
// streams held back until events say that work is done. A CachePolicy says what differs:
// rounding, pools, segment sizes, when to split, what to do when the device is full.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "memtool/engine/resource.hpp"

namespace memtool::engine::detail {

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // The block size a request of `size` (> 0) bytes takes.
  [[nodiscard]] virtual std::uint64_t round(std::uint64_t size) const = 0;
  // Pool 0 or 1 (PyTorch: small, large; CnMem has one).
  [[nodiscard]] virtual int pool_of(std::uint64_t rounded) const = 0;
  // The device allocation made when no free block fits.
  [[nodiscard]] virtual std::uint64_t segment_size(std::uint64_t rounded) const = 0;
  // Whether the best-fitting free block (at least `rounded`) may serve the request; when it may
  // not, no other block is tried (PyTorch's max_split_size rules).
  [[nodiscard]] virtual bool may_take(std::uint64_t rounded, std::uint64_t block_size) const = 0;
  // Whether the rest of a block after `rounded` bytes becomes a free block of its own.
  [[nodiscard]] virtual bool should_split(int pool, std::uint64_t rounded, std::uint64_t rest) const = 0;
  // After a failed device allocation: free cached segments and retry (PyTorch), or fail (CnMem).
  [[nodiscard]] virtual bool frees_cache_when_full() const = 0;
  // Blocks at least this large are "oversize" (max_split_size): when the device is full, enough
  // of them are freed first (release_available_cached_blocks). ~0: none.
  [[nodiscard]] virtual std::uint64_t oversize() const { return ~std::uint64_t{0}; }
  // One segment allocated up front for pool 0 on stream 0 (CnMem's cnmemInit size), 0 for none.
  [[nodiscard]] virtual std::uint64_t initial_reserve() const { return 0; }
  // Whether a request no free block fits makes a new segment (CnMem's CNMEM_FLAGS_CANNOT_GROW
  // says no: it fails instead).
  [[nodiscard]] virtual bool grows() const { return true; }
  // Whether a cuMemAlloc request no block of its stream fits, with no room for a new segment,
  // takes a free block of another stream's (ordered after that stream's work when used, as any
  // block is) before failing. PyTorch does not (out of memory); memtool's small cache must, as
  // the program without it would have had that memory.
  [[nodiscard]] virtual bool borrows_when_full() const { return false; }
};

[[nodiscard]] std::unique_ptr<Resource> make_block_cache(Device& device, std::unique_ptr<Resource> upstream,
                                                         std::unique_ptr<const CachePolicy> policy);

}  // namespace memtool::engine::detail
