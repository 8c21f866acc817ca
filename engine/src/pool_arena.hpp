// One pool allocation and what is going on inside it: the occupied ranges (invariant 1: the
// engine asks `range_free` before every hand-out, whatever the plan says) and, for ranges
// freed but not yet known to be idle on the device, the events recorded at their free
// (invariant 2: whoever takes such a range next inherits the events and waits on them from
// the streams that use it). Both are ordered interval maps: O(log n) per check.
//
// Not thread-safe: the engine holds its lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "memtool/engine/device.hpp"

namespace memtool::engine {

// Events recorded when a pooled range was freed, one per stream that had used it: work queued
// after a wait on all of them (from any stream) runs after every earlier use of the range.
struct ReleaseEvents {
  std::vector<std::pair<StreamId, EventId>> events;
  // Older release records whose events are still listed above (carried forward when the freed
  // buffer was never used on the device), kept alive so their events are not recycled.
  std::vector<std::shared_ptr<const ReleaseEvents>> carried;
};
using ReleaseRef = std::shared_ptr<const ReleaseEvents>;

class PoolArena {
 public:
  PoolArena(DevicePtr base, std::uint64_t size) : base_(base), size_(size) {}

  [[nodiscard]] DevicePtr base() const { return base_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] bool contains(DevicePtr ptr) const { return ptr >= base_ && ptr - base_ < size_; }

  // Invariant 1: [offset, offset + bytes) lies inside the arena and overlaps no live range.
  [[nodiscard]] bool range_free(std::uint64_t offset, std::uint64_t bytes) const;
  // Marks the range live (precondition: range_free) and returns the release records that
  // overlapped it; their parts inside the range are removed from the arena.
  std::vector<ReleaseRef> occupy(std::uint64_t offset, std::uint64_t bytes);
  // Ends the live range that starts at `offset`; `release` (may be null: nothing to wait for)
  // covers it until the range is taken again. Returns false if no live range starts there.
  bool release(std::uint64_t offset, ReleaseRef release);
  // The smallest gap between live ranges that holds `bytes` (best fit, lowest offset on ties).
  [[nodiscard]] std::optional<std::uint64_t> free_gap(std::uint64_t bytes) const;
  // The live range containing `ptr`: (offset, bytes).
  [[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> live_range_at(DevicePtr ptr) const;

  [[nodiscard]] std::size_t live_count() const { return live_.size(); }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_bytes_; }
  [[nodiscard]] std::size_t release_records() const { return released_.size(); }

 private:
  struct Released {
    std::uint64_t end;
    ReleaseRef events;
  };
  DevicePtr base_;
  std::uint64_t size_;
  std::map<std::uint64_t, std::uint64_t> live_;  // offset → end
  std::map<std::uint64_t, Released> released_;   // offset → (end, events), disjoint
  std::uint64_t live_bytes_ = 0;
};

}  // namespace memtool::engine
