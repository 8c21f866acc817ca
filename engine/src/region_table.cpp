// RegionTable: live buffers by the regions they cover (see region_table.hpp).
#include "memtool/engine/region_table.hpp"

#include <algorithm>
#include <bit>

namespace memtool::engine {

namespace sorted_entries {

std::vector<IndexEntry>::iterator first_at_or_after(std::vector<IndexEntry>& entries, std::uint64_t base) {
  return std::lower_bound(entries.begin(), entries.end(), base,
                          [](const IndexEntry& e, std::uint64_t b) { return e.buffer.base < b; });
}

// The last entry starting at or below `address`, if it reaches it.
const IndexEntry* containing(const std::vector<IndexEntry>& entries, std::uint64_t address) {
  auto it = std::upper_bound(entries.begin(), entries.end(), address,
                             [](std::uint64_t a, const IndexEntry& e) { return a < e.buffer.base; });
  if (it == entries.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

bool erase_base(std::vector<IndexEntry>& entries, std::uint64_t base) {
  const auto it = first_at_or_after(entries, base);
  if (it == entries.end() || it->buffer.base != base) return false;
  entries.erase(it);
  return true;
}

}  // namespace sorted_entries

namespace {
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // Fibonacci hashing
constexpr std::size_t kInitialSlots = 64;
}  // namespace

std::vector<IndexEntry>* RegionTable::region(std::uint64_t number) {
  if (regions_ == 0) return nullptr;
  const std::uint64_t key = number + 1;
  for (std::size_t i = static_cast<std::size_t>((key * kGolden) >> shift_);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) return &slot.entries;
    if (slot.key == 0) return nullptr;
  }
}

const std::vector<IndexEntry>* RegionTable::region(std::uint64_t number) const {
  return const_cast<RegionTable*>(this)->region(number);  // the same search, nothing changed
}

std::vector<IndexEntry>& RegionTable::region_for(std::uint64_t number) {
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

void RegionTable::rebuild(std::size_t slot_count) {
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

const IndexEntry* RegionTable::containing(std::uint64_t address) const {
  const std::vector<IndexEntry>* entries = region(address >> region_shift_);
  return entries != nullptr ? sorted_entries::containing(*entries, address) : nullptr;
}

std::pair<std::vector<IndexEntry>*, std::size_t> RegionTable::locate(std::uint64_t base) {
  std::vector<IndexEntry>* entries = region(base >> region_shift_);
  if (entries == nullptr) return {nullptr, 0};
  const auto it = sorted_entries::first_at_or_after(*entries, base);
  if (it == entries->end() || it->buffer.base != base) return {nullptr, 0};
  return {entries, static_cast<std::size_t>(it - entries->begin())};
}

void RegionTable::add(const IndexEntry& entry) {
  const std::uint64_t first = entry.buffer.base >> region_shift_;
  const std::uint64_t last = (entry.end - 1) >> region_shift_;
  for (std::uint64_t number = first; number <= last; ++number) {
    std::vector<IndexEntry>& entries = region_for(number);
    entries.insert(sorted_entries::first_at_or_after(entries, entry.buffer.base), entry);
  }
  ++entries_;
}

void RegionTable::remove(const IndexEntry& entry_in_list, std::vector<IndexEntry>* home) {
  const IndexEntry entry = entry_in_list;
  const std::uint64_t first = entry.buffer.base >> region_shift_;
  const std::uint64_t last = (entry.end - 1) >> region_shift_;
  bool removed = false;
  for (std::uint64_t number = first; number <= last; ++number) {
    std::vector<IndexEntry>* entries = number == first && home != nullptr ? home : region(number);
    if (entries == nullptr || !sorted_entries::erase_base(*entries, entry.buffer.base)) continue;
    removed = true;
    if (entries->empty()) ++empty_lists_;
  }
  if (removed) --entries_;
  // A region emptied by a free is usually filled again by the next allocation: keep it (and
  // its array's capacity) until the empty ones are many and outnumber the others.
  if (empty_lists_ > kKeptEmptyRegions && 2 * empty_lists_ > regions_) rebuild(mask_ + 1);
}

void RegionTable::collect(std::uint64_t begin, std::uint64_t end, std::vector<LiveBuffer>& out) const {
  if (end <= begin || entries_ == 0) return;
  // Each entry once: from the list of the region holding its base.
  auto from = [&](const std::vector<IndexEntry>& entries, std::uint64_t number) {
    for (const IndexEntry& e : entries) {
      const std::uint64_t base = e.buffer.base;
      if (base >= begin && base < end && (base >> region_shift_) == number) out.push_back(e.buffer);
    }
  };
  const std::uint64_t first = begin >> region_shift_;
  const std::uint64_t last = (end - 1) >> region_shift_;
  if (last - first < regions_) {
    for (std::uint64_t number = first; number <= last; ++number) {
      if (const std::vector<IndexEntry>* entries = region(number)) from(*entries, number);
    }
  } else {
    for (const Slot& slot : slots_) {
      if (slot.key != 0) from(slot.entries, slot.key - 1);
    }
  }
}

}  // namespace memtool::engine
