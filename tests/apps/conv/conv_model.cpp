// The convolution network's iteration as driver calls on two streams (see conv_model.hpp).
#include "conv_model.hpp"

#include "../common/checksum.hpp"
#include "../common/session.hpp"
#include "../common/synthetic_data.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

namespace apps {

namespace {

constexpr int kHeight = 12;
constexpr int kWidth = 12;
constexpr int kChannels = 3;
constexpr int kFilters = 8;
constexpr int kPatch = kChannels * 9;                             // im2col row width
constexpr int kPooled = (kHeight / 2) * (kWidth / 2) * kFilters;  // 288 head inputs
constexpr int kClasses = 4;
constexpr int kDatasetBatches = 4;

struct Param {
  CUdeviceptr buffer = 0;
  int count = 0;
};

}  // namespace

int train_conv(const DriverApi& api, const Options& options) {
  Session session(api, options.module);
  const Kernels& k = session.kernels();
  const int n = options.batch;
  const int pixels = n * kHeight * kWidth;  // rows of the im2col matrix
  const float lr = options.learning_rate;

  const std::vector<Batch> data = make_quadrant_batches(options.seed, kDatasetBatches, n, kHeight, kWidth, kChannels);

  // Persistent parameters, uploaded once.
  SplitMix64 init_rng(options.seed * 0x2545f4914f6cdd1dULL + 29);
  Param conv_w{0, kPatch * kFilters}, conv_b{0, kFilters};
  Param head_w{0, kPooled * kClasses}, head_b{0, kClasses};
  const std::vector<float> conv_w_init = init_weights(init_rng, kPatch, kFilters, kPatch);
  const std::vector<float> head_w_init = init_weights(init_rng, kPooled, kClasses, kPooled);
  const struct {
    Param& param;
    const float* init;
  } inits[] = {{conv_w, conv_w_init.data()}, {conv_b, nullptr}, {head_w, head_w_init.data()}, {head_b, nullptr}};
  for (const auto& init : inits) {
    init.param.buffer = session.alloc(bytes_of<float>(init.param.count));
    const std::vector<float> zeros(static_cast<std::size_t>(init.param.count), 0.0f);
    session.upload(init.param.buffer, init.init != nullptr ? init.init : zeros.data(),
                   bytes_of<float>(init.param.count));
  }
  // A pageable upload may still be in flight when cuMemcpyHtoD returns; our streams are
  // non-blocking, so wait for it explicitly.
  session.synchronize_context();

  // Pinned staging buffers for the stream-ordered copies.
  void* pinned_x = nullptr;
  void* pinned_labels = nullptr;
  void* pinned_loss = nullptr;
  APP_CHECK(api, cuMemAllocHost_v2(&pinned_x, bytes_of<float>(pixels * kChannels)));
  APP_CHECK(api, cuMemAllocHost_v2(&pinned_labels, bytes_of<int>(n)));
  APP_CHECK(api, cuMemAllocHost_v2(&pinned_loss, bytes_of<float>(n)));

  CUstream compute = nullptr;
  CUstream side = nullptr;
  APP_CHECK(api, cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING));
  APP_CHECK(api, cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent input_ready = nullptr;    // side → compute: the batch is on the device
  CUevent dlogits_ready = nullptr;  // compute → side: the head's gradient input exists
  CUevent head_read = nullptr;      // compute → side: compute no longer reads the head weights
  CUevent head_done = nullptr;      // side → compute: head updated, dlogits no longer read
  for (CUevent* event : {&input_ready, &dlogits_ready, &head_read, &head_done}) {
    APP_CHECK(api, cuEventCreate(event, CU_EVENT_DISABLE_TIMING));
  }

  std::vector<unsigned char> host_copy;
  for (int iteration = 0; iteration < options.iterations; ++iteration) {
    const Batch& batch = data[static_cast<std::size_t>(iteration % kDatasetBatches)];
    // The previous iteration ended with both streams drained, so the staging buffers are free.
    std::memcpy(pinned_x, batch.features.data(), bytes_of<float>(pixels * kChannels));
    std::memcpy(pinned_labels, batch.labels.data(), bytes_of<int>(n));

    // Side stream: upload the batch into stream-ordered buffers.
    const CUdeviceptr x = session.alloc_async(bytes_of<float>(pixels * kChannels), side);
    const CUdeviceptr labels = session.alloc_async(bytes_of<int>(n), side);
    APP_CHECK(api, cuMemcpyHtoDAsync_v2(x, pinned_x, bytes_of<float>(pixels * kChannels), side));
    APP_CHECK(api, cuMemcpyHtoDAsync_v2(labels, pinned_labels, bytes_of<int>(n), side));
    APP_CHECK(api, cuEventRecord(input_ready, side));

    // Compute stream: forward pass. x and labels were allocated on `side`, are freed here.
    APP_CHECK(api, cuStreamWaitEvent(compute, input_ready, 0));
    const CUdeviceptr cols = session.alloc_async(bytes_of<float>(pixels * kPatch), compute);
    session.launch(k.im2col_3x3, compute, pixels * kPatch, x, cols, n, kHeight, kWidth, kChannels);
    session.free_async(x, compute);
    const CUdeviceptr z = session.alloc(bytes_of<float>(pixels * kFilters));
    session.launch(k.matmul, compute, pixels * kFilters, cols, conv_w.buffer, z, pixels, kFilters, kPatch, 0, 0);
    session.launch(k.bias_add, compute, pixels * kFilters, z, conv_b.buffer, pixels, kFilters);
    const CUdeviceptr a = session.alloc(bytes_of<float>(pixels * kFilters));
    session.launch(k.relu_forward, compute, pixels * kFilters, z, a, pixels * kFilters);
    const CUdeviceptr pooled = session.alloc(bytes_of<float>(n * kPooled));
    const CUdeviceptr argmax = session.alloc_async(bytes_of<int>(n * kPooled), compute);
    session.launch(k.maxpool2x2_forward, compute, n * kPooled, a, pooled, argmax, n, kHeight, kWidth, kFilters);
    const CUdeviceptr logits = session.alloc(bytes_of<float>(n * kClasses));
    session.launch(k.matmul, compute, n * kClasses, pooled, head_w.buffer, logits, n, kClasses, kPooled, 0, 0);
    session.launch(k.bias_add, compute, n * kClasses, logits, head_b.buffer, n, kClasses);
    const CUdeviceptr loss_rows = session.alloc_async(bytes_of<float>(n), compute);
    const CUdeviceptr dlogits = session.alloc_async(bytes_of<float>(n * kClasses), compute);
    session.launch(k.softmax_xent, compute, n, logits, labels, loss_rows, dlogits, n, kClasses);
    session.free_async(labels, compute);
    APP_CHECK(api, cuMemcpyDtoHAsync_v2(pinned_loss, loss_rows, bytes_of<float>(n), compute));
    session.free_async(loss_rows, compute);
    APP_CHECK(api, cuEventRecord(dlogits_ready, compute));

    // Side stream: the head's gradients, overlapping the convolution's backward pass.
    APP_CHECK(api, cuStreamWaitEvent(side, dlogits_ready, 0));
    const CUdeviceptr head_dw = session.alloc_async(bytes_of<float>(head_w.count), side);
    session.launch(k.matmul, side, head_w.count, pooled, dlogits, head_dw, kPooled, kClasses, n, 1, 0);
    const CUdeviceptr head_db = session.alloc_async(bytes_of<float>(head_b.count), side);
    session.launch(k.column_sum, side, kClasses, dlogits, head_db, n, kClasses);

    // Compute stream: gradient into the pooled features, which reads the head weights.
    const CUdeviceptr dpooled = session.alloc_async(bytes_of<float>(n * kPooled), compute);
    session.launch(k.matmul, compute, n * kPooled, dlogits, head_w.buffer, dpooled, n, kPooled, kClasses, 0, 1);
    APP_CHECK(api, cuEventRecord(head_read, compute));

    // Side stream: update the head once compute has read it.
    APP_CHECK(api, cuStreamWaitEvent(side, head_read, 0));
    session.launch(k.sgd_update, side, head_w.count, head_w.buffer, head_dw, lr, head_w.count);
    session.launch(k.sgd_update, side, head_b.count, head_b.buffer, head_db, lr, head_b.count);
    session.free_async(head_dw, side);
    session.free_async(head_db, side);
    APP_CHECK(api, cuEventRecord(head_done, side));

    // Compute stream: pooling, ReLU and convolution backward, conv update.
    const CUdeviceptr da = session.alloc_async(bytes_of<float>(pixels * kFilters), compute);
    session.launch(k.maxpool2x2_backward, compute, pixels * kFilters, dpooled, argmax, da, n, kHeight, kWidth,
                   kFilters);
    session.free_async(dpooled, compute);
    session.free_async(argmax, compute);
    const CUdeviceptr dz = session.alloc_async(bytes_of<float>(pixels * kFilters), compute);
    session.launch(k.relu_backward, compute, pixels * kFilters, z, da, dz, pixels * kFilters);
    session.free_async(da, compute);
    const CUdeviceptr conv_dw = session.alloc_async(bytes_of<float>(conv_w.count), compute);
    session.launch(k.matmul, compute, conv_w.count, cols, dz, conv_dw, kPatch, kFilters, pixels, 1, 0);
    const CUdeviceptr conv_db = session.alloc_async(bytes_of<float>(conv_b.count), compute);
    session.launch(k.column_sum, compute, kFilters, dz, conv_db, pixels, kFilters);
    session.free_async(dz, compute);
    session.free_async(cols, compute);
    session.launch(k.sgd_update, compute, conv_w.count, conv_w.buffer, conv_dw, lr, conv_w.count);
    session.launch(k.sgd_update, compute, conv_b.count, conv_b.buffer, conv_db, lr, conv_b.count);
    session.free_async(conv_dw, compute);
    session.free_async(conv_db, compute);

    // Join: dlogits (read on side) is freed on compute after side is done with it.
    APP_CHECK(api, cuStreamWaitEvent(compute, head_done, 0));
    session.free_async(dlogits, compute);
    APP_CHECK(api, cuStreamSynchronize(compute));
    session.free(z);
    session.free(a);
    session.free(pooled);
    session.free(logits);

    double loss = 0;
    const auto* loss_values = static_cast<const float*>(pinned_loss);
    for (int r = 0; r < n; ++r) loss += static_cast<double>(loss_values[r]);
    loss /= n;
    Checksum checksum;
    for (const Param* param : {&conv_w, &conv_b, &head_w, &head_b}) {
      host_copy.resize(bytes_of<float>(param->count));
      session.download(host_copy.data(), param->buffer, host_copy.size());
      checksum.add(host_copy.data(), host_copy.size());
    }
    std::printf("iter %d loss %.6f checksum 0x%016llx\n", iteration, loss,
                static_cast<unsigned long long>(checksum.value()));
    std::fflush(stdout);
  }

  for (CUevent event : {input_ready, dlogits_ready, head_read, head_done}) {
    APP_CHECK(api, cuEventDestroy_v2(event));
  }
  APP_CHECK(api, cuStreamDestroy_v2(side));
  APP_CHECK(api, cuStreamDestroy_v2(compute));
  for (void* pinned : {pinned_x, pinned_labels, pinned_loss}) APP_CHECK(api, cuMemFreeHost(pinned));
  for (const Param* param : {&conv_w, &conv_b, &head_w, &head_b}) session.free(param->buffer);
  return 0;
}

}  // namespace apps
