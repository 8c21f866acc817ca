// GpuTimeStore: the GPU times the CUPTI tracer measured, for the engine inside the process (the
// swapper's kernel durations). CUDA-free, so any engine library can link it.
//
// Keyed by the event seq of the launch, copy or memset each time belongs to — the seq the
// recorder gave that call's event (the trace's `seq`, and the external correlation id the tracer
// pushed around it). The store keeps the most recent `capacity` joined records (a direct-mapped
// table: seq modulo capacity), so a lookup is O(1) and memory is bounded; an older seq may have
// been overwritten, and a seq whose work has not been delivered yet (the tracer flushes at
// iteration boundaries and every 200 ms) is not found either. Totals are exact over the run.
// Thread-safe: the tracer adds from its threads, the engine reads from its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::cupti {

struct GpuSpan {
  trace::GpuWorkKind kind = trace::GpuWorkKind::kernel;
  std::uint64_t start_ns = 0;  // the trace's clock (host CLOCK_MONOTONIC)
  std::uint64_t end_ns = 0;
  [[nodiscard]] std::uint64_t duration_ns() const { return end_ns - start_ns; }
};

struct GpuTimeTotals {
  std::uint64_t records = 0;    // joined records added so far (grows: a cheap "anything new?")
  std::uint64_t kernel_ns = 0;  // summed durations per kind (not a union: streams overlap)
  std::uint64_t copy_ns = 0;
  std::uint64_t memset_ns = 0;
};

class GpuTimeStore {
 public:
  // `capacity`: records kept for lookup, rounded up to a power of two (at least 1).
  explicit GpuTimeStore(std::size_t capacity = std::size_t{1} << 16);

  // Records with no event (work that bypassed memtool's hooks) are ignored.
  void add(std::span<const trace::GpuTimeRecord> records);

  // The GPU time of the event with this seq, if delivered and still kept.
  [[nodiscard]] std::optional<GpuSpan> find(std::uint64_t event_seq) const;
  [[nodiscard]] GpuTimeTotals totals() const;

 private:
  struct Slot {
    std::uint64_t seq_plus_one = 0;  // 0: empty
    GpuSpan span;
  };
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::uint64_t mask_;
  GpuTimeTotals totals_;
};

}  // namespace memtool::cupti
