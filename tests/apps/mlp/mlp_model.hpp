// The MLP training program: 32 → 64 → 32 → 8 with ReLU, softmax cross-entropy, plain SGD, on the
// default stream, every per-iteration buffer from cuMemAlloc_v2 and freed with cuMemFree_v2 as
// soon as it is dead (what PyTorch does with PYTORCH_NO_CUDA_MEMORY_CACHING=1).
//
// Allocation pattern (tests/apps/tests assert it through FAKECUDA_STATS):
//   persistent: 6 cuMemAlloc_v2 (W1 b1 W2 b2 W3 b3), freed at exit;
//   per iteration: 19 cuMemAlloc_v2 + 19 cuMemFree_v2, 25 launches,
//   host→device: the initial weights once, then batch*(32+1)*4 bytes per iteration.
#pragma once

#include "../common/driver_api.hpp"
#include "../common/options.hpp"

namespace apps {

inline constexpr OptionDefaults mlp_defaults{"mlp_train", 64, 1.0f, false};

// Trains and prints "iter I loss L checksum 0xC" per iteration; returns the exit status.
int train_mlp(const DriverApi& api, const Options& options);

}  // namespace apps
