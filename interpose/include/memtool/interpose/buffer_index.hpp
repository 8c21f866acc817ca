// The index of live buffers: which allocation, if any, contains an address. Launches ask it
// for every 8-byte word of their arguments, allocations and frees change it: both are on
// every recorded call's path.
//
// Buffers are grouped by the 2 MiB regions of address space they cover: a region's buffers sit
// in one small array sorted by base, and regions are found through an open-addressing hash
// table (multiplicative hash, linear probing: no division, no node per entry). A lookup is a
// hash probe and a binary search in contiguous memory whatever the number of live buffers
// (PyTorch without its caching allocator keeps thousands: an ordered map's lookups then cost
// several times the rest of a launch); an insertion or removal touches the same few cache
// lines. A buffer covering more than kMaxRegions regions goes to a short list of large
// buffers instead. A one-comparison filter on the lowest and highest address ever live comes
// first (most argument words are sizes, strides or floats far outside that range).
//
// Not thread-safe: its owner serialises every call (the recorder's emit lock, which it holds
// for each event anyway — a lock of the index's own would be taken and released for nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::interpose {

struct LiveBuffer {
  std::uint64_t base = 0;
  std::uint64_t size = 0;  // bytes asked for (at least 1 for lookups)
  trace::MemoryKind kind = trace::MemoryKind::device;
};

class BufferIndex {
 public:
  // Adds a buffer; a stale entry at the same base (a free we never saw) is replaced.
  void insert(const LiveBuffer& buffer);
  // Removes the buffer starting at `base`; nullopt when there is none.
  std::optional<LiveBuffer> erase(std::uint64_t base);
  // Removes every buffer whose base lies in [begin, end) (cuMemUnmap of a range), in base order.
  std::vector<LiveBuffer> erase_range(std::uint64_t begin, std::uint64_t end);
  // The buffer containing `address` (interior pointers included), or null; valid until the
  // next change.
  [[nodiscard]] const LiveBuffer* find(std::uint64_t address) const;

  // Appends to `bases` the base of the buffer each word points into, once per buffer (in
  // first-touch order).
  void scan(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const;

  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_bytes_; }

 private:
  struct Entry {
    std::uint64_t end;  // base + max(size, 1)
    LiveBuffer buffer;
  };
  struct Slot {  // a region's buffers sit in its slot: one cache line fewer per lookup
    std::uint64_t key = 0;  // region + 1; 0: empty
    std::vector<Entry> entries;
  };
  static constexpr unsigned kRegionShift = 21;
  static constexpr std::uint64_t kMaxRegions = 32;  // 64 MiB; bigger buffers are few
  static constexpr std::size_t kKeptEmptyRegions = 1024;

  [[nodiscard]] std::vector<Entry>* region(std::uint64_t number);  // null when absent
  [[nodiscard]] const std::vector<Entry>* region(std::uint64_t number) const;
  std::vector<Entry>& region_for(std::uint64_t number);  // created when absent
  void rebuild(std::size_t slot_count);                  // drops regions with no buffer
  // The entry of the buffer starting exactly at `base`, and the list holding it.
  std::pair<std::vector<Entry>*, std::size_t> locate(std::uint64_t base);
  void remove(const Entry& entry, std::vector<Entry>* home);

  // What every lookup and change reads, together and first (the recorder keeps its index
  // right after its counters, in its hot cache lines).
  std::uint64_t low_ = ~std::uint64_t{0};  // [low_, high_) covers every live buffer
  std::uint64_t high_ = 0;
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::size_t mask_ = 0;     // slots_.size() - 1
  unsigned shift_ = 64;      // 64 - log2(slots_.size())
  std::size_t count_ = 0;
  std::uint64_t live_bytes_ = 0;
  std::size_t regions_ = 0;      // slots in use
  std::size_t empty_lists_ = 0;  // regions kept with no buffer (refilled soon, usually)
  std::vector<Entry> large_;     // buffers over kMaxRegions regions, by base
};

}  // namespace memtool::interpose
