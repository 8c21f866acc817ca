// Stream capture: work on a capturing stream becomes graph nodes instead of running; forks and
// joins through events; the three capture modes from several threads; the documented errors, and
// the invalidation they leave behind (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED at cuStreamEndCapture).
#include "graph_fixture.hpp"

#include <atomic>
#include <thread>

using namespace fakecuda_test;

namespace {

// Generations cuda.h shows only under their newest names, and per-thread-stream twins.
using GetCaptureInfoV1 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*);
using GetCaptureInfoV2 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
                                      size_t*);
using UpdateDependenciesV1 = CUresult (*)(CUstream, CUgraphNode*, size_t, unsigned int);
using BeginCapturePtsz = CUresult (*)(CUstream, CUstreamCaptureMode);
using EndCapturePtsz = CUresult (*)(CUstream, CUgraph*);
using LaunchKernelPtsz = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      CUstream, void**, void**);

// Ends the capture on `s` expecting success; the graph is the caller's.
GraphHandle end_capture(CUstream s) {
  CUgraph g = nullptr;
  REQUIRE(status_name(cuStreamEndCapture(s, &g)) == "CUDA_SUCCESS");
  REQUIRE(g != nullptr);
  return GraphHandle(g);
}

// Ends a capture expecting `error` and no graph.
void end_capture_fails(CUstream s, CUresult error) {
  CUgraph g = reinterpret_cast<CUgraph>(&g);
  CU_CHECK_IS(cuStreamEndCapture(s, &g), error);
  CHECK(g == nullptr);
}

void run_once(CUgraph g, CUstream s) {
  ExecHandle exec(g);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
}

void bump_host(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

// What a thread's call returned, without Catch2 assertions on that thread.
template <class F>
CUresult on_other_thread(F body) {
  CUresult result = CUDA_ERROR_UNKNOWN;
  std::thread t([&] { result = make_primary_current() ? body() : CUDA_ERROR_INVALID_CONTEXT; });
  t.join();
  return result;
}

CUresult alloc_and_free() {
  CUdeviceptr p = 0;
  const CUresult r = cuMemAlloc(&p, 256);
  if (r == CUDA_SUCCESS) {
    cuMemFree(p);
  }
  return r;
}

}  // namespace

TEST_CASE("a capturing stream records kernels instead of running them; the graph replays them", "[fakecuda][capture]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(4, 5);
  TestStream s;
  const fakecuda_stats before = stats_now();
  const unsigned long long affine_before = fakecuda_kernel_launches("affine_u32");
  GraphHandle graph;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_REQUIRE_OK(affine(k, data.ptr, 2, 1, 4, s));
    CU_REQUIRE_OK(affine(k, data.ptr, 3, 0, 4, s));
    graph = end_capture(s);
  }
  CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(data.read() == std::vector<unsigned>(4, 5));  // nothing ran
  CHECK(fakecuda_kernel_launches("affine_u32") == affine_before);
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 2);
  CHECK(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_KERNEL);
  CHECK(dependencies_of(nodes[1]) == std::vector<CUgraphNode>{nodes[0]});  // in stream order
  CUDA_KERNEL_NODE_PARAMS p{};
  CU_REQUIRE_OK(cuGraphKernelNodeGetParams(nodes[0], &p));
  CHECK(p.func == k.affine);
  REQUIRE(p.kernelParams != nullptr);
  CHECK(*static_cast<CUdeviceptr*>(p.kernelParams[0]) == data.ptr);
  CHECK(*static_cast<unsigned*>(p.kernelParams[1]) == 2);

  ExecHandle exec(graph);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(data.read() == std::vector<unsigned>(4, (5 * 2 + 1) * 3));
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(data.read() == std::vector<unsigned>(4, (33 * 2 + 1) * 3));
  const fakecuda_stats after = stats_now();
  CHECK(after.graph_captures - before.graph_captures == 1);
  CHECK(after.graph_captured_nodes - before.graph_captured_nodes == 2);
  CHECK(after.graph_launches - before.graph_launches == 2);
  CHECK(after.launches - before.launches == 4);  // each kernel node counts as a launch when it runs
  CHECK(fakecuda_kernel_launches("affine_u32") - affine_before == 4);
}

