// The PyTorch-shaped graphed training loop (see torch_graph_train.hpp).
#include "torch_graph_train.hpp"

#include "graphed_mlp.hpp"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace apps::graphed {

namespace {

constexpr float kMomentum = 0.9f;

// A data-loader-like thread that makes calls a global-mode capture forbids (cuMemAlloc, synchronous
// copies, cuMemFree) while the main thread captures: legal from another thread in thread-local and
// relaxed modes; in global mode the thread first switches itself to relaxed mode, as loader and
// NCCL threads do. Runs once, between start() and wait().
class Loader {
 public:
  Loader(Session& session, CUstreamCaptureMode capture_mode, std::uint64_t seed)
      : session_(session), capture_mode_(capture_mode), seed_(seed) {}

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void wait() { thread_.join(); }

 private:
  void run() {
    const DriverApi& api = session_.api();
    APP_CHECK(api, cuCtxSetCurrent(session_.context()));
    if (capture_mode_ == CU_STREAM_CAPTURE_MODE_GLOBAL) {
      CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
      APP_CHECK(api, cuThreadExchangeStreamCaptureMode(&mode));
    }
    std::vector<unsigned> words(4096);
    SplitMix64 rng(seed_ ^ 0x10adedULL);
    for (unsigned& w : words) w = static_cast<unsigned>(rng.next());
    std::vector<unsigned> back(words.size());
    const CUdeviceptr staging = session_.alloc(words.size() * sizeof(unsigned));
    session_.upload(staging, words.data(), words.size() * sizeof(unsigned));
    session_.download(back.data(), staging, back.size() * sizeof(unsigned));
    session_.free(staging);
    if (back != words) {
      std::fprintf(stderr, "CORRUPTED loader round trip during the capture\n");
      std::exit(3);
    }
  }

  Session& session_;
  const CUstreamCaptureMode capture_mode_;
  const std::uint64_t seed_;
  std::thread thread_;
};

struct Program {
  Session& session;
  const DriverApi& api;
  const GraphOptions& options;
  Mlp mlp{};
  StaticInput input{};
  std::vector<Batch> batches{};
  CUstream compute = nullptr;  // the legacy default stream, PyTorch's current stream
  CUstream capture = nullptr;  // torch.cuda.graph's side stream
  Fork fork{};
  CUevent ordered = nullptr;
  float* staging_features = nullptr;  // pinned
  int* staging_labels = nullptr;
  float* staging_loss = nullptr;
  int step = 0;

  // Copies the step's batch into the static input on `stream` (the program's `static_input.copy_`).
  void upload_batch(CUstream stream) {
    const Batch& batch = batches[static_cast<std::size_t>(step % kDatasetBatches)];
    APP_CHECK(api, cuStreamSynchronize(stream));  // the staging buffers are free again
    std::memcpy(staging_features, batch.features.data(), batch.features.size() * sizeof(float));
    std::memcpy(staging_labels, batch.labels.data(), batch.labels.size() * sizeof(int));
    APP_CHECK(api,
              cuMemcpyHtoDAsync_v2(input.features, staging_features, batch.features.size() * sizeof(float), stream));
    APP_CHECK(api, cuMemcpyHtoDAsync_v2(input.labels, staging_labels, batch.labels.size() * sizeof(int), stream));
  }

  // Reads the loss rows through an eager temporary (an allocation between replays), then prints
  // the step's line.
  void finish_step(CUdeviceptr loss_rows, CUstream stream) {
    const std::size_t bytes = bytes_of<float>(mlp.batch);
    const CUdeviceptr copy = session.alloc_async(bytes, stream);
    APP_CHECK(api, cuMemcpyDtoDAsync_v2(copy, loss_rows, bytes, stream));
    APP_CHECK(api, cuMemcpyDtoHAsync_v2(staging_loss, copy, bytes, stream));
    session.free_async(copy, stream);
    APP_CHECK(api, cuStreamSynchronize(stream));
    double total = 0;
    for (int r = 0; r < mlp.batch; ++r) total += static_cast<double>(staging_loss[r]);
    std::printf("iter %d loss %.6f checksum 0x%016llx\n", step, total / mlp.batch,
                static_cast<unsigned long long>(parameter_checksum(session, mlp)));
    std::fflush(stdout);
    ++step;
  }

