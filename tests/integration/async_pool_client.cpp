// Stream-ordered allocation as PyTorch's cudaMallocAsync backend does it (issue 34): buffers
// allocated and freed with cuMemAllocAsync / cuMemFreeAsync on a compute stream, small
// temporaries on a second stream ordered by events both ways and freed there, no synchronisation
// inside a step (only the step's end reads its results back). The temporaries (two a layer) grow
// through the step, so the driver's pool cannot hand a freed one to the next: what it keeps after
// their frees grows through the step. With --keep the default pool keeps what it holds across
// synchronisations (a release threshold of UINT64_MAX, as that backend sets); with --grow each
// step's activations are larger than the last's, so what the pool kept of them cannot serve the
// next step (a sequence length that grows); with --busy the side stream is busy before each
// temporary's free (a host function that sleeps, as a long kernel would), so the host allocates
// the next buffers while the GPU has not reached the frees: the pool cannot give their memory back
// until it does.
// Prints one line per step ("step S checksum X"; on stderr "step S pool_reserved B", what the
// current pool holds after the step's synchronisation) and exits 3 when a word read back differs from
// what was written. Usage: async_pool_client STEPS [--keep] [--grow] [--busy]
#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(result));
    ++g_failures;
  }
}

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kBufferBytes = 4 * kMiB;  // above MEMTOOL_SWAP_MIN_BYTES: swapped
constexpr std::size_t kGrowBytes = 256 * 1024;  // with --grow, each step's activations this much larger
constexpr int kWeights = 4;
constexpr int kLayers = 8;
constexpr int kTemporaries = 2;  // a layer's
// The k-th temporary of a step: growing, and below MEMTOOL_SWAP_MIN_BYTES (1 MiB: never swapped).
constexpr std::size_t temporary_bytes(int k) { return (64 + 56 * static_cast<std::size_t>(k)) * 1024; }
// With --busy, how long the side stream is busy before each temporary's free.
constexpr std::chrono::milliseconds kBusyFor{15};

// A host function on a stream: the stream runs nothing after it until it returns.
void CUDA_CB keep_busy(void* /*unused*/) { std::this_thread::sleep_for(kBusyFor); }

std::uint32_t value_of(int step, int buffer, std::uint32_t salt) {
  return (static_cast<std::uint32_t>(step) * 2654435761u) ^ (static_cast<std::uint32_t>(buffer) * 40503u) ^ salt;
}

