// BufferIndex: live buffers grouped by 2 MiB region (see buffer_index.hpp).
#include "memtool/interpose/buffer_index.hpp"

#include <algorithm>
#include <bit>

namespace memtool::interpose {

namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // Fibonacci hashing
constexpr std::size_t kInitialSlots = 64;

std::uint64_t extent(const LiveBuffer& buffer) { return std::max<std::uint64_t>(buffer.size, 1); }

template <class Entry>
auto first_at_or_after(std::vector<Entry>& entries, std::uint64_t base) {
  return std::lower_bound(entries.begin(), entries.end(), base,
                          [](const Entry& e, std::uint64_t b) { return e.buffer.base < b; });
}

// The entry containing `address` in a list sorted by base: the last one starting at or below it.
template <class Entry>
const Entry* containing(const std::vector<Entry>& entries, std::uint64_t address) {
  auto it = std::upper_bound(entries.begin(), entries.end(), address,
                             [](std::uint64_t a, const Entry& e) { return a < e.buffer.base; });
  if (it == entries.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace

// --- the region table --------------------------------------------------------------------------

std::vector<BufferIndex::Entry>* BufferIndex::region(std::uint64_t number) {
  if (regions_ == 0) return nullptr;
  const std::uint64_t key = number + 1;
  for (std::size_t i = static_cast<std::size_t>((key * kGolden) >> shift_);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) return &slot.entries;
    if (slot.key == 0) return nullptr;
  }
}

const std::vector<BufferIndex::Entry>* BufferIndex::region(std::uint64_t number) const {
  return const_cast<BufferIndex*>(this)->region(number);  // the same search, nothing changed
}

std::vector<BufferIndex::Entry>& BufferIndex::region_for(std::uint64_t number) {
  if (2 * (regions_ + 1) > mask_ + 1) rebuild(std::max(kInitialSlots, 2 * (mask_ + 1)));
  const std::uint64_t key = number + 1;
  for (std::size_t i = static_cast<std::size_t>((key * kGolden) >> shift_);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      if (slot.entries.empty()) --empty_lists_;  // a kept region in use again
      return slot.entries;
    }
    if (slot.key == 0) {
      slot.key = key;
      ++regions_;
      return slot.entries;
    }
  }
}

void BufferIndex::rebuild(std::size_t slot_count) {
  std::vector<Slot> old = std::move(slots_);  // regions with buffers move over; empty ones go
  std::size_t kept = 0;
  for (const Slot& slot : old) kept += slot.key != 0 && !slot.entries.empty() ? 1 : 0;
  slots_ = std::vector<Slot>(std::bit_ceil(std::max(slot_count, 4 * (kept + 1))));  // load <= 1/4
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots_.size()));
  mask_ = slots_.size() - 1;
  regions_ = kept;
  empty_lists_ = 0;
  for (Slot& slot : old) {
    if (slot.key == 0 || slot.entries.empty()) continue;
    std::size_t i = static_cast<std::size_t>((slot.key * kGolden) >> shift_);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = std::move(slot);
  }
}

// --- buffers -----------------------------------------------------------------------------------

std::pair<std::vector<BufferIndex::Entry>*, std::size_t> BufferIndex::locate(std::uint64_t base) {
  for (std::vector<Entry>* entries : {region(base >> kRegionShift), &large_}) {
    if (entries == nullptr) continue;
    const auto it = first_at_or_after(*entries, base);
    if (it != entries->end() && it->buffer.base == base) {
      return {entries, static_cast<std::size_t>(it - entries->begin())};
    }
  }
  return {nullptr, 0};
}

