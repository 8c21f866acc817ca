// The index of live buffers: which allocation, if any, contains an address. Launches ask it
// for every 8-byte word of their arguments, allocations and frees change it: both are on
// every recorded call's path.
//
// Buffers are grouped by the regions of address space they cover (region_table.hpp): up to
// 2 MiB by 64 KiB regions, up to 64 MiB by 2 MiB regions, the few bigger ones in one sorted
// list. A lookup is a hash probe and a binary search in a short contiguous array whatever the
// number of live buffers (PyTorch without its caching allocator keeps thousands: an ordered
// map's lookups then cost several times the rest of a launch), and an insertion or removal
// moves at most a small region's array, even where the driver packs hundreds of small
// allocations into one 2 MiB page. A one-comparison filter on the lowest and highest address
// live comes first (most argument words are sizes, strides or floats far outside that range).
//
// Not thread-safe: its owner serialises every call (the recorder's emit lock, which it holds
// for each event anyway — a lock of the index's own would be taken and released for nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memtool/engine/region_table.hpp"

namespace memtool::engine {

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
  // Appends to `bases` the base of every live buffer but pinned host memory (what work that may
  // touch anything touches: a launch of a graph memtool cannot read), in base order.
  void append_all_device(std::vector<std::uint64_t>& bases) const;

  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_bytes_; }

 private:
  // Takes out the entry of `base` wherever it is; false when there is none.
  bool remove(std::uint64_t base, LiveBuffer* removed);

  // What every lookup and change reads first (the recorder keeps its index right after its
  // counters, in its hot cache lines).
  std::uint64_t low_ = ~std::uint64_t{0};  // [low_, high_) covers every live buffer
  std::uint64_t high_ = 0;
  std::size_t count_ = 0;
  std::uint64_t live_bytes_ = 0;
  std::size_t outside_small_ = 0;  // buffers in medium_ and huge_: 0 spares looking there
  RegionTable small_{16};          // buffers up to 32 x 64 KiB
  RegionTable medium_{21};         // up to 32 x 2 MiB
  std::vector<IndexEntry> huge_;   // the rest, by base
};

}  // namespace memtool::engine
