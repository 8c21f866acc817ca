// The in-process steady-state recorder: the allocation/free sequence exactly as the hooks see
// it, in alloc/free index time (one tick per allocation or free, the paper's index). Given an
// iteration window [begin, begin + period) it builds what the engine plans and applies:
//  - entries: every allocation of the window in order (the k-th allocation of an iteration is
//    matched to entries[k]: size, kind, stream), each pooled or passed through;
//  - problem: the planner Problem of the pooled entries (id = entry index), in the wrap
//    (cyclic) view: a buffer freed after the window, with lifetime L = free - alloc shorter than
//    the period, occupies [alloc, period) and [0, free - period) of the same slot, which is where
//    the previous iteration's copy of it lives — the steady state, exactly.
// One living longer than a period gets ceil(L / period) slots live over the whole window (the
// paper's doubling, generalised; at hand-out the first free slot is taken).
// Passed through (not pooled): allocations never freed (they outlive the loop: persistent or
// leaked), ones needing more than kMaxSlots slots, and memory kinds the pool cannot stand in
// for (managed, VMM, pinned host).
//
// trace/analysis's to_problem does the same from a TraceModel built from whole events; in the
// process only sizes and positions are known, and the engine also needs the per-entry match
// data, so the window is built here directly from the recorded positions (same conventions:
// half-open intervals, wrap view, requested sizes, one alignment).
//
// Memory is bounded: records older than `retain_ticks` ticks are dropped; a window reaching
// back that far is refused (nullopt). Not thread-safe: the engine holds its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "memtool/pool/device_ops.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::pool {

struct WindowEntry {
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;
  StreamId stream = 0;
  bool pooled = false;
  // Pooled: problem.buffers[problem_index, problem_index + slots) are this allocation's slots.
  // One, unless it lives longer than a period (a prefetched batch): then ceil(L / period)
  // copies from consecutive iterations are live at once, each slot over the whole window.
  std::uint64_t problem_index = 0;
  std::uint32_t slots = 0;
};

struct IterationWindow {
  std::uint64_t begin = 0;   // tick of the window's first event
  std::uint64_t period = 0;  // ticks per iteration
  std::vector<WindowEntry> entries;
  trace::Problem problem;
};

class SteadyStateRecorder {
 public:
  static constexpr std::uint32_t kMaxSlots = 4;

  explicit SteadyStateRecorder(std::uint64_t retain_ticks) : retain_ticks_(retain_ticks) {}

  // Ticks seen so far (also the tick the next event gets); never reset.
  [[nodiscard]] std::uint64_t ticks() const { return ticks_; }
  // Records an allocation at tick ticks(); returns its record id (for on_free).
  std::uint64_t on_alloc(std::uint64_t size, MemoryKind kind, StreamId stream);
  // Records the free of a recorded allocation at tick ticks(); an id older than the retained
  // records (or from before reset()) only takes a tick.
  void on_free(std::uint64_t record_id);
  // Forgets the records (not the tick count or the id sequence).
  void reset();

  [[nodiscard]] std::optional<IterationWindow> window(std::uint64_t begin, std::uint64_t period,
                                                      std::uint64_t alignment) const;
  [[nodiscard]] std::size_t retained() const { return records_.size(); }

 private:
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  struct Record {
    std::uint64_t alloc_tick;
    std::uint64_t free_tick;
    std::uint64_t size;
    MemoryKind kind;
    StreamId stream;
  };
  void trim();

  std::uint64_t retain_ticks_;
  std::uint64_t ticks_ = 0;
  std::uint64_t first_id_ = 0;  // id of records_.front()
  std::deque<Record> records_;
};

}  // namespace memtool::pool