TEST_CASE("captured kernel arguments are copied when the launch is captured", "[fakecuda][capture]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(2, 1);
  TestStream s;
  GraphHandle graph;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    AffineArgs call(data.ptr, 1, 7, 2);
    CU_REQUIRE_OK(cuLaunchKernel(k.affine, 1, 1, 1, 1, 1, 1, 0, s, call.args, nullptr));
    call.add = 1000;  // too late: the node holds its own copy
    call.ptr = 0;
    graph = end_capture(s);
  }
  run_once(graph, s);
  CHECK(data.read() == std::vector<unsigned>(2, 8));
}

TEST_CASE("captured copies and memsets run when the graph runs, reading host memory then", "[fakecuda][capture]") {
  driver_ready();
  DeviceWords dev(3, 0);
  PinnedWords src(3);
  PinnedWords out(3);
  std::vector<unsigned> pageable(3, 0);
  TestStream s;
  GraphHandle graph;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_REQUIRE_OK(cuMemsetD32Async(dev.ptr, 9, 3, s));
    CU_REQUIRE_OK(cuMemcpyHtoDAsync(dev.ptr, src.words, 2 * sizeof(unsigned), s));
    CU_REQUIRE_OK(cuMemcpyDtoHAsync(out.words, dev.ptr, 3 * sizeof(unsigned), s));
    CU_REQUIRE_OK(cuMemcpyHtoDAsync(dev.ptr + 2 * sizeof(unsigned), pageable.data(), sizeof(unsigned), s));
    graph = end_capture(s);
  }
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 4);
  CHECK(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_MEMSET);
  CHECK(type_of(nodes[1]) == CU_GRAPH_NODE_TYPE_MEMCPY);
  CUDA_MEMSET_NODE_PARAMS m{};
  CU_REQUIRE_OK(cuGraphMemsetNodeGetParams(nodes[0], &m));
  CHECK((m.dst == dev.ptr && m.value == 9 && m.elementSize == 4 && m.width == 3 && m.height == 1));
  CUDA_MEMCPY3D c{};
  CU_REQUIRE_OK(cuGraphMemcpyNodeGetParams(nodes[1], &c));
  CHECK((c.srcMemoryType == CU_MEMORYTYPE_HOST && c.dstMemoryType == CU_MEMORYTYPE_DEVICE && c.dstDevice == dev.ptr));
  CHECK(c.WidthInBytes == 2 * sizeof(unsigned));
  CHECK(dev.read() == std::vector<unsigned>(3, 0));

  ExecHandle exec(graph);
  for (unsigned round = 1; round <= 2; ++round) {
    src.words[0] = 10 * round;
    src.words[1] = 10 * round + 1;
    pageable[0] = 100 * round;  // a graph copy reads pageable memory when it runs, not when captured
    CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(std::vector<unsigned>(out.words, out.words + 3) == std::vector<unsigned>{10 * round, 10 * round + 1, 9});
    CHECK(dev.read() == std::vector<unsigned>{10 * round, 10 * round + 1, 100 * round});
  }
}

TEST_CASE("a captured host function runs at each launch, not at capture", "[fakecuda][capture]") {
  driver_ready();
  TestStream s;
  std::atomic<int> calls{0};
  GraphHandle graph;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_REQUIRE_OK(cuLaunchHostFunc(s, bump_host, &calls));
    graph = end_capture(s);
  }
  CHECK(calls.load() == 0);
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 1);
  CUDA_HOST_NODE_PARAMS h{};
  CU_REQUIRE_OK(cuGraphHostNodeGetParams(nodes[0], &h));
  CHECK((h.fn == bump_host && h.userData == &calls));
  ExecHandle exec(graph);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(calls.load() == 2);
}

