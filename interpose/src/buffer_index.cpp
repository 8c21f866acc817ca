// BufferIndex: ordered map of live ranges (see buffer_index.hpp).
#include "memtool/interpose/buffer_index.hpp"

#include <algorithm>
#include <mutex>

namespace memtool::interpose {

namespace {
std::uint64_t extent(const LiveBuffer& buffer) { return std::max<std::uint64_t>(buffer.size, 1); }
}  // namespace

void BufferIndex::insert(const LiveBuffer& buffer) {
  std::unique_lock lock(mutex_);
  std::uint64_t live = live_bytes_.load(std::memory_order_relaxed) + buffer.size;
  auto [it, inserted] = by_base_.try_emplace(buffer.base, buffer);
  if (!inserted) {  // a stale entry: its free was never seen
    live -= it->second.size;
    it->second = buffer;
  }
  live_bytes_.store(live, std::memory_order_relaxed);
  update_bounds_locked();
}

std::optional<LiveBuffer> BufferIndex::erase(std::uint64_t base) {
  std::unique_lock lock(mutex_);
  const auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  LiveBuffer buffer = it->second;
  by_base_.erase(it);
  update_bounds_locked();
  live_bytes_.store(live_bytes_.load(std::memory_order_relaxed) - buffer.size, std::memory_order_relaxed);
  return buffer;
}

std::vector<LiveBuffer> BufferIndex::erase_range(std::uint64_t begin, std::uint64_t end) {
  std::vector<LiveBuffer> removed;
  std::unique_lock lock(mutex_);
  auto it = by_base_.lower_bound(begin);
  std::uint64_t freed = 0;
  while (it != by_base_.end() && it->first < end) {
    removed.push_back(it->second);
    freed += it->second.size;
    it = by_base_.erase(it);
  }
  update_bounds_locked();
  live_bytes_.store(live_bytes_.load(std::memory_order_relaxed) - freed, std::memory_order_relaxed);
  return removed;
}

const LiveBuffer* BufferIndex::find_locked(std::uint64_t address) const {
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return nullptr;
  --it;
  const LiveBuffer& buffer = it->second;
  return address - buffer.base < extent(buffer) ? &buffer : nullptr;
}

std::optional<LiveBuffer> BufferIndex::find(std::uint64_t address) const {
  if (address < low_.load(std::memory_order_relaxed) || address >= high_.load(std::memory_order_relaxed)) {
    return std::nullopt;
  }
  std::shared_lock lock(mutex_);
  const LiveBuffer* buffer = find_locked(address);
  if (buffer == nullptr) return std::nullopt;
  return *buffer;
}

void BufferIndex::scan(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const {
  const std::uint64_t low = low_.load(std::memory_order_relaxed);
  const std::uint64_t high = high_.load(std::memory_order_relaxed);
  const std::size_t first_new = bases.size();
  bool locked = false;
  std::shared_lock lock(mutex_, std::defer_lock);
  for (const std::uint64_t word : words) {
    if (word < low || word >= high) continue;
    if (!locked) {
      lock.lock();
      locked = true;
    }
    const LiveBuffer* buffer = find_locked(word);
    if (buffer == nullptr) continue;
    // Launches touch a handful of buffers: a linear duplicate check beats any set.
    if (std::find(bases.begin() + static_cast<std::ptrdiff_t>(first_new), bases.end(), buffer->base) == bases.end()) {
      bases.push_back(buffer->base);
    }
  }
}

void BufferIndex::scan_unlocked(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const {
  const std::uint64_t low = low_.load(std::memory_order_relaxed);
  const std::uint64_t high = high_.load(std::memory_order_relaxed);
  const std::size_t first_new = bases.size();
  for (const std::uint64_t word : words) {
    if (word < low || word >= high) continue;
    const LiveBuffer* buffer = find_locked(word);
    if (buffer == nullptr) continue;
    if (std::find(bases.begin() + static_cast<std::ptrdiff_t>(first_new), bases.end(), buffer->base) == bases.end()) {
      bases.push_back(buffer->base);
    }
  }
}

std::size_t BufferIndex::size() const {
  std::shared_lock lock(mutex_);
  return by_base_.size();
}

void BufferIndex::update_bounds_locked() {
  if (by_base_.empty()) {
    low_.store(~std::uint64_t{0}, std::memory_order_relaxed);
    high_.store(0, std::memory_order_relaxed);
    return;
  }
  const LiveBuffer& last = by_base_.rbegin()->second;
  low_.store(by_base_.begin()->first, std::memory_order_relaxed);
  high_.store(last.base + extent(last), std::memory_order_relaxed);
}

}  // namespace memtool::interpose