void BufferIndex::insert(const LiveBuffer& buffer) {
  const Entry entry{buffer.base + extent(buffer), buffer};
  const std::uint64_t first = buffer.base >> kRegionShift;
  const std::uint64_t last = (entry.end - 1) >> kRegionShift;
  const bool large = last - first >= kMaxRegions;
  // The list that will hold the base; a stale entry at the same base (a free we never saw) is
  // found there, or in the other kind of list.
  std::vector<Entry>* home = large ? &large_ : &region_for(first);
  auto at = first_at_or_after(*home, buffer.base);
  if (at != home->end() && at->buffer.base == buffer.base) {
    remove(*at, home);
    home = large ? &large_ : &region_for(first);  // remove() may have rebuilt the table
    at = first_at_or_after(*home, buffer.base);
  } else if (std::vector<Entry>* other = large ? region(first) : (large_.empty() ? nullptr : &large_)) {
    const auto stale = first_at_or_after(*other, buffer.base);
    if (stale != other->end() && stale->buffer.base == buffer.base) {
      remove(*stale, other);
      home = large ? &large_ : &region_for(first);
      at = first_at_or_after(*home, buffer.base);
    }
  }
  home->insert(at, entry);
  if (!large) {
    for (std::uint64_t number = first + 1; number <= last; ++number) {
      std::vector<Entry>& entries = region_for(number);
      entries.insert(first_at_or_after(entries, buffer.base), entry);
    }
  }
  ++count_;
  live_bytes_ += buffer.size;
  low_ = std::min(low_, buffer.base);
  high_ = std::max(high_, entry.end);
}

// Takes `entry` out of every list; `home` is the list it was found in (the large list, or its
// base's region), which saves looking that one up again. A copy is made first: the entry lives
// in a list this changes.
void BufferIndex::remove(const Entry& entry_in_list, std::vector<Entry>* home) {
  const Entry entry = entry_in_list;
  const std::uint64_t first = entry.buffer.base >> kRegionShift;
  const std::uint64_t last = (entry.end - 1) >> kRegionShift;
  auto take_out = [&](std::vector<Entry>& entries) {
    const auto it = first_at_or_after(entries, entry.buffer.base);
    if (it == entries.end() || it->buffer.base != entry.buffer.base) return false;
    entries.erase(it);
    return true;
  };
  if (last - first >= kMaxRegions) {
    (void)take_out(large_);
  } else {
    for (std::uint64_t number = first; number <= last; ++number) {
      std::vector<Entry>* entries = number == first && home != nullptr ? home : region(number);
      if (entries != nullptr && take_out(*entries) && entries->empty()) ++empty_lists_;
    }
  }
  --count_;
  live_bytes_ -= entry.buffer.size;
  if (count_ == 0) {
    low_ = ~std::uint64_t{0};
    high_ = 0;
  }
  // A region emptied by a free is usually filled again by the next allocation: keep it (and
  // its array's capacity) until the empty ones are many and outnumber the others.
  if (empty_lists_ > kKeptEmptyRegions && 2 * empty_lists_ > regions_) rebuild(mask_ + 1);
}

std::optional<LiveBuffer> BufferIndex::erase(std::uint64_t base) {
  const auto [entries, at] = locate(base);
  if (entries == nullptr) return std::nullopt;
  const LiveBuffer buffer = (*entries)[at].buffer;
  remove((*entries)[at], entries);
  return buffer;
}

std::vector<LiveBuffer> BufferIndex::erase_range(std::uint64_t begin, std::uint64_t end) {
  // A buffer over several regions is listed in each: collected once per list, then made unique.
  std::vector<LiveBuffer> removed;
  auto collect = [&](const std::vector<Entry>& entries) {
    for (const Entry& e : entries) {
      if (e.buffer.base >= begin && e.buffer.base < end) removed.push_back(e.buffer);
    }
  };
  if (end > begin) {
    const std::uint64_t first = begin >> kRegionShift;
    const std::uint64_t last = (end - 1) >> kRegionShift;
    if (last - first < regions_) {
      for (std::uint64_t number = first; number <= last; ++number) {
        if (const std::vector<Entry>* entries = region(number)) collect(*entries);
      }
    } else {
      for (const Slot& slot : slots_) collect(slot.entries);
    }
    collect(large_);
  }
  std::sort(removed.begin(), removed.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.base < b.base; });
  removed.erase(std::unique(removed.begin(), removed.end(),
                            [](const LiveBuffer& a, const LiveBuffer& b) { return a.base == b.base; }),
                removed.end());
  for (const LiveBuffer& buffer : removed) (void)erase(buffer.base);
  return removed;
}

const LiveBuffer* BufferIndex::find(std::uint64_t address) const {
  if (address < low_ || address >= high_) return nullptr;
  if (const std::vector<Entry>* entries = region(address >> kRegionShift)) {
    if (const Entry* entry = containing(*entries, address)) return &entry->buffer;
  }
  if (large_.empty()) return nullptr;
  const Entry* entry = containing(large_, address);
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

}  // namespace memtool::interpose
