// sweep_fill: see sweep_fill.hpp. Free blocks are kept twice, by address (to merge a freed
// block with its neighbours) and by size (to find the smallest that holds a buffer); the top
// grows only when no free block does.
#include "sweep_fill.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <memory_resource>
#include <set>
#include <utility>

namespace memtool::planner::detail {

namespace {

class FreeBlocks {
 public:
  explicit FreeBlocks(std::uint64_t base) : by_lo_(&nodes_), by_size_(&nodes_), top_(base) {}

  std::uint64_t allocate(std::uint64_t footprint, std::uint64_t alignment) {
    // The smallest blocks first; alignment can make one too small, so a few are tried.
    int tries = 0;
    for (auto it = by_size_.lower_bound({footprint, 0}); it != by_size_.end() && tries < 4; ++it, ++tries) {
      const auto [size, lo] = *it;
      const std::uint64_t at = align_up(lo, alignment);
      if (at + footprint <= lo + size) {
        by_size_.erase(it);
        by_lo_.erase(lo);
        if (at > lo) add(lo, at);
        if (lo + size > at + footprint) add(at + footprint, lo + size);
        return at;
      }
    }
    // On top, starting inside the free block that reaches the top, if there is one.
    std::uint64_t from = top_;
    if (!by_lo_.empty() && std::prev(by_lo_.end())->second == top_) {
      const auto last = std::prev(by_lo_.end());
      from = last->first;
      erase(last->first, last->second);
    }
    const std::uint64_t at = align_up(from, alignment);
    if (at > from) add(from, at);
    if (at + footprint < top_) {
      add(at + footprint, top_);  // that block was large enough after all (past the tries)
    } else {
      top_ = at + footprint;
    }
    return at;
  }

  void release(std::uint64_t lo, std::uint64_t hi) {
    // The free blocks either side, found by one search.
    auto after = by_lo_.lower_bound(lo);
    if (after != by_lo_.begin()) {
      const auto before = std::prev(after);
      if (before->second == lo) {
        lo = before->first;
        by_size_.erase({before->second - before->first, before->first});
        by_lo_.erase(before);
      }
    }
    if (after != by_lo_.end() && after->first == hi) {
      hi = after->second;
      by_size_.erase({after->second - after->first, after->first});
      by_lo_.erase(after);
    }
    add(lo, hi);
  }

  [[nodiscard]] std::uint64_t top() const { return top_; }

 private:
  void add(std::uint64_t lo, std::uint64_t hi) {
    by_lo_.emplace(lo, hi);
    by_size_.emplace(hi - lo, lo);
  }
  void erase(std::uint64_t lo, std::uint64_t hi) {
    by_lo_.erase(lo);
    by_size_.erase({hi - lo, lo});
  }
  std::pmr::unsynchronized_pool_resource nodes_;                    // the trees' nodes, recycled (no malloc per block)
  std::pmr::map<std::uint64_t, std::uint64_t> by_lo_;               // lo -> hi
  std::pmr::set<std::pair<std::uint64_t, std::uint64_t>> by_size_;  // (hi - lo, lo)
  std::uint64_t top_;
};

}  // namespace

std::uint64_t sweep_fill(const Prepared& p, std::span<const std::uint32_t> items, std::uint64_t base,
                         std::vector<std::uint64_t>& offsets) {
  // The allocations sorted by start with what they need, the frees by end: both read in time
  // order, so only a free's offset (written at its allocation) is read at random.
  struct Allocation {
    std::uint64_t key;  // start section << 32 | position in `items`
    std::uint64_t footprint;
    std::uint64_t alignment;
  };
  std::vector<Allocation> allocations;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> frees;  // (end section << 32 | position, footprint)
  allocations.reserve(items.size());
  frees.reserve(items.size());
  for (std::uint32_t k = 0; k < items.size(); ++k) {
    const Item& it = p.items[items[k]];
    if (it.footprint == 0) continue;
    const Span* spans = p.spans_of(items[k]);
    allocations.push_back({std::uint64_t{spans[0].first} << 32 | k, it.footprint, it.alignment});
    frees.emplace_back(std::uint64_t{spans[it.span_count - 1].end} << 32 | k, it.footprint);
  }
  std::sort(allocations.begin(), allocations.end(),
            [](const Allocation& x, const Allocation& y) { return x.key < y.key; });
  std::sort(frees.begin(), frees.end());
  constexpr std::uint64_t kNone = UINT64_MAX;
  std::vector<std::uint64_t> at(items.size(), kNone);
  FreeBlocks blocks(base);
  auto next_free = frees.begin();
  for (const Allocation& a : allocations) {
    // Frees at or before this start first: a buffer ending where another starts does not
    // conflict with it.
    for (; next_free != frees.end() && next_free->first >> 32 <= a.key >> 32; ++next_free) {
      const std::uint64_t lo = at[next_free->first & 0xffffffffU];
      blocks.release(lo, lo + next_free->second);
    }
    at[a.key & 0xffffffffU] = blocks.allocate(a.footprint, a.alignment);
  }
  for (std::uint32_t k = 0; k < items.size(); ++k) {
    if (at[k] != kNone) offsets[items[k]] = at[k];
  }
  return blocks.top();
}

std::uint64_t sweep_fill_work(std::uint64_t count) {
  // Per buffer: its two events sorted, its block found and freed; cache misses grow with the
  // number of buffers (fitted from 2.5 k to 1 M).
  const auto bits = static_cast<std::uint64_t>(std::bit_width(count));
  return count * (100 + 30 * bits);
}

}  // namespace memtool::planner::detail
