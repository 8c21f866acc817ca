// graphed_train: a PyTorch-shaped CUDA-graph training program on the driver API. It does what
// torch.cuda.graph's documentation asks of a program: eager warm-up steps on a side stream, then
// the step captured on that side stream (forward, loss and backward, with stream-ordered
// allocations inside the capture, a fork to a second stream joined back, and a loader thread
// making calls a capture forbids meanwhile), replayed on the current stream with the batch copied
// into a static input before each replay and the optimizer (SGD with momentum) run eagerly after
// it. `--graphs split` captures the forward and the backward as two graphs with the loss eager
// between them, as torch.cuda.make_graphed_callables does.
//
// Every step, eager or replayed, prints "iter I loss L checksum 0xC" (FNV-1a over the
// parameters after its update). The math is the same eager or captured, so a run prints the same
// lines whatever --warmup says: what a test compares an emulator's graphs and memtool with.
#pragma once

#include "../common/driver_api.hpp"
#include "graphed_options.hpp"

namespace apps::graphed {

inline constexpr GraphOptionDefaults torch_graph_defaults{{"graphed_train", 32, 0.05f, false}, true};

int train_torch_graphed(const DriverApi& api, const GraphOptions& options);

}  // namespace apps::graphed
