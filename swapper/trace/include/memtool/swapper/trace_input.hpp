// One iteration of a trace (a TraceModel and its Iterations) as the swapper's Iteration.
//
// Ops are the iteration's launches, graph launches, copies and memsets, in event order. Buffers
// are the device buffers allocated in the iteration (one freed in the next iteration crosses the
// boundary: its accesses there are read from the next iteration's events, which must have the
// same shape), the persistent ones (weights, optimizer state) and those living longer than an
// iteration (kept resident as if persistent). A buffer allocated and freed with no op in between
// occupies no op's time and is left out. Accesses come from the buffers each op touched: a launch
// reads and writes, a memset writes, a copy writes its destination and reads its source.
//
// A graph launch touches buffers nobody recorded, so in an iteration with one nothing is
// swappable. An input with no launches at all (a PyTorch memory snapshot records allocations
// only) gets one op per allocation and free instead, under the assumption that a buffer is
// written right after its allocation and read last right before its free: true of activations,
// optimistic for anything else (noted in TraceInput::notes).
//
// Op durations (ComputeModel):
//   gpu    GPU times from CUPTI where the trace has them (ops without one: the bytes model);
//   host   the host-time gap from each op's event to the next op's: the time the program took
//          to issue it, an approximation of GPU time that is only right for a GPU-bound program
//          that synchronises often;
//   bytes  bytes touched (the sizes of the buffers it touches) at a stated rate, at least a
//          floor per op (launch overhead): a memory-bound estimate, the only choice for inputs
//          without times;
//   automatic  gpu when most ops have a GPU time, else host, else (no ops: a snapshot) bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/swapper/iteration.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"

namespace memtool::swapper {

enum class ComputeModel : std::uint8_t { automatic, gpu, host, bytes };
[[nodiscard]] std::string_view to_string(ComputeModel model);

struct TraceInputOptions {
  ComputeModel compute = ComputeModel::automatic;
  double bytes_per_ns = 2000.0;     // bytes model: 2 TB/s of bytes touched per op
  std::uint64_t min_op_ns = 5'000;  // bytes model: at least this per op
  // Which iteration (index into Iterations::spans); default: the first steady one followed by
  // another of the same length (so that buffers crossing into it can be followed).
  std::optional<std::size_t> iteration;
};

struct TraceInput {
  Iteration iteration;  // Buffer::id is the trace's BufferId value
  std::size_t iteration_index = 0;
  std::uint64_t first_event = 0;
  std::uint64_t end_event = 0;
  ComputeModel compute = ComputeModel::bytes;  // the model the durations came from
  bool pseudo_ops = false;                     // allocations and frees stood in for ops
  std::uint64_t gpu_timed_ops = 0;
  std::uint64_t unswappable_buffers = 0;
  std::uint64_t long_lived_buffers = 0;  // living longer than an iteration, kept resident
  std::uint64_t skipped_buffers = 0;     // live during no op
  std::vector<std::string> notes;        // assumptions the numbers rest on
};

// Throws std::invalid_argument when the input has no iteration or `options.iteration` is out of
// range.
[[nodiscard]] TraceInput to_swap_input(const trace::TraceModel& model, const trace::Iterations& iterations,
                                       const TraceInputOptions& options = {});

}  // namespace memtool::swapper
