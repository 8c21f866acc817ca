// The MLP of the graphed apps (32 → H → H/2 → 8, ReLU, softmax cross-entropy, SGD with momentum),
// written as the pieces a framework captures or launches eagerly: forward, loss, backward and the
// optimizer step, each a sequence of driver calls on one stream. Every temporary is a stream-
// ordered allocation (cuMemAllocAsync/cuMemFreeAsync on that stream), as PyTorch allocates under
// `backend:cudaMallocAsync`: run eagerly they are ordinary pool memory, captured they become the
// graph's memory nodes. The parameters, the momentum buffers and the static inputs a graph reads
// are persistent cuMemAlloc buffers.
#pragma once

#include "../common/session.hpp"
#include "../common/synthetic_data.hpp"

#include <cstdint>
#include <vector>

namespace apps::graphed {

inline constexpr int kInputs = 32;
inline constexpr int kClasses = 8;
inline constexpr int kDatasetBatches = 4;

struct Dense {
  int fan_in = 0;
  int fan_out = 0;
  CUdeviceptr weights = 0;
  CUdeviceptr bias = 0;
  CUdeviceptr weights_momentum = 0;  // optimizer state: touched only by the optimizer step
  CUdeviceptr bias_momentum = 0;
};

struct Mlp {
  Dense layers[3];
  int batch = 0;
};

// What a captured step reads: the input a program copies each batch into before a replay.
struct StaticInput {
  CUdeviceptr features = 0;  // batch × kInputs floats
  CUdeviceptr labels = 0;    // batch ints
};

struct Activations {
  CUdeviceptr z1 = 0, a1 = 0, z2 = 0, a2 = 0, logits = 0;
};

struct Gradients {
  CUdeviceptr weights[3] = {};
  CUdeviceptr bias[3] = {};
};

// Parameters (seeded), zero momentum, and the static input, all cuMemAlloc.
Mlp make_mlp(Session& session, std::uint64_t seed, int batch, int hidden);
StaticInput make_static_input(Session& session, int batch);
void destroy(Session& session, const Mlp& mlp);
void destroy(Session& session, const StaticInput& input);

// Forward pass on `stream`; the activations stay allocated (backward frees them).
Activations forward(Session& session, const Mlp& mlp, const StaticInput& input, CUstream stream);
// Loss rows and the logits' gradient into `loss_rows` and `dlogits` (allocated by the caller).
void loss(Session& session, const Mlp& mlp, const Activations& act, const StaticInput& input, CUdeviceptr loss_rows,
          CUdeviceptr dlogits, CUstream stream);
// Backward pass: frees the activations, returns the gradients (allocated on `stream`, left
// allocated). With `side` set, the bias gradients are summed there, forked from and joined back
// to `stream` through the two events (a capture then spreads to `side` and must be joined).
struct Fork {
  CUstream side = nullptr;
  CUevent fork = nullptr;
  CUevent join = nullptr;
};
Gradients backward(Session& session, const Mlp& mlp, const Activations& act, const StaticInput& input,
                   CUdeviceptr dlogits, CUstream stream, const Fork& fork = {});
void free_gradients(Session& session, const Gradients& grads, CUstream stream);
// m = momentum·m + g; w -= lr·m for every parameter.
void optimizer_step(Session& session, const Mlp& mlp, const Gradients& grads, float learning_rate, float momentum,
                    CUstream stream);

// FNV-1a over every parameter's bytes (downloaded synchronously).
std::uint64_t parameter_checksum(Session& session, const Mlp& mlp);
// The data set (kDatasetBatches batches, cycled), as mlp_train's.
std::vector<Batch> make_batches(std::uint64_t seed, int batch);

}  // namespace apps::graphed
