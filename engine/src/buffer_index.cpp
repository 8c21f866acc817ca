// BufferIndex: live buffers by region, in two granularities (see buffer_index.hpp).
#include "memtool/engine/buffer_index.hpp"

#include <algorithm>

namespace memtool::engine {

void BufferIndex::insert(const LiveBuffer& buffer) {
  const IndexEntry entry{buffer.base + std::max<std::uint64_t>(buffer.size, 1), buffer};
  (void)remove(buffer.base, nullptr);  // a stale entry: its free was never seen
  if (small_.fits(buffer.base, entry.end)) {
    small_.add(entry);
  } else if (medium_.fits(buffer.base, entry.end)) {
    medium_.add(entry);
    ++outside_small_;
  } else {
    huge_.insert(sorted_entries::first_at_or_after(huge_, buffer.base), entry);
    ++outside_small_;
  }
  ++count_;
  live_bytes_ += buffer.size;
  low_ = std::min(low_, buffer.base);
  high_ = std::max(high_, entry.end);
}

bool BufferIndex::remove(std::uint64_t base, LiveBuffer* removed) {
  if (count_ == 0) return false;
  LiveBuffer found;
  if (auto [entries, at] = small_.locate(base); entries != nullptr) {
    found = (*entries)[at].buffer;
    small_.remove((*entries)[at], entries);
  } else if (outside_small_ == 0) {
    return false;  // nothing lives in the other tables: no need to look there
  } else if (auto [m_entries, m_at] = medium_.locate(base); m_entries != nullptr) {
    found = (*m_entries)[m_at].buffer;
    medium_.remove((*m_entries)[m_at], m_entries);
    --outside_small_;
  } else {
    const auto it = sorted_entries::first_at_or_after(huge_, base);
    if (it == huge_.end() || it->buffer.base != base) return false;
    found = it->buffer;
    huge_.erase(it);
    --outside_small_;
  }
  --count_;
  live_bytes_ -= found.size;
  if (count_ == 0) {  // the bounds only grow otherwise: a filter, exact lookups follow it
    low_ = ~std::uint64_t{0};
    high_ = 0;
  }
  if (removed != nullptr) *removed = found;
  return true;
}

std::optional<LiveBuffer> BufferIndex::erase(std::uint64_t base) {
  LiveBuffer removed;
  if (!remove(base, &removed)) return std::nullopt;
  return removed;
}

std::vector<LiveBuffer> BufferIndex::erase_range(std::uint64_t begin, std::uint64_t end) {
  std::vector<LiveBuffer> removed;
  small_.collect(begin, end, removed);
  medium_.collect(begin, end, removed);
  for (const IndexEntry& e : huge_) {
    if (e.buffer.base >= begin && e.buffer.base < end) removed.push_back(e.buffer);
  }
  std::sort(removed.begin(), removed.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.base < b.base; });
  for (const LiveBuffer& buffer : removed) (void)remove(buffer.base, nullptr);
  return removed;
}

const LiveBuffer* BufferIndex::find(std::uint64_t address) const {
  if (address < low_ || address >= high_) return nullptr;
  if (const IndexEntry* entry = small_.containing(address)) return &entry->buffer;
  if (outside_small_ == 0) return nullptr;
  if (const IndexEntry* entry = medium_.containing(address)) return &entry->buffer;
  if (huge_.empty()) return nullptr;
  const IndexEntry* entry = sorted_entries::containing(huge_, address);
  return entry != nullptr ? &entry->buffer : nullptr;
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

void BufferIndex::append_all_device(std::vector<std::uint64_t>& bases) const {
  if (count_ == 0) return;
  std::vector<LiveBuffer> all;
  small_.collect(0, ~std::uint64_t{0}, all);
  medium_.collect(0, ~std::uint64_t{0}, all);
  for (const IndexEntry& e : huge_) all.push_back(e.buffer);
  std::sort(all.begin(), all.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.base < b.base; });
  for (const LiveBuffer& buffer : all) {
    if (buffer.kind != trace::MemoryKind::pinned_host) bases.push_back(buffer.base);
  }
}

}  // namespace memtool::engine