// Every word is `expect`, but those the layer's temporaries wrote at the start: theirs.
bool words_are(const std::vector<std::uint32_t>& host, std::uint32_t expect, int step, int layer) {
  std::size_t i = 0;
  for (int t = 0; t < (layer < 0 ? 0 : kTemporaries); ++t) {
    const int k = layer * kTemporaries + t;
    const std::uint32_t want = value_of(step, k, 0x3cu);
    for (const std::size_t end = i + temporary_bytes(k) / sizeof(std::uint32_t); i < end; ++i) {
      if (host[i] != want) return false;
    }
  }
  for (; i < host.size(); ++i) {
    if (host[i] != expect) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int steps = std::atoi(argv[1]);
  bool keep = false;
  bool grow = false;
  bool busy = false;
  for (int a = 2; a < argc; ++a) {
    keep = keep || std::strcmp(argv[a], "--keep") == 0;
    grow = grow || std::strcmp(argv[a], "--grow") == 0;
    busy = busy || std::strcmp(argv[a], "--busy") == 0;
  }
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  if (keep) {
    CUmemoryPool pool = nullptr;
    check(cuDeviceGetDefaultMemPool(&pool, device), "cuDeviceGetDefaultMemPool");
    cuuint64_t threshold = UINT64_MAX;
    check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), "cuMemPoolSetAttribute");
  }
  CUstream compute = nullptr;
  CUstream side = nullptr;
  check(cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent to_side = nullptr;
  CUevent to_compute = nullptr;
  check(cuEventCreate(&to_side, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cuEventCreate(&to_compute, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  if (g_failures != 0) return 1;

  const std::size_t words = kBufferBytes / sizeof(std::uint32_t);
  std::vector<CUdeviceptr> weights(kWeights);
  for (int w = 0; w < kWeights; ++w) {
    check(cuMemAllocAsync(&weights[static_cast<std::size_t>(w)], kBufferBytes, compute), "cuMemAllocAsync weight");
  }
  std::vector<std::vector<std::uint32_t>> host(kWeights + kLayers, std::vector<std::uint32_t>(words));
  bool corrupted = false;
  for (int step = 0; step < steps && g_failures == 0; ++step) {
    // The weights are updated, then each layer's activation is written on the compute stream and
    // a temporary on the side stream fills its head; the temporary is freed on the side stream.
    for (int w = 0; w < kWeights; ++w) {
      check(cuMemsetD32Async(weights[static_cast<std::size_t>(w)], value_of(step, w, 0x57u), words, compute),
            "cuMemsetD32Async weight");
    }
    std::vector<CUdeviceptr> acts(kLayers);
    const std::size_t act_bytes = kBufferBytes + (grow ? static_cast<std::size_t>(step) * kGrowBytes : 0);
    const std::size_t act_words = act_bytes / sizeof(std::uint32_t);
    for (int l = 0; l < kLayers; ++l)
      host[static_cast<std::size_t>(kWeights) + static_cast<std::size_t>(l)].resize(act_words);
    for (int l = 0; l < kLayers; ++l) {
      CUdeviceptr& act = acts[static_cast<std::size_t>(l)];
      check(cuMemAllocAsync(&act, act_bytes, compute), "cuMemAllocAsync activation");
      check(cuMemsetD32Async(act, value_of(step, l, 0xa5u), act_words, compute), "cuMemsetD32Async activation");
      check(cuEventRecord(to_side, compute), "cuEventRecord");
      check(cuStreamWaitEvent(side, to_side, 0), "cuStreamWaitEvent");
      std::size_t at = 0;
      for (int t = 0; t < kTemporaries; ++t) {
        const int k = l * kTemporaries + t;
        const std::size_t bytes = temporary_bytes(k);
        CUdeviceptr tmp = 0;
        check(cuMemAllocAsync(&tmp, bytes, side), "cuMemAllocAsync temporary");
        check(cuMemsetD32Async(tmp, value_of(step, k, 0x3cu), bytes / sizeof(std::uint32_t), side),
              "cuMemsetD32Async temporary");
        check(cuMemcpyDtoDAsync(act + at, tmp, bytes, side), "cuMemcpyDtoDAsync");
        if (busy) check(cuLaunchHostFunc(side, keep_busy, nullptr), "cuLaunchHostFunc");
        check(cuMemFreeAsync(tmp, side), "cuMemFreeAsync temporary");
        at += bytes;
      }
      check(cuEventRecord(to_compute, side), "cuEventRecord");
      check(cuStreamWaitEvent(compute, to_compute, 0), "cuStreamWaitEvent");
    }
    // The step's end: everything read back (the only synchronisation), the activations freed.
    for (int w = 0; w < kWeights; ++w) {
      check(cuMemcpyDtoHAsync(host[static_cast<std::size_t>(w)].data(), weights[static_cast<std::size_t>(w)],
                              kBufferBytes, compute),
            "cuMemcpyDtoHAsync");
    }
    for (int l = 0; l < kLayers; ++l) {
      check(cuMemcpyDtoHAsync(host[static_cast<std::size_t>(kWeights) + static_cast<std::size_t>(l)].data(),
                              acts[static_cast<std::size_t>(l)], act_bytes, compute),
            "cuMemcpyDtoHAsync");
      check(cuMemFreeAsync(acts[static_cast<std::size_t>(l)], compute), "cuMemFreeAsync activation");
    }
    check(cuStreamSynchronize(compute), "cuStreamSynchronize");
    std::uint64_t checksum = 1469598103934665603ull;
    for (int b = 0; b < kWeights + kLayers; ++b) {
      const bool weight = b < kWeights;
      const int l = b - kWeights;
      const bool ok = words_are(host[static_cast<std::size_t>(b)],
                                weight ? value_of(step, b, 0x57u) : value_of(step, l, 0xa5u), step, weight ? -1 : l);
      if (!ok) {
        std::fprintf(stderr, "CORRUPTED step %d buffer %d\n", step, b);
        corrupted = true;
      }
      for (const std::uint32_t word : host[static_cast<std::size_t>(b)])
        checksum = (checksum ^ word) * 1099511628211ull;
    }
    std::printf("step %d checksum 0x%016llx\n", step, static_cast<unsigned long long>(checksum));
    // What the pool holds after the step's synchronisation (stderr: it differs with memtool).
    CUmemoryPool pool = nullptr;
    cuuint64_t reserved = 0;
    check(cuDeviceGetMemPool(&pool, device), "cuDeviceGetMemPool");
    check(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), "cuMemPoolGetAttribute");
    std::fprintf(stderr, "step %d pool_reserved %llu\n", step, static_cast<unsigned long long>(reserved));
  }
  for (const CUdeviceptr w : weights) check(cuMemFreeAsync(w, compute), "cuMemFreeAsync weight");
  check(cuStreamSynchronize(compute), "cuStreamSynchronize");
  check(cuStreamSynchronize(side), "cuStreamSynchronize");
  if (g_failures != 0) return 1;
  return corrupted ? 3 : 0;
}