  // One eager step on `stream`, everything allocated and freed in it.
  void eager_step(CUstream stream) {
    upload_batch(stream);
    const Activations act = forward(session, mlp, input, stream);
    const CUdeviceptr loss_rows = session.alloc_async(bytes_of<float>(mlp.batch), stream);
    const CUdeviceptr dlogits = session.alloc_async(bytes_of<float>(mlp.batch * kClasses), stream);
    loss(session, mlp, act, input, loss_rows, dlogits, stream);
    const Gradients grads = backward(session, mlp, act, input, dlogits, stream, fork);
    session.free_async(dlogits, stream);
    optimizer_step(session, mlp, grads, options.common.learning_rate, kMomentum, stream);
    free_gradients(session, grads, stream);
    finish_step(loss_rows, stream);
    session.free_async(loss_rows, stream);
  }

  void begin_capture() { APP_CHECK(api, cuStreamBeginCapture_v2(capture, options.capture_mode)); }
  CUgraph end_capture() {
    CUgraph graph = nullptr;
    APP_CHECK(api, cuStreamEndCapture(capture, &graph));
    return graph;
  }
  CUgraphExec instantiate(CUgraph graph, unsigned long long flags) {
    CUgraphExec exec = nullptr;
    APP_CHECK(api, cuGraphInstantiateWithFlags(&exec, graph, flags));
    APP_CHECK(api, cuGraphUpload(exec, compute));
    return exec;
  }
};

// torch.cuda.graph: forward, loss and backward captured as one graph whose gradients and loss
// rows stay allocated after each replay (freed by the next launch: AUTO_FREE_ON_LAUNCH, what
// PyTorch instantiates with under its cudaMallocAsync backend); the optimizer runs eagerly.
void run_whole(Program& p, Loader& loader) {
  p.begin_capture();
  loader.start();
  const Activations act = forward(p.session, p.mlp, p.input, p.capture);
  const CUdeviceptr loss_rows = p.session.alloc_async(bytes_of<float>(p.mlp.batch), p.capture);
  const CUdeviceptr dlogits = p.session.alloc_async(bytes_of<float>(p.mlp.batch * kClasses), p.capture);
  loss(p.session, p.mlp, act, p.input, loss_rows, dlogits, p.capture);
  const Gradients grads = backward(p.session, p.mlp, act, p.input, dlogits, p.capture, p.fork);
  p.session.free_async(dlogits, p.capture);
  loader.wait();
  const CUgraph graph = p.end_capture();
  const CUgraphExec exec = p.instantiate(graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);

  bool launched = false;
  while (p.step < p.options.common.iterations) {
    p.upload_batch(p.compute);
    APP_CHECK(p.api, cuGraphLaunch(exec, p.compute));
    launched = true;
    optimizer_step(p.session, p.mlp, grads, p.options.common.learning_rate, kMomentum, p.compute);
    p.finish_step(loss_rows, p.compute);
  }
  if (launched) {  // the last replay's allocations, freed outside the graph
    free_gradients(p.session, grads, p.compute);
    p.session.free_async(loss_rows, p.compute);
  }
  APP_CHECK(p.api, cuStreamSynchronize(p.compute));
  APP_CHECK(p.api, cuGraphExecDestroy(exec));
  APP_CHECK(p.api, cuGraphDestroy(graph));
}

// torch.cuda.make_graphed_callables: the forward and the backward as two graphs, the loss eager
// between them. The forward graph's activations are freed by the backward graph; the backward
// graph's gradients are freed eagerly after the optimizer step.
void run_split(Program& p, Loader& loader) {
  const CUdeviceptr dlogits = p.session.alloc(bytes_of<float>(p.mlp.batch * kClasses));  // static grad output
  p.begin_capture();
  loader.start();
  const Activations act = forward(p.session, p.mlp, p.input, p.capture);
  loader.wait();
  const CUgraph forward_graph = p.end_capture();
  p.begin_capture();
  const Gradients grads = backward(p.session, p.mlp, act, p.input, dlogits, p.capture, p.fork);
  const CUgraph backward_graph = p.end_capture();
  const CUgraphExec forward_exec = p.instantiate(forward_graph, 0);
  const CUgraphExec backward_exec = p.instantiate(backward_graph, 0);

  while (p.step < p.options.common.iterations) {
    p.upload_batch(p.compute);
    APP_CHECK(p.api, cuGraphLaunch(forward_exec, p.compute));
    const CUdeviceptr loss_rows = p.session.alloc_async(bytes_of<float>(p.mlp.batch), p.compute);
    loss(p.session, p.mlp, act, p.input, loss_rows, dlogits, p.compute);
    APP_CHECK(p.api, cuGraphLaunch(backward_exec, p.compute));
    optimizer_step(p.session, p.mlp, grads, p.options.common.learning_rate, kMomentum, p.compute);
    free_gradients(p.session, grads, p.compute);
    p.finish_step(loss_rows, p.compute);
    p.session.free_async(loss_rows, p.compute);
  }
  APP_CHECK(p.api, cuStreamSynchronize(p.compute));
  APP_CHECK(p.api, cuGraphExecDestroy(backward_exec));
  APP_CHECK(p.api, cuGraphExecDestroy(forward_exec));
  APP_CHECK(p.api, cuGraphDestroy(backward_graph));
  APP_CHECK(p.api, cuGraphDestroy(forward_graph));
  p.session.free(dlogits);
}

}  // namespace

