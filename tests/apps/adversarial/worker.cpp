// The per-thread iteration of adversarial_train (see worker.hpp and schedule.hpp for the roles).
#include "worker.hpp"

#include "../common/checksum.hpp"
#include "../kernels/kernel_math.hpp"

#include <algorithm>
#include <cstdio>

namespace adversarial {

namespace {

constexpr int kDigestSlots = 64;    // more than any iteration's buffers
constexpr int kVerdictSlots = 128;  // more than any iteration's verifications

// The self-test's victim: a buffer traded from A to B, corrupted on A after its fill.
constexpr int kCorruptIteration = 0;
constexpr int kCorruptBuffer = 1;
constexpr int kCorruptWord = 37;

}  // namespace

Worker::Worker(const apps::DriverApi& api, const PatternKernels& kernels, const Options& options, int thread)
    : api_(api), kernels_(kernels), options_(options), thread_(thread) {
  APP_CHECK(api_, cuDeviceGet(&device_, 0));
  APP_CHECK(api_, cuDevicePrimaryCtxRetain(&context_, device_));
  APP_CHECK(api_, cuCtxSetCurrent(context_));
  APP_CHECK(api_, cuStreamCreate(&a_, CU_STREAM_NON_BLOCKING));
  APP_CHECK(api_, cuStreamCreate(&b_, CU_STREAM_NON_BLOCKING));
  for (CUevent* event : {&a_ready_, &b_ready_, &b_done_}) {
    APP_CHECK(api_, cuEventCreate(event, CU_EVENT_DISABLE_TIMING));
  }
  APP_CHECK(api_, cuMemAlloc_v2(&digests_, kDigestSlots * sizeof(std::uint32_t)));
  APP_CHECK(api_, cuMemAlloc_v2(&verdicts_, kVerdictSlots * sizeof(int)));
  host_digests_.resize(kDigestSlots);
  host_verdicts_.resize(kVerdictSlots);
}

Worker::~Worker() {
  if (!finished_) finish();
}

void Worker::launch(CUfunction kernel, CUstream stream, int elements, void** params) {
  constexpr int threads_per_block = 256;
  constexpr int max_blocks = 1024;
  const int blocks = std::clamp((elements + threads_per_block - 1) / threads_per_block, 1, max_blocks);
  APP_CHECK(api_, cuLaunchKernel(kernel, static_cast<unsigned>(blocks), 1, 1, threads_per_block, 1, 1, 0, stream,
                                 params, nullptr));
}

Worker::Live Worker::allocate(const BufferSpec& spec, int iteration) {
  Live live;
  live.spec = spec;
  live.iteration = iteration;
  live.due = iteration + spec.lateness;
  const std::size_t bytes = static_cast<std::size_t>(spec.words) * sizeof(std::uint32_t);
  // Where the buffer is born: B for the buffers traded from B to A, A for all others.
  const CUstream home = spec.role == Role::kLateTradedBtoA ? b_ : a_;
  if (is_asynchronous(spec.role)) {
    APP_CHECK(api_, cuMemAllocAsync(&live.buffer, bytes, home));
  } else {
    APP_CHECK(api_, cuMemAlloc_v2(&live.buffer, bytes));
  }
  unsigned key = spec.key;
  int count = spec.words;
  void* params[] = {&live.buffer, &key, &count};
  launch(kernels_.fill, home, count, params);
  if (options_.self_test_corrupt && thread_ == 0 && iteration == kCorruptIteration && spec.index == kCorruptBuffer) {
    corrupt_word_ = kernel_math::pattern_word(spec.key, kCorruptWord) ^ 0x00010000u;
    APP_CHECK(api_, cuMemcpyHtoDAsync_v2(live.buffer + kCorruptWord * sizeof(std::uint32_t), &corrupt_word_,
                                         sizeof corrupt_word_, home));
  }
  return live;
}

void Worker::digest(const Live& live, CUstream stream) {
  CUdeviceptr buffer = live.buffer;
  int count = live.spec.words;
  CUdeviceptr slot = digests_ + static_cast<CUdeviceptr>(live.spec.index) * sizeof(std::uint32_t);
  void* params[] = {&buffer, &count, &slot};
  launch(kernels_.digest, stream, 1, params);
}

void Worker::release(const Live& live, CUstream stream) {
  const int slot_index = next_slot_;
  next_slot_ = (next_slot_ + 1) % kVerdictSlots;
  pending_verdicts_.push_back({live.iteration, live.spec.index, slot_index});
  CUdeviceptr buffer = live.buffer;
  unsigned key = live.spec.key;
  int count = live.spec.words;
  CUdeviceptr slot = verdicts_ + static_cast<CUdeviceptr>(slot_index) * sizeof(int);
  void* params[] = {&buffer, &key, &count, &slot};
  launch(kernels_.verify, stream, 1, params);
  if (is_asynchronous(live.spec.role)) {
    APP_CHECK(api_, cuMemFreeAsync(live.buffer, stream));
  } else {
    APP_CHECK(api_, cuMemFree_v2(live.buffer));
  }
}

void Worker::release_due(int iteration) {
  // In allocation order; every late buffer's last reader (on B) is ordered before A by the
  // previous iteration's b_done_ wait.
  auto keep = late_.begin();
  for (auto it = late_.begin(); it != late_.end(); ++it) {
    if (it->due <= iteration) {
      release(*it, a_);
    } else {
      *keep++ = *it;
    }
  }
  late_.erase(keep, late_.end());
}

bool Worker::check_verdicts() {
  APP_CHECK(api_, cuMemcpyDtoHAsync_v2(host_verdicts_.data(), verdicts_, host_verdicts_.size() * sizeof(int), a_));
  APP_CHECK(api_, cuStreamSynchronize(a_));
  bool intact = true;
  for (const PendingVerdict& pending : pending_verdicts_) {
    const int first_bad = host_verdicts_[static_cast<std::size_t>(pending.slot)];
    if (first_bad >= 0) {
      std::fprintf(stderr, "CORRUPTED iter %d buffer %d offset %zu thread %d\n", pending.iteration, pending.index,
                   static_cast<std::size_t>(first_bad) * sizeof(std::uint32_t), thread_);
      intact = false;
    }
  }
  pending_verdicts_.clear();
  return intact;
}

bool Worker::run_iteration(int iteration, std::uint64_t& checksum) {
  const IterationPlan plan = plan_iteration(iteration, thread_, options_.seed, options_.shape_period);
  const int count = static_cast<int>(plan.buffers.size());
  std::vector<Live> current;
  current.reserve(plan.buffers.size());
  const Live* short_lived = nullptr;  // the last kShortSync buffer, freed after the next allocation
  for (int j = 0; j < count; ++j) {
    current.push_back(allocate(plan.buffers[static_cast<std::size_t>(j)], iteration));
    const Live& live = current.back();
    if (live.spec.role == Role::kShortSync || live.spec.role == Role::kEvaluation) {
      digest(live, a_);
    }
    if (short_lived != nullptr) {
      release(*short_lived, a_);
      short_lived = nullptr;
    }
    if (live.spec.role == Role::kShortSync) short_lived = &live;
    if (j == count / 2) release_due(iteration);  // late frees interleaved with new allocations
  }
  if (short_lived != nullptr) release(*short_lived, a_);

  // Trade: each stream waits for the other's fills.
  APP_CHECK(api_, cuEventRecord(a_ready_, a_));
  APP_CHECK(api_, cuEventRecord(b_ready_, b_));
  APP_CHECK(api_, cuStreamWaitEvent(b_, a_ready_, 0));
  APP_CHECK(api_, cuStreamWaitEvent(a_, b_ready_, 0));
  for (const Live& live : current) {
    switch (live.spec.role) {
      case Role::kTradedAtoB:
      case Role::kLateSync:
      case Role::kExtra:
        digest(live, b_);
        break;
      case Role::kLateTradedBtoA:
        digest(live, a_);
        break;
      case Role::kShortSync:
      case Role::kEvaluation:
        break;  // digested on A right after the fill
    }
  }
  for (const Live& live : current) {
    if (live.spec.role == Role::kTradedAtoB || live.spec.role == Role::kExtra) release(live, b_);
    if (live.spec.role == Role::kLateSync || live.spec.role == Role::kLateTradedBtoA) {
      late_.push_back(live);
    }
  }
  for (auto it = current.rbegin(); it != current.rend(); ++it) {
    if (it->spec.role == Role::kEvaluation) release(*it, a_);
  }

  // Join: A waits for all of B's work, then reads the digests and verdicts back.
  APP_CHECK(api_, cuEventRecord(b_done_, b_));
  APP_CHECK(api_, cuStreamWaitEvent(a_, b_done_, 0));
  APP_CHECK(api_,
            cuMemcpyDtoHAsync_v2(host_digests_.data(), digests_, host_digests_.size() * sizeof(std::uint32_t), a_));
  const bool intact = check_verdicts();
  apps::Checksum sum;
  sum.add(host_digests_.data(), static_cast<std::size_t>(count) * sizeof(std::uint32_t));
  checksum = sum.value();
  return intact;
}

bool Worker::finish() {
  finished_ = true;
  for (const Live& live : late_) release(live, a_);
  late_.clear();
  const bool intact = check_verdicts();
  APP_CHECK(api_, cuMemFree_v2(digests_));
  APP_CHECK(api_, cuMemFree_v2(verdicts_));
  for (CUevent event : {a_ready_, b_ready_, b_done_}) APP_CHECK(api_, cuEventDestroy_v2(event));
  APP_CHECK(api_, cuStreamDestroy_v2(a_));
  APP_CHECK(api_, cuStreamDestroy_v2(b_));
  APP_CHECK(api_, cuDevicePrimaryCtxRelease_v2(device_));
  return intact;
}

}  // namespace adversarial
