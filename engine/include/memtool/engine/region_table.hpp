// Live buffers grouped by the fixed-size regions of address space they cover: the building
// block of BufferIndex (buffer_index.hpp). A region's buffers sit in one small array sorted by
// base, kept in the region's slot of an open-addressing hash table (Fibonacci hash, linear
// probing: no division, no node per entry). A lookup is one probe and a binary search in
// contiguous memory, whatever the number of buffers elsewhere. A buffer is listed in every
// region it covers, so a table only takes buffers that span few regions (kMaxSpan).
//
// Not thread-safe (BufferIndex's owner serialises every call).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::engine {

struct LiveBuffer {
  std::uint64_t base = 0;
  std::uint64_t size = 0;  // bytes asked for (at least 1 for lookups)
  trace::MemoryKind kind = trace::MemoryKind::device;
  std::uint32_t owner = 0;   // the runtime (CUDA context) that allocated it
  std::uint64_t record = 0;  // its record in the observer's window recorder
};

struct IndexEntry {
  std::uint64_t end;  // base + max(size, 1)
  LiveBuffer buffer;
};

class RegionTable {
 public:
  static constexpr std::uint64_t kMaxSpan = 32;  // regions a buffer of this table may cover

  explicit RegionTable(unsigned region_shift) : region_shift_(region_shift) {}

  // Whether [base, end) covers at most kMaxSpan of this table's regions.
  [[nodiscard]] bool fits(std::uint64_t base, std::uint64_t end) const {
    return ((end - 1) >> region_shift_) - (base >> region_shift_) < kMaxSpan;
  }
  // The entry containing `address`, or null.
  [[nodiscard]] const IndexEntry* containing(std::uint64_t address) const;
  // The entry starting exactly at `base` and the list holding it ({nullptr, 0} when none).
  std::pair<std::vector<IndexEntry>*, std::size_t> locate(std::uint64_t base);
  // Adds an entry that fits().
  void add(const IndexEntry& entry);
  // Takes out the entry starting at entry.buffer.base (a copy is made first); `home`, when not
  // null, is the list of its base's region.
  void remove(const IndexEntry& entry, std::vector<IndexEntry>* home);
  // Appends every entry whose base is in [begin, end), once.
  void collect(std::uint64_t begin, std::uint64_t end, std::vector<LiveBuffer>& out) const;

 private:
  struct Slot {             // a region's buffers sit in its slot: one cache line fewer per lookup
    std::uint64_t key = 0;  // region + 1; 0: empty
    std::vector<IndexEntry> entries;
  };
  static constexpr std::size_t kKeptEmptyRegions = 1024;

  [[nodiscard]] std::vector<IndexEntry>* region(std::uint64_t number);  // null when absent
  [[nodiscard]] const std::vector<IndexEntry>* region(std::uint64_t number) const;
  std::vector<IndexEntry>& region_for(std::uint64_t number);  // created when absent
  void rebuild(std::size_t slot_count);                       // drops regions with no buffer

  // What every lookup and change reads, together and first.
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::size_t mask_ = 0;     // slots_.size() - 1
  unsigned shift_ = 64;      // 64 - log2(slots_.size())
  unsigned region_shift_;
  std::size_t entries_ = 0;      // buffers held (each counted once)
  std::size_t regions_ = 0;      // slots in use
  std::size_t empty_lists_ = 0;  // regions kept with no buffer (refilled soon, usually)
};

// A list of entries sorted by base (the regions' lists, and BufferIndex's list of huge buffers).
namespace sorted_entries {
std::vector<IndexEntry>::iterator first_at_or_after(std::vector<IndexEntry>& entries, std::uint64_t base);
const IndexEntry* containing(const std::vector<IndexEntry>& entries, std::uint64_t address);
bool erase_base(std::vector<IndexEntry>& entries, std::uint64_t base);
}  // namespace sorted_entries

}  // namespace memtool::engine
