// The graphed apps' MLP as driver calls (see graphed_mlp.hpp).
#include "graphed_mlp.hpp"

#include "../common/checksum.hpp"

namespace apps::graphed {

Mlp make_mlp(Session& session, std::uint64_t seed, int batch, int hidden) {
  Mlp mlp;
  mlp.batch = batch;
  const int widths[4] = {kInputs, hidden, hidden / 2, kClasses};
  SplitMix64 rng(seed * 0x2545f4914f6cdd1dULL + 17);
  for (int l = 0; l < 3; ++l) {
    Dense& layer = mlp.layers[l];
    layer.fan_in = widths[l];
    layer.fan_out = widths[l + 1];
    const std::size_t weight_bytes = bytes_of<float>(layer.fan_in * layer.fan_out);
    const std::size_t bias_bytes = bytes_of<float>(layer.fan_out);
    layer.weights = session.alloc(weight_bytes);
    layer.bias = session.alloc(bias_bytes);
    layer.weights_momentum = session.alloc(weight_bytes);
    layer.bias_momentum = session.alloc(bias_bytes);
    const std::vector<float> w = init_weights(rng, layer.fan_in, layer.fan_out, layer.fan_in);
    const std::vector<float> zeros_w(static_cast<std::size_t>(layer.fan_in * layer.fan_out), 0.0f);
    const std::vector<float> zeros_b(static_cast<std::size_t>(layer.fan_out), 0.0f);
    session.upload(layer.weights, w.data(), weight_bytes);
    session.upload(layer.bias, zeros_b.data(), bias_bytes);
    session.upload(layer.weights_momentum, zeros_w.data(), weight_bytes);
    session.upload(layer.bias_momentum, zeros_b.data(), bias_bytes);
  }
  return mlp;
}

StaticInput make_static_input(Session& session, int batch) {
  return {session.alloc(bytes_of<float>(batch * kInputs)), session.alloc(bytes_of<int>(batch))};
}

void destroy(Session& session, const Mlp& mlp) {
  for (const Dense& layer : mlp.layers) {
    session.free(layer.weights);
    session.free(layer.bias);
    session.free(layer.weights_momentum);
    session.free(layer.bias_momentum);
  }
}

void destroy(Session& session, const StaticInput& input) {
  session.free(input.features);
  session.free(input.labels);
}

Activations forward(Session& session, const Mlp& mlp, const StaticInput& input, CUstream stream) {
  const Kernels& k = session.kernels();
  const int n = mlp.batch;
  const Dense& l1 = mlp.layers[0];
  const Dense& l2 = mlp.layers[1];
  const Dense& l3 = mlp.layers[2];
  Activations act;
  act.z1 = session.alloc_async(bytes_of<float>(n * l1.fan_out), stream);
  session.launch(k.matmul, stream, n * l1.fan_out, input.features, l1.weights, act.z1, n, l1.fan_out, l1.fan_in, 0, 0);
  session.launch(k.bias_add, stream, n * l1.fan_out, act.z1, l1.bias, n, l1.fan_out);
  act.a1 = session.alloc_async(bytes_of<float>(n * l1.fan_out), stream);
  session.launch(k.relu_forward, stream, n * l1.fan_out, act.z1, act.a1, n * l1.fan_out);
  act.z2 = session.alloc_async(bytes_of<float>(n * l2.fan_out), stream);
  session.launch(k.matmul, stream, n * l2.fan_out, act.a1, l2.weights, act.z2, n, l2.fan_out, l2.fan_in, 0, 0);
  session.launch(k.bias_add, stream, n * l2.fan_out, act.z2, l2.bias, n, l2.fan_out);
  act.a2 = session.alloc_async(bytes_of<float>(n * l2.fan_out), stream);
  session.launch(k.relu_forward, stream, n * l2.fan_out, act.z2, act.a2, n * l2.fan_out);
  act.logits = session.alloc_async(bytes_of<float>(n * l3.fan_out), stream);
  session.launch(k.matmul, stream, n * l3.fan_out, act.a2, l3.weights, act.logits, n, l3.fan_out, l3.fan_in, 0, 0);
  session.launch(k.bias_add, stream, n * l3.fan_out, act.logits, l3.bias, n, l3.fan_out);
  return act;
}

void loss(Session& session, const Mlp& mlp, const Activations& act, const StaticInput& input, CUdeviceptr loss_rows,
          CUdeviceptr dlogits, CUstream stream) {
  session.launch(session.kernels().softmax_xent, stream, mlp.batch, act.logits, input.labels, loss_rows, dlogits,
                 mlp.batch, kClasses);
}

Gradients backward(Session& session, const Mlp& mlp, const Activations& act, const StaticInput& input,
                   CUdeviceptr dlogits, CUstream stream, const Fork& fork) {
  const Kernels& k = session.kernels();
  const DriverApi& api = session.api();
  const int n = mlp.batch;
  const Dense& l1 = mlp.layers[0];
  const Dense& l2 = mlp.layers[1];
  const Dense& l3 = mlp.layers[2];
  Gradients g;
  session.free_async(act.logits, stream);

  // Layer 3. The weight gradients are computed on `stream`; with a fork, the bias gradients
  // (column sums of the same inputs) run beside them on the side stream.
  CUstream bias_stream = stream;
  if (fork.side != nullptr) {
    APP_CHECK(api, cuEventRecord(fork.fork, stream));
    APP_CHECK(api, cuStreamWaitEvent(fork.side, fork.fork, 0));
    bias_stream = fork.side;
  }
  g.weights[2] = session.alloc_async(bytes_of<float>(l3.fan_in * l3.fan_out), stream);
  session.launch(k.matmul, stream, l3.fan_in * l3.fan_out, act.a2, dlogits, g.weights[2], l3.fan_in, l3.fan_out, n, 1,
                 0);
  g.bias[2] = session.alloc_async(bytes_of<float>(l3.fan_out), bias_stream);
  session.launch(k.column_sum, bias_stream, l3.fan_out, dlogits, g.bias[2], n, l3.fan_out);
  const CUdeviceptr da2 = session.alloc_async(bytes_of<float>(n * l2.fan_out), stream);
  session.launch(k.matmul, stream, n * l2.fan_out, dlogits, l3.weights, da2, n, l2.fan_out, l3.fan_out, 0, 1);
  session.free_async(act.a2, stream);

  // Layer 2.
  const CUdeviceptr dz2 = session.alloc_async(bytes_of<float>(n * l2.fan_out), stream);
  session.launch(k.relu_backward, stream, n * l2.fan_out, act.z2, da2, dz2, n * l2.fan_out);
  session.free_async(da2, stream);
  session.free_async(act.z2, stream);
  g.weights[1] = session.alloc_async(bytes_of<float>(l2.fan_in * l2.fan_out), stream);
  session.launch(k.matmul, stream, l2.fan_in * l2.fan_out, act.a1, dz2, g.weights[1], l2.fan_in, l2.fan_out, n, 1, 0);
  if (fork.side != nullptr) {  // dz2 is ready on `stream`: the side stream waits for it
    APP_CHECK(api, cuEventRecord(fork.fork, stream));
    APP_CHECK(api, cuStreamWaitEvent(fork.side, fork.fork, 0));
  }
  g.bias[1] = session.alloc_async(bytes_of<float>(l2.fan_out), bias_stream);
  session.launch(k.column_sum, bias_stream, l2.fan_out, dz2, g.bias[1], n, l2.fan_out);
  const CUdeviceptr da1 = session.alloc_async(bytes_of<float>(n * l1.fan_out), stream);
  session.launch(k.matmul, stream, n * l1.fan_out, dz2, l2.weights, da1, n, l1.fan_out, l2.fan_out, 0, 1);
  session.free_async(act.a1, stream);

  // Layer 1.
  const CUdeviceptr dz1 = session.alloc_async(bytes_of<float>(n * l1.fan_out), stream);
  session.launch(k.relu_backward, stream, n * l1.fan_out, act.z1, da1, dz1, n * l1.fan_out);
  session.free_async(da1, stream);
  session.free_async(act.z1, stream);
  g.weights[0] = session.alloc_async(bytes_of<float>(l1.fan_in * l1.fan_out), stream);
  session.launch(k.matmul, stream, l1.fan_in * l1.fan_out, input.features, dz1, g.weights[0], l1.fan_in, l1.fan_out, n,
                 1, 0);
  if (fork.side != nullptr) {
    APP_CHECK(api, cuEventRecord(fork.fork, stream));
    APP_CHECK(api, cuStreamWaitEvent(fork.side, fork.fork, 0));
  }
  g.bias[0] = session.alloc_async(bytes_of<float>(l1.fan_out), bias_stream);
  session.launch(k.column_sum, bias_stream, l1.fan_out, dz1, g.bias[0], n, l1.fan_out);
  if (fork.side != nullptr) {  // join: `stream` goes on only after the side stream's sums
    APP_CHECK(api, cuEventRecord(fork.join, fork.side));
    APP_CHECK(api, cuStreamWaitEvent(stream, fork.join, 0));
  }
  // dz1 and dz2 were read on the side stream too; after the join their frees are ordered after it.
  session.free_async(dz1, stream);
  session.free_async(dz2, stream);
  return g;
}

void free_gradients(Session& session, const Gradients& grads, CUstream stream) {
  for (int l = 0; l < 3; ++l) {
    session.free_async(grads.weights[l], stream);
    session.free_async(grads.bias[l], stream);
  }
}

void optimizer_step(Session& session, const Mlp& mlp, const Gradients& grads, float learning_rate, float momentum,
                    CUstream stream) {
  const Kernels& k = session.kernels();
  for (int l = 0; l < 3; ++l) {
    const Dense& layer = mlp.layers[l];
    const int count = layer.fan_in * layer.fan_out;
    session.launch(k.scale_add, stream, count, layer.weights_momentum, grads.weights[l], momentum, 1.0f, count);
    session.launch(k.sgd_update, stream, count, layer.weights, layer.weights_momentum, learning_rate, count);
    session.launch(k.scale_add, stream, layer.fan_out, layer.bias_momentum, grads.bias[l], momentum, 1.0f,
                   layer.fan_out);
    session.launch(k.sgd_update, stream, layer.fan_out, layer.bias, layer.bias_momentum, learning_rate, layer.fan_out);
  }
}

std::uint64_t parameter_checksum(Session& session, const Mlp& mlp) {
  Checksum checksum;
  std::vector<unsigned char> host;
  for (const Dense& layer : mlp.layers) {
    for (const auto& [buffer, count] :
         {std::pair{layer.weights, layer.fan_in * layer.fan_out}, std::pair{layer.bias, layer.fan_out}}) {
      host.resize(bytes_of<float>(count));
      session.download(host.data(), buffer, host.size());
      checksum.add(host.data(), host.size());
    }
  }
  return checksum.value();
}

std::vector<Batch> make_batches(std::uint64_t seed, int batch) {
  return make_teacher_batches(seed, kDatasetBatches, batch, kInputs, kClasses);
}

}  // namespace apps::graphed
