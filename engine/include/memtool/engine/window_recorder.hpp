// WindowRecorder: the observer's memory of recent allocations, frees and accesses, in tick
// time, from which it cuts an IterationWindow (window.hpp) for the strategies that plan.
//
// Records are kept in allocation order and dropped once older than `retain_ticks` and freed;
// a record older than that and still live (a weight, optimizer state) moves to a small table of
// long-lived buffers, so memory stays bounded by what a window can need plus what is live.
// Accesses (launch arguments, copy and memset ranges, on which stream) are kept alongside when
// asked for: the swapper needs them, the pool does not.
//
// A window [begin, begin + period) lists:
//  - entries: every allocation made in it (of one owner), in order, with its lifetime (a free
//    after the window included, if already seen) laid out in the wrap view for the planner:
//    pooled when it is device or stream-ordered memory, was freed, and needs at most kMaxSlots
//    slots (trace/lifetimes.hpp wrap_lifetime, shared with the offline to_problem);
// Not thread-safe: the observer's owner serialises every call.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "memtool/engine/window.hpp"

namespace memtool::engine {

// Whether `earlier` is a steady iteration as far as `later`, the one after it, can tell: the
// same allocations at the same ticks, each freed at the same tick of its iteration (or, where
// `later`'s copy is not freed yet, after the end of `earlier`'s), for all but 5% of them. A
// period of equal tokens can still pair different buffers (a warm-up batch allocated where the
// prefetched one will be), and a plan of that window would keep missing. Windows with different
// numbers of allocations (noise) cannot be compared and agree.
[[nodiscard]] bool windows_agree(const IterationWindow& earlier, const IterationWindow& later);

class WindowRecorder {
 public:
  static constexpr std::uint32_t kMaxSlots = 4;

  WindowRecorder(std::uint64_t retain_ticks, bool keep_accesses)
      : retain_ticks_(retain_ticks), keep_accesses_(keep_accesses) {}

  // An allocation at `tick`; returns its record id (for on_free and on_access).
  std::uint64_t on_alloc(std::uint64_t tick, std::uint64_t size, MemoryKind kind, StreamId stream, std::uint32_t owner);
  void on_free(std::uint64_t record, std::uint64_t tick);
  void on_access(std::uint64_t record, std::uint64_t tick, StreamId stream, AccessKind kind);

  // The window of `owner` at [begin, begin + period), or nullopt when its records are gone.
  [[nodiscard]] std::optional<IterationWindow> window(std::uint64_t begin, std::uint64_t period, std::uint32_t owner,
                                                      std::uint64_t alignment) const;
  [[nodiscard]] std::size_t retained() const { return records_.size() + long_lived_.size(); }
  [[nodiscard]] bool keeps_accesses() const { return keep_accesses_; }

 private:
  static constexpr std::uint64_t kNever = WindowEntry::kNever;
  struct Record {
    std::uint64_t alloc_tick;
    std::uint64_t free_tick;
    std::uint64_t size;
    MemoryKind kind;
    std::uint32_t owner;
    StreamId stream;
  };
  struct Access {
    std::uint64_t record;
    std::uint64_t tick;
    StreamId stream;
    AccessKind kind;
  };
  void trim(std::uint64_t now);

  std::uint64_t retain_ticks_;
  bool keep_accesses_;
  std::uint64_t first_id_ = 0;        // id of records_.front()
  std::uint64_t dropped_before_ = 0;  // records allocated before this tick may be gone
  std::deque<Record> records_;
  std::unordered_map<std::uint64_t, Record> long_lived_;
  std::deque<Access> accesses_;
};

}  // namespace memtool::engine
