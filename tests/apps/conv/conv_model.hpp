// The convolution training program: 12×12×3 images → 3×3 conv (8 channels, im2col + matmul) →
// ReLU → 2×2 max pool → linear head (288 → 4) → softmax cross-entropy, SGD. Two non-blocking
// streams: `compute` runs the network; `side` uploads the batch and computes and applies the
// head's gradients while `compute` runs the convolution's backward pass; events order them.
// Temporaries are stream-ordered (cuMemAllocAsync/cuMemFreeAsync), some allocated on one stream
// and freed on the other; the activations use cuMemAlloc_v2 and are freed after the iteration.
//
// Allocation pattern (tests/apps/tests assert it through FAKECUDA_STATS):
//   persistent: 4 cuMemAlloc_v2 (conv W b, head W b), 3 cuMemAllocHost_v2 staging buffers,
//               2 streams, 4 events;
//   per iteration: 4 cuMemAlloc_v2 + 13 cuMemAllocAsync (17 allocations, 17 frees), 19 launches,
//   host→device: the initial weights once, then batch*(432+1)*4 bytes per iteration.
#pragma once

#include "../common/driver_api.hpp"
#include "../common/options.hpp"

namespace apps {

inline constexpr OptionDefaults conv_defaults{"conv_train", 32, 0.1f, false};

// Trains and prints "iter I loss L checksum 0xC" per iteration; returns the exit status.
int train_conv(const DriverApi& api, const Options& options);

}  // namespace apps
