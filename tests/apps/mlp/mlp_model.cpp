// The MLP's forward pass, backward pass and SGD update as a sequence of driver calls
// (see mlp_model.hpp for the shapes and the allocation pattern).
#include "mlp_model.hpp"

#include "../common/checksum.hpp"
#include "../common/session.hpp"
#include "../common/synthetic_data.hpp"

#include <cstdio>
#include <utility>
#include <vector>

namespace apps {

namespace {

constexpr int kInputs = 32;
constexpr int kHidden1 = 64;
constexpr int kHidden2 = 32;
constexpr int kClasses = 8;
constexpr int kDatasetBatches = 4;

// One dense layer's persistent parameters: weights (fan_in × fan_out, row-major) and bias.
struct Dense {
  int fan_in;
  int fan_out;
  CUdeviceptr weights = 0;
  CUdeviceptr bias = 0;
};

}  // namespace

int train_mlp(const DriverApi& api, const Options& options) {
  Session session(api, options.module);
  const Kernels& k = session.kernels();
  const int n = options.batch;
  const float lr = options.learning_rate;
  CUstream stream = nullptr;  // the default stream (per-thread when resolved with that flag)

  const std::vector<Batch> data = make_teacher_batches(options.seed, kDatasetBatches, n, kInputs, kClasses);

  Dense layers[3] = {{kInputs, kHidden1}, {kHidden1, kHidden2}, {kHidden2, kClasses}};
  SplitMix64 init_rng(options.seed * 0x2545f4914f6cdd1dULL + 17);
  for (Dense& layer : layers) {
    layer.weights = session.alloc(bytes_of<float>(layer.fan_in * layer.fan_out));
    layer.bias = session.alloc(bytes_of<float>(layer.fan_out));
    const std::vector<float> w = init_weights(init_rng, layer.fan_in, layer.fan_out, layer.fan_in);
    const std::vector<float> b(static_cast<std::size_t>(layer.fan_out), 0.0f);
    session.upload(layer.weights, w.data(), bytes_of<float>(layer.fan_in * layer.fan_out));
    session.upload(layer.bias, b.data(), bytes_of<float>(layer.fan_out));
  }
  Dense& l1 = layers[0];
  Dense& l2 = layers[1];
  Dense& l3 = layers[2];

  std::vector<float> losses(static_cast<std::size_t>(n));
  std::vector<unsigned char> host_copy;
  for (int iteration = 0; iteration < options.iterations; ++iteration) {
    const Batch& batch = data[static_cast<std::size_t>(iteration % kDatasetBatches)];

    // Forward.
    const CUdeviceptr x = session.alloc(bytes_of<float>(n * kInputs));
    session.upload(x, batch.features.data(), bytes_of<float>(n * kInputs));
    const CUdeviceptr labels = session.alloc(bytes_of<int>(n));
    session.upload(labels, batch.labels.data(), bytes_of<int>(n));

    const CUdeviceptr z1 = session.alloc(bytes_of<float>(n * kHidden1));
    session.launch(k.matmul, stream, n * kHidden1, x, l1.weights, z1, n, kHidden1, kInputs, 0, 0);
    session.launch(k.bias_add, stream, n * kHidden1, z1, l1.bias, n, kHidden1);
    const CUdeviceptr a1 = session.alloc(bytes_of<float>(n * kHidden1));
    session.launch(k.relu_forward, stream, n * kHidden1, z1, a1, n * kHidden1);

    const CUdeviceptr z2 = session.alloc(bytes_of<float>(n * kHidden2));
    session.launch(k.matmul, stream, n * kHidden2, a1, l2.weights, z2, n, kHidden2, kHidden1, 0, 0);
    session.launch(k.bias_add, stream, n * kHidden2, z2, l2.bias, n, kHidden2);
    const CUdeviceptr a2 = session.alloc(bytes_of<float>(n * kHidden2));
    session.launch(k.relu_forward, stream, n * kHidden2, z2, a2, n * kHidden2);

    const CUdeviceptr logits = session.alloc(bytes_of<float>(n * kClasses));
    session.launch(k.matmul, stream, n * kClasses, a2, l3.weights, logits, n, kClasses, kHidden2, 0, 0);
    session.launch(k.bias_add, stream, n * kClasses, logits, l3.bias, n, kClasses);

    const CUdeviceptr loss_rows = session.alloc(bytes_of<float>(n));
    const CUdeviceptr dlogits = session.alloc(bytes_of<float>(n * kClasses));
    session.launch(k.softmax_xent, stream, n, logits, labels, loss_rows, dlogits, n, kClasses);
    session.free(logits);
    session.free(labels);

    // Backward, layer 3: dW3 = a2ᵀ·dlogits, db3 = Σrows dlogits, da2 = dlogits·W3ᵀ.
    const CUdeviceptr dw3 = session.alloc(bytes_of<float>(kHidden2 * kClasses));
    session.launch(k.matmul, stream, kHidden2 * kClasses, a2, dlogits, dw3, kHidden2, kClasses, n, 1, 0);
    const CUdeviceptr db3 = session.alloc(bytes_of<float>(kClasses));
    session.launch(k.column_sum, stream, kClasses, dlogits, db3, n, kClasses);
    const CUdeviceptr da2 = session.alloc(bytes_of<float>(n * kHidden2));
    session.launch(k.matmul, stream, n * kHidden2, dlogits, l3.weights, da2, n, kHidden2, kClasses, 0, 1);
    session.free(dlogits);
    session.free(a2);

    // Layer 2.
    const CUdeviceptr dz2 = session.alloc(bytes_of<float>(n * kHidden2));
    session.launch(k.relu_backward, stream, n * kHidden2, z2, da2, dz2, n * kHidden2);
    session.free(da2);
    session.free(z2);
    const CUdeviceptr dw2 = session.alloc(bytes_of<float>(kHidden1 * kHidden2));
    session.launch(k.matmul, stream, kHidden1 * kHidden2, a1, dz2, dw2, kHidden1, kHidden2, n, 1, 0);
    const CUdeviceptr db2 = session.alloc(bytes_of<float>(kHidden2));
    session.launch(k.column_sum, stream, kHidden2, dz2, db2, n, kHidden2);
    const CUdeviceptr da1 = session.alloc(bytes_of<float>(n * kHidden1));
    session.launch(k.matmul, stream, n * kHidden1, dz2, l2.weights, da1, n, kHidden1, kHidden2, 0, 1);
    session.free(dz2);
    session.free(a1);

    // Layer 1 (no input gradient needed).
    const CUdeviceptr dz1 = session.alloc(bytes_of<float>(n * kHidden1));
    session.launch(k.relu_backward, stream, n * kHidden1, z1, da1, dz1, n * kHidden1);
    session.free(da1);
    session.free(z1);
    const CUdeviceptr dw1 = session.alloc(bytes_of<float>(kInputs * kHidden1));
    session.launch(k.matmul, stream, kInputs * kHidden1, x, dz1, dw1, kInputs, kHidden1, n, 1, 0);
    const CUdeviceptr db1 = session.alloc(bytes_of<float>(kHidden1));
    session.launch(k.column_sum, stream, kHidden1, dz1, db1, n, kHidden1);
    session.free(dz1);
    session.free(x);

    // SGD update.
    const struct {
      const Dense& layer;
      CUdeviceptr dw;
      CUdeviceptr db;
    } updates[] = {{l1, dw1, db1}, {l2, dw2, db2}, {l3, dw3, db3}};
    for (const auto& u : updates) {
      const int count = u.layer.fan_in * u.layer.fan_out;
      session.launch(k.sgd_update, stream, count, u.layer.weights, u.dw, lr, count);
      session.launch(k.sgd_update, stream, u.layer.fan_out, u.layer.bias, u.db, lr, u.layer.fan_out);
    }
    for (const auto& u : updates) {
      session.free(u.dw);
      session.free(u.db);
    }

    session.download(losses.data(), loss_rows, bytes_of<float>(n));
    session.free(loss_rows);
    double loss = 0;
    for (float l : losses) loss += static_cast<double>(l);
    loss /= n;

    Checksum checksum;
    for (const Dense& layer : layers) {
      for (const auto& [buffer, count] :
           {std::pair{layer.weights, layer.fan_in * layer.fan_out}, std::pair{layer.bias, layer.fan_out}}) {
        host_copy.resize(bytes_of<float>(count));
        session.download(host_copy.data(), buffer, host_copy.size());
        checksum.add(host_copy.data(), host_copy.size());
      }
    }
    std::printf("iter %d loss %.6f checksum 0x%016llx\n", iteration, loss,
                static_cast<unsigned long long>(checksum.value()));
    std::fflush(stdout);
  }

  for (const Dense& layer : layers) {
    session.free(layer.weights);
    session.free(layer.bias);
  }
  return 0;
}

}  // namespace apps
