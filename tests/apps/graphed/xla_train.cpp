// xla_train: an XLA-shaped CUDA-graph training program on the driver API. As XLA's command
// buffers do, it assigns every temporary a fixed offset in one preallocated arena (kernels get
// interior pointers), builds the whole step (forward, loss, backward, SGD with momentum) node by
// node with cuGraphAdd*Node and dependencies from what each node reads and writes, instantiates it
// once, and then per step updates the kernel nodes whose arguments changed
// (cuGraphExecKernelNodeSetParams: the double-buffered input the host uploaded on a copy stream,
// and the learning rate of a decay schedule), rebuilding the graph and applying it with
// cuGraphExecUpdate every --update-every steps, as XLA does when it records a command buffer again.
// A memset node clears the loss rows and a memcpy node copies them out for the host.
//
// Prints "iter I loss L checksum 0xC" per step, like the other apps.
#include "graphed_mlp.hpp"
#include "graphed_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

namespace apps::graphed {
namespace {

constexpr float kMomentum = 0.9f;
constexpr float kDecay = 0.97f;  // learning rate of step s: lr * kDecay^s

// One kernel node: the function, its geometry, the argument bytes, and the buffers it reads and
// writes (base addresses of the arena's slices or of persistent buffers).
struct KernelCall {
  CUfunction function = nullptr;
  int elements = 0;
  std::vector<std::vector<unsigned char>> args;
  std::vector<CUdeviceptr> reads;
  std::vector<CUdeviceptr> writes;

  template <class... A>
  static KernelCall make(CUfunction f, int elements, std::vector<CUdeviceptr> reads, std::vector<CUdeviceptr> writes,
                         A... a) {
    KernelCall call{f, elements, {}, std::move(reads), std::move(writes)};
    (call.push(a), ...);
    return call;
  }
  template <class T>
  void push(T value) {
    std::vector<unsigned char> bytes(sizeof value);
    std::memcpy(bytes.data(), &value, sizeof value);
    args.push_back(std::move(bytes));
  }
};

// Which node last wrote and which nodes read each buffer since: a node depends on the last writer
// of what it reads or writes and on the readers of what it overwrites.
class Dependencies {
 public:
  std::vector<CUgraphNode> of(const std::vector<CUdeviceptr>& reads, const std::vector<CUdeviceptr>& writes) {
    std::vector<CUgraphNode> deps;
    auto add = [&](CUgraphNode n) {
      if (n != nullptr && std::find(deps.begin(), deps.end(), n) == deps.end()) deps.push_back(n);
    };
    for (CUdeviceptr b : reads) add(last_writer_[b]);
    for (CUdeviceptr b : writes) {
      add(last_writer_[b]);
      for (CUgraphNode r : readers_[b]) add(r);
    }
    return deps;
  }
  void added(CUgraphNode node, const std::vector<CUdeviceptr>& reads, const std::vector<CUdeviceptr>& writes) {
    for (CUdeviceptr b : reads) readers_[b].push_back(node);
    for (CUdeviceptr b : writes) {
      last_writer_[b] = node;
      readers_[b].clear();
    }
  }