TEST_CASE("a potentially unsafe call fails during a global capture and invalidates it", "[fakecuda][capture][errors]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 0);
  TestStream s;
  TestStream other;
  TestEvent plain;
  CU_REQUIRE_OK(cuEventRecord(plain, other));
  CU_REQUIRE_OK(cuStreamSynchronize(other));
  void* pinned = nullptr;
  unsigned host = 0;
  const fakecuda_stats before = stats_now();
  CaptureGuard guard(s);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 1, 1, s));
  CUdeviceptr p = 0;
  SECTION("cuMemAlloc") { CU_CHECK_IS(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("cuMemFree") { CU_CHECK_IS(cuMemFree(data.ptr), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("cuMemAllocHost") { CU_CHECK_IS(cuMemAllocHost(&pinned, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("a synchronous copy") {
    CU_CHECK_IS(cuMemcpyDtoH(&host, data.ptr, sizeof host), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("a synchronous memset") { CU_CHECK_IS(cuMemsetD32(data.ptr, 1, 1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("cuCtxSynchronize") { CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("cuStreamSynchronize of another stream") {
    CU_CHECK_IS(cuStreamSynchronize(other), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("cuEventQuery of an event recorded outside") {
    CU_CHECK_IS(cuEventQuery(plain), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("cuEventSynchronize of an event recorded outside") {
    CU_CHECK_IS(cuEventSynchronize(plain), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  // Work issued to an invalidated capture is refused too, until the capture is ended.
  CU_CHECK_IS(affine(k, data.ptr, 1, 1, 1, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_CHECK_IS(cuMemsetD32Async(data.ptr, 1, 1, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(stats_now().graph_captures_invalidated - before.graph_captures_invalidated == 1);
  // Outside a capture the same calls work, and nothing captured ever ran.
  CU_CHECK_IS(cuMemAlloc(&p, 64), CUDA_SUCCESS);
  CU_CHECK_IS(cuMemFree(p), CUDA_SUCCESS);
  CHECK(data.read() == std::vector<unsigned>{0});
}

TEST_CASE("a relaxed thread may make potentially unsafe calls during its own capture", "[fakecuda][capture][modes]") {
  driver_ready();
  TestStream s;
  CaptureGuard guard(s);
  SECTION("the thread's mode is relaxed") {
    ModeGuard relaxed(CU_STREAM_CAPTURE_MODE_RELAXED);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(alloc_and_free(), CUDA_SUCCESS);
  }
  SECTION("the capture's mode is relaxed") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_CHECK_IS(alloc_and_free(), CUDA_SUCCESS);
  }
  SECTION("a thread-local capture stops its own thread") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_CHECK_IS(alloc_and_free(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    return;
  }
  CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  end_capture(s);
}

TEST_CASE("capture modes govern what other threads may do", "[fakecuda][capture][modes][threads]") {
  driver_ready();
  TestStream s;
  CaptureGuard guard(s);
  SECTION("a global capture stops a global-mode thread, and is invalidated by its attempt") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(on_other_thread(alloc_and_free), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  SECTION("a thread-local-mode thread ignores other threads' captures") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(on_other_thread([] {
                  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
                  cuThreadExchangeStreamCaptureMode(&mode);
                  return alloc_and_free();
                }),
                CUDA_SUCCESS);
    end_capture(s);
  }
  SECTION("a thread-local capture does not stop other threads") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_CHECK_IS(on_other_thread(alloc_and_free), CUDA_SUCCESS);
    end_capture(s);
  }
  SECTION("a relaxed capture does not stop other threads") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_CHECK_IS(on_other_thread(alloc_and_free), CUDA_SUCCESS);
    end_capture(s);
  }
  SECTION("a relaxed-mode thread is never stopped") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(on_other_thread([] {
                  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
                  cuThreadExchangeStreamCaptureMode(&mode);
                  return alloc_and_free();
                }),
                CUDA_SUCCESS);
    end_capture(s);
  }
}

TEST_CASE("captures on several threads at once stay apart", "[fakecuda][capture][threads]") {
  driver_ready();
  GraphKernels k;
  constexpr int kThreads = 4;
  std::vector<CUdeviceptr> buffers(kThreads);
  for (auto& b : buffers) {
    CU_REQUIRE_OK(cuMemAlloc(&b, sizeof(unsigned)));
    CU_REQUIRE_OK(cuMemsetD32(b, 1, 1));
  }
  CU_REQUIRE_OK(cuCtxSynchronize());
  std::vector<CUresult> results(kThreads, CUDA_ERROR_UNKNOWN);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (!make_primary_current()) {
        return;
      }
      CUstream s = nullptr;
      cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
      CUresult r = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      for (int i = 0; i < 10 && r == CUDA_SUCCESS; ++i) {
        r = affine(k, buffers[static_cast<std::size_t>(t)], 1, static_cast<unsigned>(t), 1, s);
      }
      CUgraph g = nullptr;
      const CUresult end = cuStreamEndCapture(s, &g);
      r = r == CUDA_SUCCESS ? end : r;
      CUgraphExec e = nullptr;
      if (r == CUDA_SUCCESS) {
        r = cuGraphInstantiateWithFlags(&e, g, 0);
      }
      if (r == CUDA_SUCCESS) {
        r = cuGraphLaunch(e, s);
      }
      if (r == CUDA_SUCCESS) {
        r = cuStreamSynchronize(s);
      }
      cuGraphExecDestroy(e);
      cuGraphDestroy(g);
      cuStreamDestroy(s);
      results[static_cast<std::size_t>(t)] = r;
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    CU_CHECK_IS(results[static_cast<std::size_t>(t)], CUDA_SUCCESS);
    unsigned value = 0;
    CU_REQUIRE_OK(cuMemcpyDtoH(&value, buffers[static_cast<std::size_t>(t)], sizeof value));
    CHECK(value == 1 + 10 * static_cast<unsigned>(t));
    CU_CHECK_IS(cuMemFree(buffers[static_cast<std::size_t>(t)]), CUDA_SUCCESS);
  }
}

TEST_CASE("cuThreadExchangeStreamCaptureMode swaps the calling thread's mode", "[fakecuda][capture][modes]") {
  driver_ready();
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_REQUIRE_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);  // the default
  CUresult other = on_other_thread([] {
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
    const CUresult r = cuThreadExchangeStreamCaptureMode(&m);
    return r == CUDA_SUCCESS && m == CU_STREAM_CAPTURE_MODE_GLOBAL ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
  });
  CU_CHECK_IS(other, CUDA_SUCCESS);  // per thread
  CU_REQUIRE_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
  auto bad = invalid_enum<CUstreamCaptureMode>(7);
  CU_CHECK_IS(cuThreadExchangeStreamCaptureMode(&bad), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuThreadExchangeStreamCaptureMode(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("calls that necessarily conflict with a capture fail in every mode", "[fakecuda][capture][errors]") {
  driver_ready();
  TestStream s;
  TestEvent e;
  ModeGuard relaxed(CU_STREAM_CAPTURE_MODE_RELAXED);
  CaptureGuard guard(s);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SECTION("synchronising the capturing stream") {
    CU_CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("querying the capturing stream") { CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("synchronising its context") { CU_CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  SECTION("querying an event recorded in the capture") {
    CU_REQUIRE_OK(cuEventRecord(e, s));
    CU_CHECK_IS(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
  }
  SECTION("a callback (cuStreamAddCallback is not capturable)") {
    CU_CHECK_IS(cuStreamAddCallback(
                    s, [](CUstream, CUresult, void*) {}, nullptr, 0),
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("destroying the capturing stream") { CU_CHECK_IS(cuStreamDestroy(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_CASE("an event recorded in a capture cannot be used outside it", "[fakecuda][capture][events]") {
  driver_ready();
  TestStream s;
  TestStream other;
  TestEvent e;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_REQUIRE_OK(cuEventRecord(e, s));
    end_capture(s);
  }
  CU_CHECK_IS(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
  CU_CHECK_IS(cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
  CU_CHECK_IS(cuStreamWaitEvent(other, e, 0), CUDA_ERROR_CAPTURED_EVENT);
  float ms = 0;
  CU_CHECK_IS(cuEventElapsedTime(&ms, e, e), CUDA_ERROR_CAPTURED_EVENT);
  // Recorded again outside a capture, it is an ordinary event.
  CU_REQUIRE_OK(cuEventRecord(e, other));
  CU_CHECK_IS(cuEventSynchronize(e), CUDA_SUCCESS);
  CU_CHECK_IS(cuEventQuery(e), CUDA_SUCCESS);
}

TEST_CASE("a capturing stream waits only on its own capture's events unless the wait is external",
          "[fakecuda][capture][events]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s;
  TestStream other;
  TestEvent outside;
  TestEvent done;
  CU_REQUIRE_OK(cuEventRecord(outside, other));
  CU_REQUIRE_OK(cuStreamSynchronize(other));
  CaptureGuard guard(s);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SECTION("an ordinary wait on an event recorded outside crosses the capture boundary") {
    CU_CHECK_IS(cuStreamWaitEvent(s, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  SECTION("an external wait and an external record become event nodes") {
    CU_REQUIRE_OK(cuStreamWaitEvent(s, outside, CU_EVENT_WAIT_EXTERNAL));
    CU_REQUIRE_OK(affine(k, data.ptr, 3, 0, 1, s));
    CU_REQUIRE_OK(cuEventRecordWithFlags(done, s, CU_EVENT_RECORD_EXTERNAL));
    GraphHandle graph = end_capture(s);
    const std::vector<CUgraphNode> nodes = nodes_of(graph);
    REQUIRE(nodes.size() == 3);
    CHECK(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    CHECK(type_of(nodes[2]) == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    CUevent got = nullptr;
    CU_REQUIRE_OK(cuGraphEventWaitNodeGetEvent(nodes[0], &got));
    CHECK(got == outside.event);
    CU_REQUIRE_OK(cuGraphEventRecordNodeGetEvent(nodes[2], &got));
    CHECK(got == done.event);
    ExecHandle exec(graph);
    // The launch waits for the work `outside` stands for when it is launched.
    Gate gate;
    gate.hold(other);
    CU_REQUIRE_OK(cuEventRecord(outside, other));
    CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_CHECK_IS(cuEventQuery(done), CUDA_ERROR_NOT_READY);
    gate.open();
    CU_REQUIRE_OK(cuEventSynchronize(done));  // recorded by the graph: an ordinary event again
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(data.read() == std::vector<unsigned>{3});
  }
}

TEST_CASE("capture forks into another stream through an event and must join back", "[fakecuda][capture][fork]") {
  driver_ready();
  GraphKernels k;
  DeviceWords log(8, 0);
  TestStream a;
  TestStream b;
  TestEvent fork;
  TestEvent join;
  CaptureGuard guard(a);
  CU_REQUIRE_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_REQUIRE_OK(append(k, log.ptr, 1, a));
  CU_REQUIRE_OK(cuEventRecord(fork, a));
  CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_NONE);
  CU_REQUIRE_OK(cuStreamWaitEvent(b, fork, 0));  // b joins a's capture
  CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cuuint64_t id_a = 0;
  cuuint64_t id_b = 0;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(a, &status, &id_a, nullptr, nullptr, nullptr, nullptr));
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(b, &status, &id_b, nullptr, nullptr, nullptr, nullptr));
  CHECK(id_a == id_b);
  CU_REQUIRE_OK(append(k, log.ptr, 2, b));
  CU_REQUIRE_OK(append(k, log.ptr, 3, a));
  SECTION("joined: one graph with the fork's shape") {
    CU_REQUIRE_OK(cuEventRecord(join, b));
    CU_REQUIRE_OK(cuStreamWaitEvent(a, join, 0));
    CU_REQUIRE_OK(append(k, log.ptr, 4, a));
    GraphHandle graph = end_capture(a);
    CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_NONE);  // every stream leaves the capture
    const std::vector<CUgraphNode> nodes = nodes_of(graph);
    REQUIRE(nodes.size() == 4);
    std::size_t edges = 0;
    CU_REQUIRE_OK(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
    CHECK(edges == 4);
    CHECK(dependencies_of(nodes[1]) == std::vector<CUgraphNode>{nodes[0]});  // b after the fork point
    CHECK(dependencies_of(nodes[2]) == std::vector<CUgraphNode>{nodes[0]});
    CHECK(dependencies_of(nodes[3]).size() == 2);  // the join
    run_once(graph, a);
    const std::vector<unsigned> seen = log.read();
    CHECK(seen[0] == 4);
    CHECK(seen[1] == 1);
    CHECK(seen[4] == 4);
    // b works normally again.
    CU_REQUIRE_OK(append(k, log.ptr, 5, b));
    CU_REQUIRE_OK(cuStreamSynchronize(b));
    CHECK(log.read()[5] == 5);
  }
  SECTION("not joined: CUDA_ERROR_STREAM_CAPTURE_UNJOINED") {
    end_capture_fails(a, CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    CHECK(capture_status(b) == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(log.read()[0] == 0);
  }
  SECTION("ended on the forked stream: CUDA_ERROR_STREAM_CAPTURE_UNMATCHED") {
    CUgraph g = nullptr;
    CU_CHECK_IS(cuStreamEndCapture(b, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    end_capture_fails(a, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  SECTION("a wait on another capture's event would merge two captures") {
    TestStream c;
    TestEvent e;
    CaptureGuard guard_c(c);
    CU_REQUIRE_OK(cuStreamBeginCapture(c, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_REQUIRE_OK(cuEventRecord(e, c));
    CU_CHECK_IS(cuStreamWaitEvent(a, e, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    end_capture_fails(c, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    end_capture_fails(a, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
}

TEST_CASE("the legacy stream cannot be used beside a capturing blocking stream", "[fakecuda][capture][legacy]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 2);
  SECTION("a blocking stream captures") {
    TestStream s(CU_STREAM_DEFAULT);
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CU_CHECK_IS(cuStreamIsCapturing(CU_STREAM_LEGACY, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);  // a query does not invalidate
    CU_CHECK_IS(affine(k, data.ptr, 1, 1, 1, nullptr), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(data.read() == std::vector<unsigned>{2});
  }
  SECTION("a non-blocking stream captures: the legacy stream is independent of it") {
    TestStream s(CU_STREAM_NON_BLOCKING);
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(capture_status(CU_STREAM_LEGACY) == CU_STREAM_CAPTURE_STATUS_NONE);
    CU_CHECK_IS(affine(k, data.ptr, 1, 1, 1, nullptr), CUDA_SUCCESS);
    end_capture(s);
    CU_REQUIRE_OK(cuCtxSynchronize());
    CHECK(data.read() == std::vector<unsigned>{3});
  }
}

TEST_CASE("cuStreamEndCapture comes from the capturing thread unless the capture is relaxed",
          "[fakecuda][capture][threads]") {
  driver_ready();
  TestStream s;
  CaptureGuard guard(s);
  CUstream handle = s;
  CUgraph g = nullptr;
  const auto end_elsewhere = [&] { return on_other_thread([&] { return cuStreamEndCapture(handle, &g); }); };
  SECTION("global") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(end_elsewhere(), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    end_capture_fails(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  SECTION("thread-local") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_CHECK_IS(end_elsewhere(), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  }
  SECTION("relaxed") {
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_CHECK_IS(end_elsewhere(), CUDA_SUCCESS);
    CHECK(g != nullptr);
    CU_CHECK_IS(cuGraphDestroy(g), CUDA_SUCCESS);
  }
}

TEST_CASE("beginning and ending a capture in the wrong state", "[fakecuda][capture][errors]") {
  driver_ready();
  TestStream s;
  CaptureGuard guard(s);
  CUgraph g = nullptr;
  CU_CHECK_IS(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamBeginCapture(s, invalid_enum<CUstreamCaptureMode>(9)), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_CHECK_IS(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  CU_CHECK_IS(cuStreamEndCapture(s, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUstreamCaptureStatus status;
  CU_CHECK_IS(cuStreamIsCapturing(s, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamGetCaptureInfo(s, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  end_capture(s);  // an empty capture is a valid, empty graph
}

TEST_CASE("cuStreamGetCaptureInfo in every generation", "[fakecuda][capture][info]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 0);
  TestStream s;
  TestStream t;
  CaptureGuard guard(s);
  CaptureGuard guard_t(t);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 0;
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, &id, nullptr, nullptr, nullptr, nullptr));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_REQUIRE_OK(cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 1, 1, s));
  const auto info_v1 = driver_symbol<GetCaptureInfoV1>("cuStreamGetCaptureInfo");     // CUDA 10.1
  const auto info_v2 = driver_symbol<GetCaptureInfoV2>("cuStreamGetCaptureInfo_v2");  // CUDA 11.3
  cuuint64_t id_v1 = 0;
  CU_REQUIRE_OK(info_v1(s, &status, &id_v1));
  CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cuuint64_t id_other = 0;
  CU_REQUIRE_OK(info_v1(t, &status, &id_other));
  CHECK(id_other != id_v1);  // unique per capture sequence
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t n = 0;
  CU_REQUIRE_OK(info_v2(s, &status, &id, &graph, &deps, &n));
  CHECK(id == id_v1);
  REQUIRE(n == 1);
  CHECK(type_of(deps[0]) == CU_GRAPH_NODE_TYPE_KERNEL);
  CHECK(nodes_of(graph) == std::vector<CUgraphNode>{deps[0]});  // the graph under construction
  const CUgraphNode last = deps[0];
  const CUgraphEdgeData* edges = nullptr;
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, &id, &graph, &deps, &edges, &n));  // CUDA 12.3
  REQUIRE(n == 1);
  CHECK(edges != nullptr);
  CU_CHECK_IS(cuStreamGetCaptureInfo(s, &status, &id, &graph, nullptr, &edges, &n), CUDA_ERROR_INVALID_VALUE);
  // Edge data a query cannot return is CUDA_ERROR_LOSSY_QUERY.
  CUgraphEdgeData programmatic{};
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  programmatic.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  CUgraphNode dep = last;
  CU_REQUIRE_OK(cuStreamUpdateCaptureDependencies(s, &dep, &programmatic, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  CU_CHECK_IS(cuStreamGetCaptureInfo(s, &status, &id, &graph, &deps, nullptr, &n), CUDA_ERROR_LOSSY_QUERY);
  CU_CHECK_IS(info_v2(s, &status, &id, &graph, &deps, &n), CUDA_ERROR_LOSSY_QUERY);
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, &id, &graph, &deps, &edges, &n));
  REQUIRE(n == 1);
  CHECK(edges[0].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 1, 1, s));
  GraphHandle done = end_capture(s);
  CHECK(done.graph == graph);
  end_capture(t);
}

TEST_CASE("cuStreamUpdateCaptureDependencies adds to or replaces what the next node depends on",
          "[fakecuda][capture][info]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 0);
  TestStream s;
  CaptureGuard guard(s);
  CUgraphNode none = nullptr;
  CU_CHECK_IS(cuStreamUpdateCaptureDependencies(s, &none, nullptr, 0, 0), CUDA_ERROR_ILLEGAL_STATE);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 1, 1, s));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 2, 1, s));
  CUstreamCaptureStatus status;
  const CUgraphNode* deps = nullptr;
  size_t n = 0;
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
  const CUgraphNode second = deps[0];
  const CUgraphNode first = dependencies_of(second)[0];
  CUgraphNode set[] = {first};
  CU_REQUIRE_OK(cuStreamUpdateCaptureDependencies(s, set, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 3, 1, s));  // depends on the first only
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
  const CUgraphNode third = deps[0];
  CHECK(dependencies_of(third) == std::vector<CUgraphNode>{first});
  CUgraphNode add[] = {second};
  const auto update_v1 = driver_symbol<UpdateDependenciesV1>("cuStreamUpdateCaptureDependencies");  // CUDA 11.3
  CU_REQUIRE_OK(update_v1(s, add, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
  CU_REQUIRE_OK(affine(k, data.ptr, 1, 4, 1, s));
  CU_REQUIRE_OK(cuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
  CHECK(dependencies_of(deps[0]) == std::vector<CUgraphNode>{third, second});
  CU_CHECK_IS(cuStreamUpdateCaptureDependencies(s, add, nullptr, 1, 2), CUDA_ERROR_INVALID_VALUE);
  GraphHandle other = GraphHandle::create();
  CUgraphNode foreign = nullptr;
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&foreign, other, nullptr, 0));
  CU_CHECK_IS(cuStreamUpdateCaptureDependencies(s, &foreign, nullptr, 1, 0), CUDA_ERROR_INVALID_VALUE);
  GraphHandle graph = end_capture(s);
  run_once(graph, s);
  CHECK(data.read() == std::vector<unsigned>{10});
}

TEST_CASE("cuStreamBeginCaptureToGraph captures into an existing graph after given nodes", "[fakecuda][capture]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(2, 0);
  TestStream s;
  GraphHandle graph = GraphHandle::create();
  CUgraphNode memset = nullptr;
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&ctx));
  const CUDA_MEMSET_NODE_PARAMS m{data.ptr, 0, 6, 4, 2, 1};
  CU_REQUIRE_OK(cuGraphAddMemsetNode(&memset, graph, nullptr, 0, &m, ctx));
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCaptureToGraph(s, graph, &memset, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_CHECK_IS(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);  // not while captured into
    CU_REQUIRE_OK(affine(k, data.ptr, 2, 0, 2, s));
    CUgraph g = nullptr;
    CU_REQUIRE_OK(cuStreamEndCapture(s, &g));
    CHECK(g == graph.graph);
  }
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 2);
  CHECK(dependencies_of(nodes[1]) == std::vector<CUgraphNode>{memset});
  run_once(graph, s);
  CHECK(data.read() == std::vector<unsigned>(2, 12));
}

TEST_CASE("the per-thread default stream captures through the _ptsz entry points", "[fakecuda][capture][ptsz]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  const auto begin_ptsz = driver_symbol<BeginCapturePtsz>("cuStreamBeginCapture_v2_ptsz");
  const auto end_ptsz = driver_symbol<EndCapturePtsz>("cuStreamEndCapture_ptsz");
  const auto launch_ptsz = driver_symbol<LaunchKernelPtsz>("cuLaunchKernel_ptsz");
  CaptureGuard guard(CU_STREAM_PER_THREAD);
  CU_REQUIRE_OK(begin_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(capture_status(CU_STREAM_PER_THREAD) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  // The per-thread stream synchronises with the legacy stream, so the legacy stream is unusable.
  CUstreamCaptureStatus legacy = CU_STREAM_CAPTURE_STATUS_NONE;
  CU_CHECK_IS(cuStreamIsCapturing(CU_STREAM_LEGACY, &legacy), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  AffineArgs call(data.ptr, 5, 0, 1);
  CU_REQUIRE_OK(launch_ptsz(k.affine, 1, 1, 1, 1, 1, 1, 0, nullptr, call.args, nullptr));
  CUgraph g = nullptr;
  CU_REQUIRE_OK(end_ptsz(nullptr, &g));
  GraphHandle graph(g);
  CHECK(nodes_of(graph).size() == 1);
  CHECK(data.read() == std::vector<unsigned>{1});
  run_once(graph, CU_STREAM_PER_THREAD);
  CHECK(data.read() == std::vector<unsigned>{5});
}

TEST_CASE("a graph launched into a capturing stream becomes a child graph node", "[fakecuda][capture][graphs]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s;
  GraphHandle inner = GraphHandle::create();
  add_affine(inner, k, {}, data.ptr, 3, 0, 1);
  ExecHandle inner_exec(inner);
  GraphHandle outer;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_REQUIRE_OK(cuGraphLaunch(inner_exec, s));
    CU_REQUIRE_OK(affine(k, data.ptr, 1, 1, 1, s));
    outer = end_capture(s);
  }
  CHECK(data.read() == std::vector<unsigned>{1});
  const std::vector<CUgraphNode> nodes = nodes_of(outer);
  REQUIRE(nodes.size() == 2);
  REQUIRE(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_GRAPH);
  CUgraph child = nullptr;
  CU_REQUIRE_OK(cuGraphChildGraphNodeGetGraph(nodes[0], &child));
  CHECK(nodes_of(child).size() == 1);
  run_once(outer, s);
  CHECK(data.read() == std::vector<unsigned>{4});
}
