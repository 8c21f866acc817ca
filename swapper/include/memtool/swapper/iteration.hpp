// The swapper's input: one training iteration as an op sequence, the buffers those ops touch,
// and the host link that swaps go over. No trace types and no CUDA: the offline converter
// (swapper/trace) and the in-process engine both fill these plain structs.
//
// Time is the op sequence: the launches, copies and memsets of one iteration in issue order,
// each with the time it keeps the GPU busy. The simulator runs them one after another (one
// compute timeline; concurrency between the program's own streams is not modelled, which
// leaves more compute to hide transfers behind than two overlapping streams would). A buffer
// is allocated just before one op is issued and freed just after another completes; between
// them it occupies device memory unless a swap has moved it out. Persistent buffers (weights,
// optimizer state) are live the whole time. A buffer allocated late in one iteration and freed
// early in the next has alloc_before_op > free_after_op: it is live over [alloc, n) and, as the
// previous iteration's copy, over [0, free].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memtool::swapper {

enum class OpKind : std::uint8_t { launch, copy, memset };

struct Op {
  std::uint64_t duration_ns = 0;  // GPU time (measured, or a model's estimate)
  std::uint64_t stream = 0;       // the program's stream (kept for the executor; not modelled)
  OpKind kind = OpKind::launch;
  // Work that may reach every buffer (a launch with no pointer argument at all: the executor
  // cannot tell which it reads). The executor keeps every buffer still under it: its stream waits
  // for the copies in motion and leaves under way are called off (simulate.hpp, as the executor).
  bool reaches_all = false;
  // The program's own host time (Iteration::host_timed): from this op's issue to the next op's
  // (the iteration's end for the last), not counting memtool's own host time, memtool's waits
  // for the GPU, nor the program's waits in synchronisation calls (`syncs`).
  std::uint64_t host_ns = 0;
  // The program waited on the host for the GPU (a stream, context or event synchronisation)
  // after this op and before the next: the next is issued no earlier than this one has ended.
  bool syncs = false;
  // Bytes the program allocated before this op and freed before issuing it, no op between (live
  // during no op, so no Buffer holds them). The executor's rule still counts them among the
  // allocations ahead (simulate.hpp, as the executor); the planners leave them out.
  std::uint64_t transient_bytes = 0;
};

enum class AccessMode : std::uint8_t { read = 1, write = 2, read_write = 3 };

struct Access {
  std::uint32_t op = 0;  // index into Iteration::ops
  AccessMode mode = AccessMode::read_write;
};

struct Buffer {
  std::uint64_t id = 0;    // the caller's id (a trace BufferId, an engine slot); not interpreted
  std::uint64_t size = 0;  // bytes (on the device: its footprint)
  // The bytes a copy of it moves over the link, where fewer than `size` (the executor copies the
  // allocation's bytes, not the rounded footprint it maps); 0: `size`. Memory counts `size`.
  std::uint64_t copy_bytes = 0;
  std::uint32_t alloc_before_op = 0;  // ignored when persistent
  std::uint32_t free_after_op = 0;    // ignored when persistent
  bool persistent = false;            // lives across iterations (allocated before the loop, never freed)
  // False when the observer cannot prove it saw every access (a pointer it could not see, a
  // graph launch): such a buffer is never swapped.
  bool swappable = true;
  std::vector<Access> accesses;  // sorted by op, at most one per op

  [[nodiscard]] bool crosses_iteration() const { return !persistent && alloc_before_op > free_after_op; }
  // What a copy of it moves (copy_bytes, else size).
  [[nodiscard]] std::uint64_t moved_bytes() const { return copy_bytes != 0 && copy_bytes < size ? copy_bytes : size; }
  // Live while op `op` runs.
  [[nodiscard]] bool live_at(std::uint32_t op) const;
};

struct Iteration {
  std::vector<Op> ops;
  std::vector<Buffer> buffers;
  // The ops carry the program's host times (Op::host_ns, Op::syncs): the simulator runs the host
  // on its own timeline, ahead of the GPU where the program's host is (simulate.hpp). False: the
  // host issues each op as the one before ends (a GPU-bound program; traces, older problems).
  bool host_timed = false;
};

// The link between device and host memory: one copy engine per direction, each running one copy
// at a time (in issue order). A copy of b bytes takes latency + b / bandwidth; while both
// directions move data at once, each runs at its bandwidth divided by duplex_factor.
struct Link {
  double d2h_bytes_per_ns = 55.0;  // 55 GB/s: an H200's PCIe 5 link, measured per direction
  double h2d_bytes_per_ns = 55.0;
  std::uint64_t d2h_latency_ns = 5'000;
  std::uint64_t h2d_latency_ns = 5'000;
  double duplex_factor = 1.0;  // >= 1
  // The slowest link accepted: 1 byte per second, the least `--link` can say. Slower ones are
  // refused, since copy times past 1e308 ns are infinite and a copy would never end.
  static constexpr double kMinBytesPerNs = 1e-9;

  // Uncontended copy times.
  [[nodiscard]] double d2h_ns(std::uint64_t bytes) const;
  [[nodiscard]] double h2d_ns(std::uint64_t bytes) const;
};

// Empty when well formed; else what is wrong, naming the buffer or op.
[[nodiscard]] std::string validate(const Iteration& iteration);
[[nodiscard]] std::string validate(const Link& link);

// The iteration's time without swapping: its op durations summed; host-timed, from its start
// to where both the host and the GPU are past its last op, the host issuing each op its host
// time after the one before (and waiting for the GPU where the program synchronised), the GPU
// running each op from its issue once the one before has ended. `sync_ns`: the host's time to
// come back from a synchronisation it waited in (HostCosts::per_sync_ns); not host-timed, the GPU
// idles that long after each op that syncs.
[[nodiscard]] std::uint64_t base_time_ns(const Iteration& iteration, std::uint64_t sync_ns = 0);
// Live bytes while each op runs (persistent buffers included), and their maximum.
[[nodiscard]] std::vector<std::uint64_t> live_bytes_per_op(const Iteration& iteration);
[[nodiscard]] std::uint64_t plain_peak_bytes(const Iteration& iteration);

}  // namespace memtool::swapper
