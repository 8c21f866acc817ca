// What the GPU did, from the GPU times the CUPTI tracer put in the trace (TraceModel::gpu_times):
// how long the GPU was busy in a window of events, which kernels took the most GPU time, how
// long each stream sat idle between its work, and how busy the copy engines were.
//
// A window is a range of event indices [first_event, end_event): the GPU times of the events in
// it (the GPU side of an iteration's launches, copies and memsets, whenever they ran). Busy time
// is the length of the union of their intervals over all streams; idle time on a stream is the
// sum of the gaps between its consecutive intervals (from its first start to its last end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtool/trace/model.hpp"

namespace memtool::trace {

struct KernelGpuTime {
  StringId kernel;
  std::uint64_t launches = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t max_ns = 0;
};

struct StreamGpuTime {
  std::uint32_t device = 0;
  std::uint32_t cupti_stream = 0;
  std::uint64_t handle = 0;  // the program's stream handle, from the events (0: legacy or unknown)
  std::uint64_t items = 0;   // kernels, copies and memsets
  std::uint64_t busy_ns = 0;
  std::uint64_t idle_ns = 0;
  std::uint64_t gaps = 0;  // gaps longer than zero
  std::uint64_t longest_gap_ns = 0;
};

struct CopyEngineTime {
  CopyKind direction = CopyKind::unknown;
  std::uint64_t copies = 0;
  std::uint64_t bytes = 0;
  std::uint64_t busy_ns = 0;  // union of the direction's copies
};

struct GpuSummary {
  std::uint64_t timed_launches = 0;  // launch events with a GPU time
  std::uint64_t timed_copies = 0;
  std::uint64_t timed_memsets = 0;
  std::uint64_t busy_ns = 0;                 // union of every interval in the window
  std::uint64_t span_ns = 0;                 // first start to last end
  std::vector<KernelGpuTime> kernels;        // most total GPU time first, at most `rows`
  std::vector<StreamGpuTime> streams;        // by device and stream id
  std::vector<CopyEngineTime> copy_engines;  // directions with copies, in CopyKind order
};

// Indexes the model's joined GPU times by event, once; then answers per window.
class GpuTimeIndex {
 public:
  explicit GpuTimeIndex(const TraceModel& model);

  [[nodiscard]] bool empty() const { return by_event_.empty(); }
  // Launch events in the whole trace with a GPU time.
  [[nodiscard]] std::uint64_t timed_launches() const { return timed_launches_; }
  [[nodiscard]] std::uint64_t busy_ns(std::uint64_t first_event, std::uint64_t end_event) const;
  [[nodiscard]] GpuSummary summarize(std::uint64_t first_event, std::uint64_t end_event, std::size_t rows) const;

 private:
  [[nodiscard]] std::pair<std::size_t, std::size_t> window(std::uint64_t first_event, std::uint64_t end_event) const;

  const TraceModel& model_;
  std::vector<std::uint32_t> by_event_;  // indices into model.gpu_times() of joined ones, by event
  std::uint64_t timed_launches_ = 0;
};

}  // namespace memtool::trace
