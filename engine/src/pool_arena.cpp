// PoolArena: the occupancy map (invariant 1) and the release records (invariant 2) of one pool.
#include "pool_arena.hpp"

#include "memtool/engine/debug_assert.hpp"

namespace memtool::engine {

bool PoolArena::range_free(std::uint64_t offset, std::uint64_t bytes) const {
  if (bytes == 0 || offset > size_ || bytes > size_ - offset) return false;
  const std::uint64_t end = offset + bytes;
  // The first live range starting at or after `end` and everything before it: only the one
  // just before can reach into [offset, end) since live ranges are disjoint.
  auto next = live_.lower_bound(end);
  if (next == live_.begin()) return true;
  const auto& prev = *std::prev(next);
  return prev.second <= offset;
}

std::vector<ReleaseRef> PoolArena::occupy(std::uint64_t offset, std::uint64_t bytes) {
  MEMTOOL_ASSERT(range_free(offset, bytes), "invariant 1: a pool range handed out overlaps a live one");
  const std::uint64_t end = offset + bytes;
  live_.emplace(offset, end);
  live_bytes_ += bytes;

  std::vector<ReleaseRef> inherited;
  auto it = released_.lower_bound(offset);
  if (it != released_.begin() && std::prev(it)->second.end > offset) --it;
  while (it != released_.end() && it->first < end) {
    const std::uint64_t r_begin = it->first;
    const Released record = it->second;
    it = released_.erase(it);
    if (record.events) inherited.push_back(record.events);
    // Keep the parts of the record outside the new live range: they still need ordering.
    if (r_begin < offset) released_.emplace(r_begin, Released{offset, record.events});
    if (record.end > end) it = released_.emplace(end, Released{record.end, record.events}).first;
  }
  return inherited;
}

bool PoolArena::release(std::uint64_t offset, ReleaseRef release) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  const std::uint64_t end = it->second;
  live_bytes_ -= end - offset;
  live_.erase(it);
  // The range was live, so no release record overlaps it (occupy removed them).
  if (release) released_.emplace(offset, Released{end, std::move(release)});
  return true;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> PoolArena::live_range_at(DevicePtr ptr) const {
  if (!contains(ptr)) return std::nullopt;
  const std::uint64_t offset = ptr - base_;
  auto next = live_.upper_bound(offset);
  if (next == live_.begin()) return std::nullopt;
  const auto& range = *std::prev(next);
  if (range.second <= offset) return std::nullopt;
  return std::make_pair(range.first, range.second - range.first);
}

std::optional<std::uint64_t> PoolArena::free_gap(std::uint64_t bytes) const {
  std::optional<std::uint64_t> best;
  std::uint64_t best_size = ~std::uint64_t{0};
  std::uint64_t at = 0;
  auto consider = [&](std::uint64_t begin, std::uint64_t end) {
    if (end > begin && end - begin >= bytes && end - begin < best_size) {
      best = begin;
      best_size = end - begin;
    }
  };
  for (const auto& [offset, end] : live_) {
    consider(at, offset);
    at = end;
  }
  consider(at, size_);
  return best;
}

}  // namespace memtool::engine
