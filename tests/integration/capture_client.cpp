// Adversarial programs for memtool under stream capture and CUDA graphs (issue 32). Every byte
// is checked on the device (pattern_fill / pattern_verify, verdict -1 when a buffer holds its
// pattern); any failed call or bad verdict is said on stderr and the exit status is 1.
//
//   capture_client MODULE hammer
//     The main thread captures, instantiates, launches and destroys small graphs in global mode,
//     over and over, while a second thread — also in global mode, so that a potentially unsafe
//     call of its own would invalidate the captures — hammers stream-ordered allocations, fills,
//     verifications and frees on a stream of its own (all legal beside a global capture). The
//     hammer synchronises only between captures (a host lock), as a program must. Whatever
//     memtool does on the hammer's thread (event queries, copies, waits) must not invalidate a
//     capture: FAKECUDA_STATS says graph_captures_invalidated 0.
//   capture_client MODULE destroy-pending
//     An executable graph is destroyed while its launch is still queued, and the buffer it fills
//     and verifies is freed right after; the next buffer (a pool gives it the same memory) is
//     filled at once on another stream. Without memtool cuMemFree waits for the device; a pool
//     that does not must order the next user of that memory after the pending replay.
//   capture_client MODULE evict-pending
//     A graph fills and verifies a 4 MiB buffer; right after each launch (not waited for) the
//     program fills newer buffers of its own, so that under a small swap budget the graph's
//     buffer — used again only at the next launch — is the first the swapper sends out. Its
//     copy out must wait for the pending replay, or the replay's writes are lost.
#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "client_session.hpp"

using client::check;
using client::g_failures;

