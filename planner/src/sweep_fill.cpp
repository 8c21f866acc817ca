// sweep_fill: see sweep_fill.hpp. Free blocks are kept twice, by address (to merge a freed
// block with its neighbours) and by size (to find the smallest that holds a buffer); the top
// grows only when no free block does.
#include "sweep_fill.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <utility>

namespace memtool::planner::detail {

namespace {

class FreeBlocks {
 public:
  explicit FreeBlocks(std::uint64_t base) : top_(base) {}

  std::uint64_t allocate(std::uint64_t footprint, std::uint64_t alignment) {
    // The smallest blocks first; alignment can make one too small, so a few are tried.
    int tries = 0;
    for (auto it = by_size_.lower_bound({footprint, 0}); it != by_size_.end() && tries < 4; ++it, ++tries) {
      const auto [size, lo] = *it;
      const std::uint64_t at = align_up(lo, alignment);
      if (at + footprint <= lo + size) {
        take(lo, lo + size, at, at + footprint);
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
    const auto next = by_lo_.find(hi);
    if (next != by_lo_.end()) {
      hi = next->second;
      erase(next->first, next->second);
    }
    const auto after = by_lo_.lower_bound(lo);
    if (after != by_lo_.begin()) {
      const auto before = std::prev(after);
      if (before->second == lo) {
        lo = before->first;
        erase(before->first, before->second);
      }
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
  // [at, at_end) out of the free block [lo, hi); what is left of it stays free.
  void take(std::uint64_t lo, std::uint64_t hi, std::uint64_t at, std::uint64_t at_end) {
    erase(lo, hi);
    if (at > lo) add(lo, at);
    if (hi > at_end) add(at_end, hi);
  }

  std::map<std::uint64_t, std::uint64_t> by_lo_;             // lo -> hi
  std::set<std::pair<std::uint64_t, std::uint64_t>> by_size_;  // (hi - lo, lo)
  std::uint64_t top_;
};

}  // namespace

std::uint64_t sweep_fill(const Prepared& p, std::span<const std::uint32_t> items, std::uint64_t base,
                         std::vector<std::uint64_t>& offsets) {
  // One key per event: section, then frees before allocations (a buffer ending where another
  // starts does not conflict with it), then the position in `items`.
  std::vector<std::uint64_t> events;
  events.reserve(2 * items.size());
  for (std::uint32_t k = 0; k < items.size(); ++k) {
    const Item& it = p.items[items[k]];
    if (it.footprint == 0) continue;
    const Span* spans = p.spans_of(items[k]);
    events.push_back(std::uint64_t{spans[0].first} << 32 | std::uint64_t{1} << 31 | k);
    events.push_back(std::uint64_t{spans[it.span_count - 1].end} << 32 | k);
  }
  std::sort(events.begin(), events.end());
  FreeBlocks blocks(base);
  for (const std::uint64_t event : events) {
    const std::uint32_t item = items[event & 0x7fffffffU];
    const Item& it = p.items[item];
    if ((event >> 31 & 1U) != 0) {
      offsets[item] = blocks.allocate(it.footprint, it.alignment);
    } else {
      blocks.release(offsets[item], offsets[item] + it.footprint);
    }
  }
  return blocks.top();
}

std::uint64_t sweep_fill_work(std::uint64_t count) {
  return count * (200 + 40 * static_cast<std::uint64_t>(std::bit_width(count)));
}

}  // namespace memtool::planner::detail