 private:
  std::map<CUdeviceptr, CUgraphNode> last_writer_;
  std::map<CUdeviceptr, std::vector<CUgraphNode>> readers_;
};

struct Arena {
  CUdeviceptr base = 0;
  std::size_t used = 0;
  CUdeviceptr take(std::size_t bytes) {
    const CUdeviceptr at = base + used;
    used += (bytes + 255) / 256 * 256;  // XLA aligns its slices
    return at;
  }
};

// The step's buffers: activations and gradients are slices of one arena.
struct Slices {
  CUdeviceptr z1, a1, z2, a2, logits, loss_rows, dlogits, da2, dz2, da1, dz1;
  CUdeviceptr dw[3], db[3];
};

Slices assign(Arena& arena, const Mlp& mlp) {
  const int n = mlp.batch;
  const int h1 = mlp.layers[0].fan_out;
  const int h2 = mlp.layers[1].fan_out;
  Slices s{};
  s.z1 = arena.take(bytes_of<float>(n * h1));
  s.a1 = arena.take(bytes_of<float>(n * h1));
  s.z2 = arena.take(bytes_of<float>(n * h2));
  s.a2 = arena.take(bytes_of<float>(n * h2));
  s.logits = arena.take(bytes_of<float>(n * kClasses));
  s.loss_rows = arena.take(bytes_of<float>(n));
  s.dlogits = arena.take(bytes_of<float>(n * kClasses));
  s.da2 = arena.take(bytes_of<float>(n * h2));
  s.dz2 = arena.take(bytes_of<float>(n * h2));
  s.da1 = arena.take(bytes_of<float>(n * h1));
  s.dz1 = arena.take(bytes_of<float>(n * h1));
  for (int l = 0; l < 3; ++l) {
    s.dw[l] = arena.take(bytes_of<float>(mlp.layers[l].fan_in * mlp.layers[l].fan_out));
    s.db[l] = arena.take(bytes_of<float>(mlp.layers[l].fan_out));
  }
  return s;
}

// The step's kernels in program order, for the given input buffers and learning rate.
std::vector<KernelCall> step_calls(const Kernels& k, const Mlp& mlp, const Slices& s, const StaticInput& in, float lr) {
  const int n = mlp.batch;
  const Dense& l1 = mlp.layers[0];
  const Dense& l2 = mlp.layers[1];
  const Dense& l3 = mlp.layers[2];
  const int h1 = l1.fan_out;
  const int h2 = l2.fan_out;
  using K = KernelCall;
  std::vector<KernelCall> c;
  c.push_back(K::make(k.matmul, n * h1, {in.features, l1.weights}, {s.z1}, in.features, l1.weights, s.z1, n, h1,
                      kInputs, 0, 0));
  c.push_back(K::make(k.bias_add, n * h1, {s.z1, l1.bias}, {s.z1}, s.z1, l1.bias, n, h1));
  c.push_back(K::make(k.relu_forward, n * h1, {s.z1}, {s.a1}, s.z1, s.a1, n * h1));
  c.push_back(K::make(k.matmul, n * h2, {s.a1, l2.weights}, {s.z2}, s.a1, l2.weights, s.z2, n, h2, h1, 0, 0));
  c.push_back(K::make(k.bias_add, n * h2, {s.z2, l2.bias}, {s.z2}, s.z2, l2.bias, n, h2));
  c.push_back(K::make(k.relu_forward, n * h2, {s.z2}, {s.a2}, s.z2, s.a2, n * h2));
  c.push_back(K::make(k.matmul, n * kClasses, {s.a2, l3.weights}, {s.logits}, s.a2, l3.weights, s.logits, n, kClasses,
                      h2, 0, 0));
  c.push_back(K::make(k.bias_add, n * kClasses, {s.logits, l3.bias}, {s.logits}, s.logits, l3.bias, n, kClasses));
  c.push_back(K::make(k.softmax_xent, n, {s.logits, in.labels}, {s.loss_rows, s.dlogits}, s.logits, in.labels,
                      s.loss_rows, s.dlogits, n, kClasses));
  c.push_back(
      K::make(k.matmul, h2 * kClasses, {s.a2, s.dlogits}, {s.dw[2]}, s.a2, s.dlogits, s.dw[2], h2, kClasses, n, 1, 0));
  c.push_back(K::make(k.column_sum, kClasses, {s.dlogits}, {s.db[2]}, s.dlogits, s.db[2], n, kClasses));
  c.push_back(
      K::make(k.matmul, n * h2, {s.dlogits, l3.weights}, {s.da2}, s.dlogits, l3.weights, s.da2, n, h2, kClasses, 0, 1));
  c.push_back(K::make(k.relu_backward, n * h2, {s.z2, s.da2}, {s.dz2}, s.z2, s.da2, s.dz2, n * h2));
  c.push_back(K::make(k.matmul, h1 * h2, {s.a1, s.dz2}, {s.dw[1]}, s.a1, s.dz2, s.dw[1], h1, h2, n, 1, 0));
  c.push_back(K::make(k.column_sum, h2, {s.dz2}, {s.db[1]}, s.dz2, s.db[1], n, h2));
  c.push_back(K::make(k.matmul, n * h1, {s.dz2, l2.weights}, {s.da1}, s.dz2, l2.weights, s.da1, n, h1, h2, 0, 1));
  c.push_back(K::make(k.relu_backward, n * h1, {s.z1, s.da1}, {s.dz1}, s.z1, s.da1, s.dz1, n * h1));
  c.push_back(K::make(k.matmul, kInputs * h1, {in.features, s.dz1}, {s.dw[0]}, in.features, s.dz1, s.dw[0], kInputs, h1,
                      n, 1, 0));
  c.push_back(K::make(k.column_sum, h1, {s.dz1}, {s.db[0]}, s.dz1, s.db[0], n, h1));
  for (int l = 0; l < 3; ++l) {
    const Dense& d = mlp.layers[l];
    const int count = d.fan_in * d.fan_out;
    c.push_back(K::make(k.scale_add, count, {d.weights_momentum, s.dw[l]}, {d.weights_momentum}, d.weights_momentum,
                        s.dw[l], kMomentum, 1.0f, count));
    c.push_back(K::make(k.sgd_update, count, {d.weights, d.weights_momentum}, {d.weights}, d.weights,
                        d.weights_momentum, lr, count));
    c.push_back(K::make(k.scale_add, d.fan_out, {d.bias_momentum, s.db[l]}, {d.bias_momentum}, d.bias_momentum, s.db[l],
                        kMomentum, 1.0f, d.fan_out));
    c.push_back(
        K::make(k.sgd_update, d.fan_out, {d.bias, d.bias_momentum}, {d.bias}, d.bias, d.bias_momentum, lr, d.fan_out));
  }
  return c;
}

CUDA_KERNEL_NODE_PARAMS node_params(const KernelCall& call, std::vector<void*>& pointers) {
  pointers.clear();
  for (const auto& arg : call.args) pointers.push_back(const_cast<unsigned char*>(arg.data()));
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = call.function;
  p.gridDimX = Session::blocks_for(call.elements);
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = Session::kThreadsPerBlock;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = pointers.data();
  return p;
}

struct BuiltGraph {
  CUgraph graph = nullptr;
  std::vector<CUgraphNode> kernels;  // one per step_calls entry, in order
};

// The step as a graph: memset(loss rows) → kernels → memcpy(loss rows → loss_out).
BuiltGraph build(const DriverApi& api, Session& session, const std::vector<KernelCall>& calls, const Slices& s,
                 CUdeviceptr loss_out, int batch) {
  BuiltGraph built;
  APP_CHECK(api, cuGraphCreate(&built.graph, 0));
  Dependencies deps;
  CUDA_MEMSET_NODE_PARAMS memset{};
  memset.dst = s.loss_rows;
  memset.value = 0;
  memset.elementSize = 4;
  memset.width = static_cast<std::size_t>(batch);
  memset.height = 1;
  CUgraphNode clear = nullptr;
  APP_CHECK(api, cuGraphAddMemsetNode(&clear, built.graph, nullptr, 0, &memset, session.context()));
  deps.added(clear, {}, {s.loss_rows});
  std::vector<void*> pointers;
  for (const KernelCall& call : calls) {
    const std::vector<CUgraphNode> d = deps.of(call.reads, call.writes);
    const CUDA_KERNEL_NODE_PARAMS params = node_params(call, pointers);
    CUgraphNode node = nullptr;
    APP_CHECK(api, cuGraphAddKernelNode_v2(&node, built.graph, d.data(), d.size(), &params));
    deps.added(node, call.reads, call.writes);
    built.kernels.push_back(node);
  }
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = s.loss_rows;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = loss_out;
  copy.WidthInBytes = bytes_of<float>(batch);
  copy.Height = 1;
  copy.Depth = 1;
  const std::vector<CUgraphNode> d = deps.of({s.loss_rows}, {loss_out});
  CUgraphNode out = nullptr;
  APP_CHECK(api, cuGraphAddMemcpyNode(&out, built.graph, d.data(), d.size(), &copy, session.context()));
  return built;
}

// The same step without a graph (--eager): what the graph's replays must compute.
void run_eagerly(const DriverApi& api, const std::vector<KernelCall>& calls, const Slices& s, CUdeviceptr loss_out,
                 int batch, CUstream stream) {
  APP_CHECK(api, cuMemsetD32Async(s.loss_rows, 0, static_cast<std::size_t>(batch), stream));
  std::vector<void*> pointers;
  for (const KernelCall& call : calls) {
    const CUDA_KERNEL_NODE_PARAMS p = node_params(call, pointers);
    APP_CHECK(api, cuLaunchKernel(p.func, p.gridDimX, 1, 1, p.blockDimX, 1, 1, 0, stream, p.kernelParams, nullptr));
  }
  APP_CHECK(api, cuMemcpyDtoDAsync_v2(loss_out, s.loss_rows, bytes_of<float>(batch), stream));
}

int train(const DriverApi& api, const GraphOptions& options) {
  Session session(api, options.common.module);
  const int n = options.common.batch;
  const Mlp mlp = make_mlp(session, options.common.seed, n, options.hidden);
  const std::vector<Batch> batches = make_batches(options.common.seed, n);
  const StaticInput inputs[2] = {make_static_input(session, n), make_static_input(session, n)};
  const CUdeviceptr loss_out = session.alloc(bytes_of<float>(n));
  Arena arena;
  {
    Arena sizing;
    (void)assign(sizing, mlp);
    arena.base = session.alloc(sizing.used);
  }
  const Slices slices = assign(arena, mlp);

  CUstream compute = nullptr;
  CUstream copy = nullptr;
  APP_CHECK(api, cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING));
  APP_CHECK(api, cuStreamCreate(&copy, CU_STREAM_NON_BLOCKING));
  CUevent uploaded[2] = {};
  CUevent consumed[2] = {};
  for (int i = 0; i < 2; ++i) {
    APP_CHECK(api, cuEventCreate(&uploaded[i], CU_EVENT_DISABLE_TIMING));
    APP_CHECK(api, cuEventCreate(&consumed[i], CU_EVENT_DISABLE_TIMING));
    APP_CHECK(api, cuEventRecord(consumed[i], compute));
  }
  float* staging[2] = {};
  int* staging_labels[2] = {};
  float* host_loss = nullptr;
  for (int i = 0; i < 2; ++i) {
    APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&staging[i]), bytes_of<float>(n * kInputs)));
    APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&staging_labels[i]), bytes_of<int>(n)));
  }
  APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&host_loss), bytes_of<float>(n)));

  // Uploads step `step`'s batch into input buffer step % 2 on the copy stream, after the graph
  // launch that last read that buffer.
  auto upload = [&](int step) {
    const int b = step % 2;
    const Batch& batch = batches[static_cast<std::size_t>(step % kDatasetBatches)];
    APP_CHECK(api, cuEventSynchronize(uploaded[b]));  // the staging buffer is free again
    std::memcpy(staging[b], batch.features.data(), batch.features.size() * sizeof(float));
    std::memcpy(staging_labels[b], batch.labels.data(), batch.labels.size() * sizeof(int));
    APP_CHECK(api, cuStreamWaitEvent(copy, consumed[b], 0));
    APP_CHECK(api, cuMemcpyHtoDAsync_v2(inputs[b].features, staging[b], batch.features.size() * sizeof(float), copy));
    APP_CHECK(api, cuMemcpyHtoDAsync_v2(inputs[b].labels, staging_labels[b], batch.labels.size() * sizeof(int), copy));
    APP_CHECK(api, cuEventRecord(uploaded[b], copy));
  };
  auto learning_rate = [&](int step) {
    return options.common.learning_rate * std::pow(kDecay, static_cast<float>(step));
  };

  const Kernels& k = session.kernels();
  std::vector<KernelCall> calls = step_calls(k, mlp, slices, inputs[0], learning_rate(0));
  const BuiltGraph original = build(api, session, calls, slices, loss_out, n);
  CUgraphExec exec = nullptr;
  APP_CHECK(api, cuGraphInstantiateWithFlags(&exec, original.graph, 0));
  APP_CHECK(api, cuGraphUpload(exec, compute));

  upload(0);
  std::vector<void*> pointers;
  for (int step = 0; step < options.common.iterations; ++step) {
    const int b = step % 2;
    const std::vector<KernelCall> now = step_calls(k, mlp, slices, inputs[b], learning_rate(step));
    if (step > 0 && step % options.update_every == 0) {
      // Recorded again: a new graph of the same topology applied to the executable.
      const BuiltGraph again = build(api, session, now, slices, loss_out, n);
      CUgraphExecUpdateResultInfo info{};
      APP_CHECK(api, cuGraphExecUpdate_v2(exec, again.graph, &info));
      if (info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        std::fprintf(stderr, "error: cuGraphExecUpdate result %d\n", static_cast<int>(info.result));
        return 1;
      }
      APP_CHECK(api, cuGraphDestroy(again.graph));
    } else {
      // Only the nodes whose arguments changed, addressed by the nodes of the graph the
      // executable was instantiated from.
      for (std::size_t i = 0; i < now.size(); ++i) {
        if (now[i].args == calls[i].args) continue;
        const CUDA_KERNEL_NODE_PARAMS params = node_params(now[i], pointers);
        APP_CHECK(api, cuGraphExecKernelNodeSetParams_v2(exec, original.kernels[i], &params));
      }
    }
    calls = now;
    APP_CHECK(api, cuStreamWaitEvent(compute, uploaded[b], 0));
    if (options.eager) {
      run_eagerly(api, now, slices, loss_out, n, compute);
    } else {
      APP_CHECK(api, cuGraphLaunch(exec, compute));
    }
    APP_CHECK(api, cuEventRecord(consumed[b], compute));
    if (step + 1 < options.common.iterations) upload(step + 1);  // overlaps the launch
    APP_CHECK(api, cuMemcpyDtoHAsync_v2(host_loss, loss_out, bytes_of<float>(n), compute));
    APP_CHECK(api, cuStreamSynchronize(compute));
    double total = 0;
    for (int r = 0; r < n; ++r) total += static_cast<double>(host_loss[r]);
    std::printf("iter %d loss %.6f checksum 0x%016llx\n", step, total / n,
                static_cast<unsigned long long>(parameter_checksum(session, mlp)));
    std::fflush(stdout);
  }

  session.synchronize_context();
  APP_CHECK(api, cuGraphExecDestroy(exec));
  APP_CHECK(api, cuGraphDestroy(original.graph));
  for (int i = 0; i < 2; ++i) {
    APP_CHECK(api, cuMemFreeHost(staging[i]));
    APP_CHECK(api, cuMemFreeHost(staging_labels[i]));
    APP_CHECK(api, cuEventDestroy_v2(uploaded[i]));
    APP_CHECK(api, cuEventDestroy_v2(consumed[i]));
    destroy(session, inputs[i]);
  }
  APP_CHECK(api, cuMemFreeHost(host_loss));
  APP_CHECK(api, cuStreamDestroy_v2(copy));
  APP_CHECK(api, cuStreamDestroy_v2(compute));
  session.free(arena.base);
  session.free(loss_out);
  destroy(session, mlp);
  return 0;
}

}  // namespace
}  // namespace apps::graphed

int main(int argc, char** argv) {
  const apps::graphed::GraphOptions options =
      apps::graphed::parse_graph_options(argc, argv, {{"xla_train", 32, 0.05f, false}, false});
  return apps::graphed::train(apps::linked_driver_api(), options);
}
