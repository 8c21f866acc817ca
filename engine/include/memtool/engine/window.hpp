// One iteration of the program as the engine plans it: every allocation of the window in
// order (the k-th allocation of an iteration is matched to entries[k]), with its lifetime and,
// when recorded, the accesses of launches, copies and memsets to it (for the swapper), and the
// planner Problem of the entries that can be pooled.
//
// Time is the observer's tick: one per signature event (allocation, free, launch, copy,
// memset), the same axis the iteration detector counts. Ticks in a window are relative to its
// first one. Lifetimes are laid out in the wrap (cyclic) view shared with the offline
// to_problem (memtool/trace/lifetimes.hpp: wrap_lifetime).
#pragma once

#include <cstdint>
#include <vector>

#include "memtool/engine/device.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::engine {

enum class AccessKind : std::uint8_t { launch, copy, memset };

struct WindowAccess {
  std::uint64_t tick = 0;  // relative to the window's first tick
  StreamId stream = 0;
  AccessKind kind = AccessKind::launch;
};

struct WindowEntry {
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;
  StreamId stream = 0;
  std::uint64_t alloc_tick = 0;      // relative
  std::uint64_t free_tick = kNever;  // relative; may lie past the window; kNever: not freed yet
  bool pooled = false;
  // Pooled: problem.buffers[problem_index, problem_index + slots) are this allocation's slots:
  // one, unless it lives longer than a period, then one per iteration whose copy is live.
  std::uint64_t problem_index = 0;
  std::uint32_t slots = 0;
  std::vector<WindowAccess> accesses;  // in tick order, when the observer keeps them
};

struct IterationWindow {
  std::uint64_t begin = 0;   // absolute tick of the window's first event
  std::uint64_t period = 0;  // ticks per iteration
  std::uint32_t owner = 0;   // the runtime (CUDA context) whose allocations these are
  std::vector<WindowEntry> entries;
  trace::Problem problem;
  bool accesses_recorded = false;
};

}  // namespace memtool::engine
