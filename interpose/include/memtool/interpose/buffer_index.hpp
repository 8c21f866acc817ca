// The index of live buffers: which allocation, if any, contains an address. Launches ask it
// for every 8-byte word of their arguments, so lookups are the hot path: an ordered map of
// disjoint [base, base+size) ranges under a reader/writer lock, behind a one-comparison
// filter on the lowest and highest live address (most argument words are sizes, strides or
// floats far outside that range).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
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
  // Removes every buffer whose base lies in [begin, end) (cuMemUnmap of a range).
  std::vector<LiveBuffer> erase_range(std::uint64_t begin, std::uint64_t end);
  // The buffer containing `address` (interior pointers included).
  [[nodiscard]] std::optional<LiveBuffer> find(std::uint64_t address) const;

  // Appends to `bases` the base of the buffer each word points into, once per buffer (in
  // first-touch order). One lock for the whole scan.
  void scan(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const;
  // The same without taking the index's lock, for an owner that makes every change to the
  // index under a lock of its own and holds that lock now (the recorder's emit lock).
  void scan_unlocked(std::span<const std::uint64_t> words, std::vector<std::uint64_t>& bases) const;

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::uint64_t live_bytes() const { return live_bytes_.load(std::memory_order_relaxed); }

 private:
  [[nodiscard]] const LiveBuffer* find_locked(std::uint64_t address) const;
  void update_bounds_locked();

  mutable std::shared_mutex mutex_;
  std::map<std::uint64_t, LiveBuffer> by_base_;
  // [low_, high_) covers every live buffer; read without the lock as a pre-filter.
  std::atomic<std::uint64_t> low_{~std::uint64_t{0}};
  std::atomic<std::uint64_t> high_{0};
  std::atomic<std::uint64_t> live_bytes_{0};
};

}  // namespace memtool::interpose
