// The save_on_cpu baseline: PyTorch's torch.autograd.graph.save_on_cpu(pin_memory=True).
//
// Its pack hook copies every tensor saved for backward to host memory when it is saved, on the
// compute stream, and its unpack hook copies it back, on the compute stream, when backward needs
// it. Here: every non-persistent buffer idle across the peak (saved in the forward pass, used
// again in the backward pass) goes out right after its last access before the peak, the next op
// waiting for the copy, and comes back when its next access is issued, that access waiting for
// it. Parameters saved for backward are copied by PyTorch too but stay on the device (the module
// holds them), so they cost time and save nothing; they are left out, which favours the baseline,
// as does modelling pinned memory (pageable copies are slower).
#include "strategies.hpp"

namespace memtool::swapper::detail {

PlanResult plan_save_on_cpu(const PlanInput& input) {
  Schedule schedule;
  for (const Gap& gap : input.gaps) {
    if (input.iteration.buffers[gap.buffer].persistent || !spans_peak(input, gap)) continue;
    Swap swap;
    swap.gap = gap;
    swap.out_after_op = gap.from_op;
    swap.out_wait_op = gap.from_op + 1;  // the copy runs on the compute stream
    swap.in_at_op = gap.to_op;           // and so does the copy back
    schedule.swaps.push_back(swap);
  }
  Simulator simulator;
  return evaluate(input, std::move(schedule), simulator);
}

}  // namespace memtool::swapper::detail
