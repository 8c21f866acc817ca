// SyntheticTrace (see synthetic_trace.hpp).
#include "synthetic_trace.hpp"

#include <array>

namespace memtool::trace::test {

SyntheticTrace::SyntheticTrace() {
  model_.on_string(StringId{0}, "gemm_kernel");
  model_.on_string(StringId{1}, "train.py");
  model_.on_string(StringId{2}, "step");
  const std::array<StackFrame, 1> frames{StackFrame{0, StringId{2}, StringId{1}, 12}};
  model_.on_stack(StackId{0}, frames);
}

EventHeader SyntheticTrace::next() {
  EventHeader h;
  h.seq = seq_;
  h.time_ns = 1'000'000 + 1000 * seq_;
  h.thread = ThreadId{1};
  ++seq_;
  return h;
}

void SyntheticTrace::alloc(std::uint64_t address, std::uint64_t size, std::uint64_t stream, bool with_stack) {
  model_.on_alloc(
      AllocEvent{next(), address, size, MemoryKind::device, StreamHandle{stream}, with_stack ? StackId{0} : StackId{}});
}

void SyntheticTrace::free(std::uint64_t address, std::uint64_t stream) {
  model_.on_free(FreeEvent{next(), address, MemoryKind::device, StreamHandle{stream}});
}

void SyntheticTrace::launch(std::uint64_t stream, std::uint64_t touched_address) {
  const std::array<std::uint64_t, 1> touched{touched_address};
  model_.on_launch(LaunchEvent{next(), StringId{0}, StreamHandle{stream}, touched});
}

void SyntheticTrace::copy(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream) {
  model_.on_copy(CopyEvent{next(), dst, 0, bytes, CopyKind::h2d, true, StreamHandle{stream}});
}

void SyntheticTrace::mark() { model_.on_iteration_mark(IterationMarkEvent{next(), marks_++}); }

TraceModel& three_iterations(SyntheticTrace& t) {
  constexpr std::uint64_t kWeight = 0x7000'0000'0000, kAct = 0x7000'1000'0000, kSmall = 0x7000'2000'0000;
  t.alloc(kWeight, std::uint64_t{64} << 20);
  t.copy(kWeight, std::uint64_t{64} << 20, 0);
  for (int k = 0; k < 3; ++k) {
    t.mark();
    t.alloc(kAct, std::uint64_t{1} << 20);
    t.alloc(kSmall, 4096, 7);
    t.launch(7, kAct);
    t.free(kSmall, 7);
    t.free(kAct);
  }
  return t.model();
}

PoolPlanView two_buffer_plan() {
  PoolPlanView plan;
  plan.iteration = 1;
  plan.algorithm = "best";
  plan.problem.buffers = {{1, 1 << 20, 512, {{1, 5}}, false}, {2, 4096, 512, {{2, 4}}, false}};
  plan.problem.time_horizon = 6;
  plan.offsets = {0, 1 << 20};
  plan.pool_bytes = (1 << 20) + 4096;
  plan.lower_bound_bytes = plan.pool_bytes;
  return plan;
}

}  // namespace memtool::trace::test