namespace {

struct Kernels {
  CUfunction fill = nullptr;
  CUfunction verify = nullptr;
};

void launch(CUfunction f, CUstream stream, void** params) {
  check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
}

void fill(const Kernels& k, CUdeviceptr buffer, unsigned key, int words, CUstream stream) {
  void* params[] = {&buffer, &key, &words};
  launch(k.fill, stream, params);
}

void verify(const Kernels& k, CUdeviceptr buffer, unsigned key, int words, CUdeviceptr verdict, CUstream stream) {
  void* params[] = {&buffer, &key, &words, &verdict};
  launch(k.verify, stream, params);
}

// Verdicts are -1 when good: reads `count` of them (the stream must be done) and reports.
bool verdicts_good(const int* host, int count, const char* what) {
  bool good = true;
  for (int i = 0; i < count; ++i) {
    if (host[i] != -1) {
      std::fprintf(stderr, "CORRUPTED %s %d: first bad word %d\n", what, i, host[i]);
      good = false;
    }
  }
  return good;
}

// A graph that allocates a buffer of its own (graph memory), fills it, verifies it into
// `verdict` and frees it: captured on `stream` in `mode`.
CUgraph capture_fill_verify(const Kernels& k, CUstream stream, CUstreamCaptureMode mode, CUdeviceptr verdict,
                            unsigned key, int words) {
  check(cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture");
  CUdeviceptr scratch = 0;
  check(cuMemAllocAsync(&scratch, static_cast<size_t>(words) * sizeof(unsigned), stream), "cuMemAllocAsync (graph)");
  fill(k, scratch, key, words, stream);
  verify(k, scratch, key, words, verdict, stream);
  check(cuMemFreeAsync(scratch, stream), "cuMemFreeAsync (graph)");
  CUgraph graph = nullptr;
  check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  return graph;
}

int hammer(const Kernels& k, CUcontext context) {
  constexpr int kCaptures = 60;
  constexpr int kRoundsBeforeCaptures = 60;
  constexpr int kWords = 1 << 14;
  CUstream capture = nullptr, replay = nullptr;
  check(cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&replay, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr verdict = 0;
  check(cuMemAlloc(&verdict, sizeof(int)), "cuMemAlloc verdict");
  std::mutex no_capture;  // held while a capture runs: the hammer synchronises only without it
  std::atomic<bool> done{false};
  std::atomic<int> hammer_rounds{0};
  std::atomic<bool> hammer_good{true};

  std::thread other([&] {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent (hammer)");
    // The thread stays in GLOBAL mode: anything potentially unsafe it did during a capture would
    // invalidate it. It only queues stream-ordered work.
    CUstream own = nullptr;
    check(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING), "cuStreamCreate (hammer)");
    constexpr int kPerRound = 8;
    CUdeviceptr verdicts = 0;
    int* host = nullptr;
    {
      const std::lock_guard lock(no_capture);  // cuMemAlloc is unsafe: not during a capture
      check(cuMemAlloc(&verdicts, kPerRound * sizeof(int)), "cuMemAlloc (hammer)");
      check(cuMemAllocHost(reinterpret_cast<void**>(&host), kPerRound * sizeof(int)), "cuMemAllocHost (hammer)");
    }
    for (int round = 0; !done.load() || round < 40; ++round) {
      for (int i = 0; i < kPerRound; ++i) {
        const int words = (1 + i % 4) << 12;  // 16 to 64 KiB, a fixed cycle: a pool can plan it
        CUdeviceptr buffer = 0;
        check(cuMemAllocAsync(&buffer, static_cast<size_t>(words) * sizeof(unsigned), own), "cuMemAllocAsync (hammer)");
        const unsigned key = static_cast<unsigned>(round * 131 + i);
        fill(k, buffer, key, words, own);
        verify(k, buffer, key, words, verdicts + i * sizeof(int), own);
        check(cuMemFreeAsync(buffer, own), "cuMemFreeAsync (hammer)");
      }
      check(cuMemcpyDtoHAsync(host, verdicts, kPerRound * sizeof(int), own), "cuMemcpyDtoHAsync (hammer)");
      {
        const std::lock_guard lock(no_capture);
        check(cuStreamSynchronize(own), "cuStreamSynchronize (hammer)");
      }
      if (!verdicts_good(host, kPerRound, "hammer buffer")) hammer_good = false;
      ++hammer_rounds;
    }
    const std::lock_guard lock(no_capture);
    check(cuMemFreeHost(host), "cuMemFreeHost (hammer)");
    check(cuMemFree(verdicts), "cuMemFree (hammer)");
    check(cuStreamDestroy(own), "cuStreamDestroy (hammer)");
  });

  // The hammer alone first, long enough for a pool to find its step and plan it: then the
  // captures run beside a strategy that serves (and records events, queries, copies).
  while (hammer_rounds.load() < kRoundsBeforeCaptures) std::this_thread::yield();
  bool good = true;
  for (int c = 0; c < kCaptures; ++c) {
    CUgraph graph = nullptr;
    {
      const std::lock_guard lock(no_capture);
      graph = capture_fill_verify(k, capture, CU_STREAM_CAPTURE_MODE_GLOBAL, verdict, 0xc0de0000u + c, kWords);
    }
    CUgraphExec exec = nullptr;
    check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
    check(cuGraphLaunch(exec, replay), "cuGraphLaunch");
    int host = 0;
    check(cuStreamSynchronize(replay), "cuStreamSynchronize (replay)");
    check(cuMemcpyDtoH(&host, verdict, sizeof host), "cuMemcpyDtoH verdict");
    if (!verdicts_good(&host, 1, "graph buffer")) good = false;
    check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
    check(cuGraphDestroy(graph), "cuGraphDestroy");
  }
  done = true;
  other.join();
  check(cuMemFree(verdict), "cuMemFree verdict");
  check(cuStreamDestroy(capture), "cuStreamDestroy");
  check(cuStreamDestroy(replay), "cuStreamDestroy");
  std::printf("hammer: %d captures replayed %s, %d hammer rounds %s\n", kCaptures, good ? "ok" : "BAD",
              hammer_rounds.load(), hammer_good ? "ok" : "BAD");
  return good && hammer_good ? 0 : 1;
}

int destroy_pending(const Kernels& k) {
  constexpr int kRounds = 12;
  constexpr int kWords = 1 << 18;  // 1 MiB: the replay takes a while
  CUstream capture = nullptr, replay = nullptr, other = nullptr;
  check(cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&replay, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr verdicts = 0;
  check(cuMemAlloc(&verdicts, 2 * kRounds * sizeof(int)), "cuMemAlloc verdicts");
  for (int r = 0; r < kRounds; ++r) {
    CUdeviceptr buffer = 0;
    check(cuMemAlloc(&buffer, kWords * sizeof(unsigned)), "cuMemAlloc buffer");
    // Used at once on another stream, with another pattern (checked there too).
    const unsigned eager_key = 0xea000000u + static_cast<unsigned>(r);
    fill(k, buffer, eager_key, kWords, other);
    verify(k, buffer, eager_key, kWords, verdicts + (kRounds + r) * sizeof(int), other);
    check(cuStreamSynchronize(other), "cuStreamSynchronize (other)");
    const unsigned key = 0xd00d0000u + static_cast<unsigned>(r);
    check(cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    fill(k, buffer, key, kWords, capture);
    verify(k, buffer, key, kWords, verdicts + r * sizeof(int), capture);
    verify(k, buffer, key, kWords, verdicts + r * sizeof(int), capture);  // a longer replay
    CUgraph graph = nullptr;
    check(cuStreamEndCapture(capture, &graph), "cuStreamEndCapture");
    CUgraphExec exec = nullptr;
    check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
    check(cuGraphLaunch(exec, replay), "cuGraphLaunch");
    check(cuGraphExecDestroy(exec), "cuGraphExecDestroy (launch pending)");
    check(cuGraphDestroy(graph), "cuGraphDestroy");
    check(cuMemFree(buffer), "cuMemFree (after the pending replay)");
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<int> host(2 * kRounds);
  check(cuMemcpyDtoH(host.data(), verdicts, host.size() * sizeof(int)), "cuMemcpyDtoH verdicts");
  const bool good = verdicts_good(host.data(), 2 * kRounds, "buffer (replays, then eager uses)");
  check(cuMemFree(verdicts), "cuMemFree verdicts");
  for (CUstream s : {capture, replay, other}) check(cuStreamDestroy(s), "cuStreamDestroy");
  std::printf("destroy-pending: %d replays %s\n", kRounds, good ? "ok" : "BAD");
  return good ? 0 : 1;
}

int evict_pending(const Kernels& k) {
  constexpr int kIterations = 10;
  constexpr int kNewer = 3;
  constexpr int kWords = 1 << 20;  // 4 MiB
  constexpr size_t kBytes = static_cast<size_t>(kWords) * sizeof(unsigned);
  CUstream capture = nullptr, replay = nullptr, own = nullptr;
  check(cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&replay, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr watched = 0, verdicts = 0, key_slot = 0;
  check(cuMemAlloc(&watched, kBytes), "cuMemAlloc watched");
  check(cuMemAlloc(&verdicts, (kIterations * (kNewer + 1)) * sizeof(int)), "cuMemAlloc verdicts");
  (void)key_slot;
  // The graph: fill the watched buffer with this iteration's key (updated in place), verify it.
  unsigned key = 0;
  int words = kWords;
  CUdeviceptr verdict = verdicts;
  check(cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  fill(k, watched, key, words, capture);
  verify(k, watched, key, words, verdict, capture);
  CUgraph graph = nullptr;
  check(cuStreamEndCapture(capture, &graph), "cuStreamEndCapture");
  std::size_t count = 0;
  check(cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes");
  std::vector<CUgraphNode> nodes(count);
  check(cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes");
  CUgraphExec exec = nullptr;
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  for (int it = 0; it < kIterations; ++it) {
    key = 0xfeed0000u + static_cast<unsigned>(it);
    verdict = verdicts + static_cast<size_t>(it * (kNewer + 1)) * sizeof(int);
    // The kernel nodes' arguments of this iteration (the first fills, the second verifies).
    for (CUgraphNode node : nodes) {
      CUDA_KERNEL_NODE_PARAMS p{};
      check(cuGraphKernelNodeGetParams(node, &p), "cuGraphKernelNodeGetParams");
      void* fill_params[] = {&watched, &key, &words};
      void* verify_params[] = {&watched, &key, &words, &verdict};
      p.kernelParams = p.func == k.fill ? fill_params : verify_params;
      check(cuGraphExecKernelNodeSetParams(exec, node, &p), "cuGraphExecKernelNodeSetParams");
    }
    check(cuGraphLaunch(exec, replay), "cuGraphLaunch");
    // Not waited for: newer buffers, used now, push the watched one out under the budget.
    CUdeviceptr newer[kNewer] = {};
    for (int n = 0; n < kNewer; ++n) {
      check(cuMemAllocAsync(&newer[n], kBytes, own), "cuMemAllocAsync newer");
      const unsigned newer_key = 0xbeef0000u + static_cast<unsigned>(it * kNewer + n);
      fill(k, newer[n], newer_key, kWords, own);
      verify(k, newer[n], newer_key, kWords, verdict + (n + 1) * sizeof(int), own);
    }
    for (CUdeviceptr n : newer) check(cuMemFreeAsync(n, own), "cuMemFreeAsync newer");
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<int> host(static_cast<std::size_t>(kIterations * (kNewer + 1)));
  check(cuMemcpyDtoH(host.data(), verdicts, host.size() * sizeof(int)), "cuMemcpyDtoH verdicts");
  const bool good = verdicts_good(host.data(), static_cast<int>(host.size()), "verdict");
  // And the watched buffer holds the last replay's pattern.
  verify(k, watched, key, kWords, verdicts, nullptr);
  int last = 0;
  check(cuMemcpyDtoH(&last, verdicts, sizeof last), "cuMemcpyDtoH last");
  const bool kept = verdicts_good(&last, 1, "watched buffer after the last replay");
  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  check(cuGraphDestroy(graph), "cuGraphDestroy");
  check(cuMemFree(watched), "cuMemFree");
  check(cuMemFree(verdicts), "cuMemFree");
  std::printf("evict-pending: %d replays %s\n", kIterations, good && kept ? "ok" : "BAD");
  return good && kept ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: capture_client MODULE hammer|destroy-pending|evict-pending\n");
    return 2;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  const CUmodule module = client::open_session(argv[1], &device, &context);
  Kernels k;
  check(cuModuleGetFunction(&k.fill, module, "pattern_fill"), "pattern_fill");
  check(cuModuleGetFunction(&k.verify, module, "pattern_verify"), "pattern_verify");
  if (g_failures != 0) return 1;
  int status = 2;
  if (std::strcmp(argv[2], "hammer") == 0) status = hammer(k, context);
  if (std::strcmp(argv[2], "destroy-pending") == 0) status = destroy_pending(k);
  if (std::strcmp(argv[2], "evict-pending") == 0) status = evict_pending(k);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  return g_failures == 0 ? status : 1;
}
