// Small hand-made traces for the export tests: a model fed event by event, as the trace reader
// would feed it, with known buffers, streams, stacks and iteration marks.
#pragma once

#include <cstdint>
#include <string_view>

#include "memtool/trace/export.hpp"
#include "memtool/trace/model.hpp"

namespace memtool::trace::test {

class SyntheticTrace {
 public:
  SyntheticTrace();
  void alloc(std::uint64_t address, std::uint64_t size, std::uint64_t stream = 0, bool with_stack = true);
  void free(std::uint64_t address, std::uint64_t stream = 0);
  void launch(std::uint64_t stream, std::uint64_t touched_address);  // gemm_kernel
  void copy(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream);
  void mark();
  TraceModel& model() { return model_; }

 private:
  EventHeader next();
  TraceModel model_;
  std::uint64_t seq_ = 0;
  std::uint64_t marks_ = 0;
};

// Three marked iterations on two streams: each allocates 1 MiB and 4 KiB (stream 7), launches a
// kernel over them and frees both; a 64 MiB weight lives from before the loop to the end.
TraceModel& three_iterations(SyntheticTrace& trace);

// A plan of iteration 1 of three_iterations: its two buffers side by side (pool = lower bound).
PoolPlanView two_buffer_plan();

}  // namespace memtool::trace::test
