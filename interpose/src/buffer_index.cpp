// BufferIndex: ordered map of live ranges (see buffer_index.hpp).
#include "memtool/interpose/buffer_index.hpp"

#include <algorithm>

namespace memtool::interpose {

namespace {
std::uint64_t extent(const LiveBuffer& buffer) { return std::max<std::uint64_t>(buffer.size, 1); }
}  // namespace

void BufferIndex::insert(const LiveBuffer& buffer) {
  auto [it, inserted] = by_base_.try_emplace(buffer.base, buffer);
  if (!inserted) {  // a stale entry: its free was never seen
    live_bytes_ -= it->second.size;
    it->second = buffer;
  }
  live_bytes_ += buffer.size;
  // Allocations mostly land at the ends of the live range: widen the bounds in O(1) unless
  // a stale entry was replaced (its extent may have shrunk).
  if (inserted) {
    low_ = std::min(low_, buffer.base);
    high_ = std::max(high_, buffer.base + extent(buffer));
  } else {
    update_bounds();
  }
}

std::optional<LiveBuffer> BufferIndex::erase(std::uint64_t base) {
  const auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  const LiveBuffer buffer = it->second;
  const bool at_an_end = it == by_base_.begin() || std::next(it) == by_base_.end();
  by_base_.erase(it);
  live_bytes_ -= buffer.size;
  if (at_an_end) update_bounds();  // an interior buffer leaves the bounds as they are
  return buffer;
}

std::vector<LiveBuffer> BufferIndex::erase_range(std::uint64_t begin, std::uint64_t end) {
  std::vector<LiveBuffer> removed;
  auto it = by_base_.lower_bound(begin);
  while (it != by_base_.end() && it->first < end) {
    removed.push_back(it->second);
    live_bytes_ -= it->second.size;
    it = by_base_.erase(it);
  }
  update_bounds();
  return removed;
}

const LiveBuffer* BufferIndex::find(std::uint64_t address) const {
  if (address < low_ || address >= high_) return nullptr;
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return nullptr;
  --it;
  const LiveBuffer& buffer = it->second;
  return address - buffer.base < extent(buffer) ? &buffer : nullptr;
}

void BufferIndex::scan(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const {
  const std::size_t first_new = bases.size();
  for (const std::uint64_t word : words) {
    const LiveBuffer* buffer = find(word);
    if (buffer == nullptr) continue;
    // Launches touch a handful of buffers: a linear duplicate check beats any set.
    if (std::find(bases.begin() + static_cast<std::ptrdiff_t>(first_new), bases.end(), buffer->base) == bases.end()) {
      bases.push_back(buffer->base);
    }
  }
}

void BufferIndex::update_bounds() {
  if (by_base_.empty()) {
    low_ = ~std::uint64_t{0};
    high_ = 0;
    return;
  }
  const LiveBuffer& last = by_base_.rbegin()->second;
  low_ = by_base_.begin()->first;
  high_ = last.base + extent(last);
}

}  // namespace memtool::interpose
