// Lifetimes: live bytes over time, per-iteration buffer lifetimes, and the planner problem of
// one iteration.
//
// Time is the event index. A buffer allocated by event a and freed by event f is live at
// every event index e with a <= e < f, i.e. the half-open interval [a, f) (never freed:
// f = end of trace). Live bytes after event e are the requested sizes of all buffers live at
// e, persistent ones included.
//
// Persistent buffers: allocated before the steady loop (Iterations::steady_start) and never
// freed, or freed only in the teardown after the last complete steady iteration — weights,
// optimizer state. Leaked: allocated in the steady loop and never freed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::trace {

// Live bytes after each event of the whole trace (size = event_count()).
[[nodiscard]] std::vector<std::uint64_t> live_bytes_curve(const TraceModel& model);

struct LiveBytesPeak {
  std::uint64_t bytes = 0;
  std::uint64_t event = 0;  // first event index where the peak is reached
};
// Highest live bytes in events [first, end) of a curve from live_bytes_curve().
[[nodiscard]] LiveBytesPeak peak_live_bytes(std::span<const std::uint64_t> curve, std::uint64_t first,
                                            std::uint64_t end);

// One past the last event of the last complete steady iteration (kNever when there is none).
[[nodiscard]] std::uint64_t steady_end(const Iterations& iterations);
[[nodiscard]] bool is_persistent(const BufferRecord& buffer, const Iterations& iterations);
[[nodiscard]] std::vector<BufferId> persistent_buffers(const TraceModel& model, const Iterations& iterations);
[[nodiscard]] std::vector<BufferId> leaked_buffers(const TraceModel& model, const Iterations& iterations);

// Per-iteration numbers the report's table needs, for every span, in one pass.
struct IterationSummary {
  std::size_t index = 0;  // index in Iterations::spans
  std::uint64_t first_event = 0;
  std::uint64_t end_event = 0;
  bool warm_up = false;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t live_at_start = 0;  // live bytes just before first_event
  std::uint64_t live_at_end = 0;    // live bytes after the iteration's last event
  LiveBytesPeak peak;               // absolute event index
};
[[nodiscard]] std::vector<IterationSummary> summarize_iterations(const TraceModel& model, const Iterations& iterations);
// The same with the curve from live_bytes_curve(model) already at hand.
[[nodiscard]] std::vector<IterationSummary> summarize_iterations(const TraceModel& model, const Iterations& iterations,
                                                                 std::span<const std::uint64_t> curve);

// One buffer as seen from one iteration window [first_event, end_event).
struct BufferLifetime {
  BufferId buffer;
  std::uint64_t size = 0;
  // Clipped to the window, relative to its first event: [max(a, first), min(f, end)) - first.
  LiveInterval live;
  // Relative event indices of the launches, copies and memsets in the window that touched it.
  std::vector<std::uint64_t> accesses;
  bool alive_at_start = false;  // allocated before the window (crosses the start boundary)
  bool alive_at_end = false;    // not freed inside the window (crosses the end boundary)
  bool persistent = false;      // allocated before the steady loop, never freed
  [[nodiscard]] bool crosses_iteration() const { return !persistent && (alive_at_start || alive_at_end); }
};

struct IterationLifetimes {
  std::size_t index = 0;
  std::uint64_t first_event = 0;
  std::uint64_t end_event = 0;
  std::vector<BufferLifetime> buffers;    // every buffer live at some event of the window, by id
  std::vector<std::uint64_t> live_bytes;  // after each event of the window (relative index)
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t live_at_start = 0;
  std::uint64_t live_at_end = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_event = 0;        // absolute event index of the peak
  std::uint64_t persistent_bytes = 0;  // bytes of persistent buffers live in the window
};

// `index` < iterations.spans.size() (std::out_of_range otherwise, as for to_problem).
[[nodiscard]] IterationLifetimes iteration_lifetimes(const TraceModel& model, const Iterations& iterations,
                                                     std::size_t index);

// Report queries over the whole trace.
// Buffers live at event e, largest first (ties: lower id), at most `count`.
[[nodiscard]] std::vector<BufferId> largest_live_at(const TraceModel& model, std::uint64_t event, std::size_t count);
// Buffers by lifetime length (free - alloc; never freed: to the end of the trace), longest
// first (ties: larger size, then lower id), at most `count`. Persistent ones are skipped when
// `iterations` is given, since they trivially live longest.
[[nodiscard]] std::vector<BufferId> longest_lifetimes(const TraceModel& model, std::size_t count,
                                                      const Iterations* iterations = nullptr);

// --- The planner problem of one iteration -----------------------------------------------------
//
// clip: every buffer live in the window, intervals clipped to it; buffers from the previous
//   iteration appear with their own ids over [0, f); buffers freed after the window extend to
//   its end; crosses_iteration marks both. An exact picture of one window (the CSV fixtures
//   are made this way), but not a plan that can repeat: a buffer from iteration k-1 is placed
//   where iteration k-1's plan put it.
// wrap (default, for a pool reused every iteration): only buffers allocated in the window; one
//   freed at f after the window, with lifetime L = f - a shorter than the window W, becomes
//   intervals [0, f - first - W) and [a - first, W) in the same slot: its copy from the previous
//   iteration (allocated at the same point of the cycle) uses the same address, so the steady
//   state is modelled exactly. If L >= W, copies of consecutive iterations overlap, and it
//   becomes ceil(L / W) slots live over the whole window (the paper's doubling, generalised);
//   the extra slots have id (buffer id | k << kShadowSlotShift), k = 1, 2, ... A buffer never
//   freed but allocated in the window (a leak, or the trace ended) spans [a - first, W).
// Both: persistent buffers (and older never-freed ones) are left out unless include_persistent,
// in which case they span [0, W) without crosses_iteration. Sizes are the requested sizes.
enum class CrossingMode : std::uint8_t { wrap, clip };
// events: every event is one time step. alloc_free: only allocations and frees count (the
// paper's index and the fixtures' CSV), giving a smaller horizon for the same ordering.
enum class TimeAxis : std::uint8_t { events, alloc_free };

inline constexpr unsigned kShadowSlotShift = 56;

struct ProblemOptions {
  CrossingMode crossing = CrossingMode::wrap;
  TimeAxis time = TimeAxis::events;
  bool include_persistent = false;
};

// The wrap view of one buffer allocated at `begin` (relative to the window, < window) and
// freed at `end` (relative; may lie past the window): its intervals in the window, and how many
// slots (copies from consecutive iterations live at once) it needs. The one layout both the
// offline to_problem and the in-process engine's windows use.
struct WrappedLifetime {
  std::vector<LiveInterval> intervals;  // one slot's intervals (every slot: [0, window) when slots > 1)
  std::uint64_t slots = 1;
  bool crosses_iteration = false;
};
[[nodiscard]] WrappedLifetime wrap_lifetime(std::uint64_t begin, std::uint64_t end, std::uint64_t window);

[[nodiscard]] Problem to_problem(const TraceModel& model, const Iterations& iterations, std::size_t index,
                                 std::uint64_t alignment, const ProblemOptions& options = {});

// Maximum over time of the live bytes of a problem (the planner's lower bound, LB); each
// request counts once at any time even if its intervals were to overlap.
[[nodiscard]] std::uint64_t problem_lower_bound(const Problem& problem);

}  // namespace memtool::trace