int train_torch_graphed(const DriverApi& api, const GraphOptions& options) {
  Session session(api, options.common.module);
  Program p{session, api, options};
  p.mlp = make_mlp(session, options.common.seed, options.common.batch, options.hidden);
  p.input = make_static_input(session, options.common.batch);
  p.batches = make_batches(options.common.seed, options.common.batch);
  APP_CHECK(api, cuStreamCreate(&p.capture, CU_STREAM_NON_BLOCKING));
  APP_CHECK(api, cuStreamCreate(&p.fork.side, CU_STREAM_NON_BLOCKING));
  APP_CHECK(api, cuEventCreate(&p.fork.fork, CU_EVENT_DISABLE_TIMING));
  APP_CHECK(api, cuEventCreate(&p.fork.join, CU_EVENT_DISABLE_TIMING));
  APP_CHECK(api, cuEventCreate(&p.ordered, CU_EVENT_DISABLE_TIMING));
  const int n = options.common.batch;
  APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&p.staging_features), bytes_of<float>(n * kInputs)));
  APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&p.staging_labels), bytes_of<int>(n)));
  APP_CHECK(api, cuMemAllocHost_v2(reinterpret_cast<void**>(&p.staging_loss), bytes_of<float>(n)));

  // Warm-up on the side stream, ordered after the current stream's work and back (s.wait_stream).
  APP_CHECK(api, cuEventRecord(p.ordered, p.compute));
  APP_CHECK(api, cuStreamWaitEvent(p.capture, p.ordered, 0));
  while (p.step < options.warmup && p.step < options.common.iterations) p.eager_step(p.capture);
  APP_CHECK(api, cuEventRecord(p.ordered, p.capture));
  APP_CHECK(api, cuStreamWaitEvent(p.compute, p.ordered, 0));

  if (p.step < options.common.iterations) {
    Loader loader(session, options.capture_mode, options.common.seed);
    if (options.shape == GraphShape::whole) {
      run_whole(p, loader);
    } else {
      run_split(p, loader);
    }
  }

  session.synchronize_context();
  APP_CHECK(api, cuMemFreeHost(p.staging_features));
  APP_CHECK(api, cuMemFreeHost(p.staging_labels));
  APP_CHECK(api, cuMemFreeHost(p.staging_loss));
  APP_CHECK(api, cuEventDestroy_v2(p.fork.fork));
  APP_CHECK(api, cuEventDestroy_v2(p.fork.join));
  APP_CHECK(api, cuEventDestroy_v2(p.ordered));
  APP_CHECK(api, cuStreamDestroy_v2(p.fork.side));
  APP_CHECK(api, cuStreamDestroy_v2(p.capture));
  destroy(session, p.input);
  destroy(session, p.mlp);
  return 0;
}

}  // namespace apps::graphed
