// Graph memory: allocations made by mem-alloc nodes (captured cuMemAllocAsync or added by hand).
// Their address is fixed when the node is made and never handed out to anything else while the
// graph lives; physical memory is charged when a launch or upload maps it (cuMemGetInfo counts it),
// the graph pool keeps it after the free until cuDeviceGraphMemTrim; an allocation a launch leaves
// allocated must be freed before the next launch unless AUTO_FREE_ON_LAUNCH; work touching the
// range while it is not allocated faults.
#include "graph_fixture.hpp"

using namespace fakecuda_test;

namespace {

constexpr std::size_t kBytes = std::size_t{1} << 20;
constexpr std::size_t kSmall = std::size_t{64} << 10;

cuuint64_t graph_mem(CUgraphMem_attribute attr) {
  cuuint64_t value = 0;
  REQUIRE(cuDeviceGetGraphMemAttribute(0, attr, &value) == CUDA_SUCCESS);
  return value;
}

std::size_t device_free() {
  size_t free = 0;
  size_t total = 0;
  REQUIRE(cuMemGetInfo(&free, &total) == CUDA_SUCCESS);
  return free;
}

bool overlaps(CUdeviceptr a, std::size_t a_bytes, CUdeviceptr b, std::size_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

GraphHandle end_capture(CUstream s) {
  CUgraph g = nullptr;
  REQUIRE(status_name(cuStreamEndCapture(s, &g)) == "CUDA_SUCCESS");
  return GraphHandle(g);
}

// A graph that allocates `bytes` on `s`, fills the first word with `value`, and frees the
// allocation in the graph if `free_it`.
GraphHandle capture_allocation(CUstream s, std::size_t bytes, unsigned value, bool free_it, CUdeviceptr& ptr) {
  CaptureGuard guard(s);
  REQUIRE(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  REQUIRE(status_name(cuMemAllocAsync(&ptr, bytes, s)) == "CUDA_SUCCESS");
  REQUIRE(cuMemsetD32Async(ptr, value, 1, s) == CUDA_SUCCESS);
  if (free_it) {
    REQUIRE(cuMemFreeAsync(ptr, s) == CUDA_SUCCESS);
  }
  return end_capture(s);
}

CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(std::size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

}  // namespace

TEST_CASE("memory allocated in a capture belongs to the graph and is charged when the graph runs",
          "[fakecuda][graphmem]") {
  driver_ready();
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  GraphKernels k;
  PinnedWords out(4);
  TestStream s;
  const std::size_t in_use = stats_now().bytes_in_use;
  const std::size_t free_before = device_free();
  const fakecuda_stats before = stats_now();
  CUdeviceptr p = 0;
  GraphHandle graph;
  {
    CaptureGuard guard(s);
    CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_REQUIRE_OK(cuMemAllocAsync(&p, kBytes, s));
    CU_REQUIRE_OK(cuMemsetD32Async(p, 7, 4, s));
    CU_REQUIRE_OK(affine(k, p, 2, 0, 4, s));
    CU_REQUIRE_OK(cuMemcpyDtoHAsync(out.words, p, 4 * sizeof(unsigned), s));
    CU_REQUIRE_OK(cuMemFreeAsync(p, s));
    graph = end_capture(s);
  }
  CHECK(p != 0);
  CHECK(stats_now().bytes_in_use == in_use);  // nothing is charged by the capture
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  REQUIRE(nodes.size() == 5);
  CHECK(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CHECK(type_of(nodes[4]) == CU_GRAPH_NODE_TYPE_MEM_FREE);
  CUDA_MEM_ALLOC_NODE_PARAMS a{};
  CU_REQUIRE_OK(cuGraphMemAllocNodeGetParams(nodes[0], &a));
  CHECK((a.dptr == p && a.bytesize == kBytes && a.poolProps.allocType == CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(a.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE);
  CUdeviceptr freed = 0;
  CU_REQUIRE_OK(cuGraphMemFreeNodeGetParams(nodes[4], &freed));
  CHECK(freed == p);

  cuuint64_t zero = 0;
  CU_REQUIRE_OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  ExecHandle exec(graph);
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    // Mapped when the launch is issued: charged against the device and seen by cuMemGetInfo...
    CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == kBytes);
    CHECK(stats_now().bytes_in_use - in_use == kBytes);
    CHECK(free_before - device_free() == kBytes);
    // ...but not allocated before its node runs.
    CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  CHECK(std::vector<unsigned>(out.words, out.words + 4) == std::vector<unsigned>(4, 14));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);  // freed by its free node
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == kBytes);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == kBytes);  // kept by the graph pool
  CHECK(stats_now().graph_mem_reserved_bytes == kBytes);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));  // freed in the graph: may launch again, reusing the memory
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(stats_now().bytes_in_use - in_use == kBytes);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(stats_now().bytes_in_use == in_use);
  CHECK(device_free() == free_before);
  const fakecuda_stats after = stats_now();
  CHECK(after.graph_mem_allocs - before.graph_mem_allocs == 2);
  CHECK(after.graph_mem_frees - before.graph_mem_frees == 2);
  // A trimmed graph maps its memory again at its next launch.
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(std::vector<unsigned>(out.words, out.words + 4) == std::vector<unsigned>(4, 14));
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("an allocation a launch leaves allocated must be freed before the next launch", "[fakecuda][graphmem]") {
  driver_ready();
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  TestStream s;
  CUdeviceptr p = 0;
  GraphHandle graph = capture_allocation(s, kSmall, 3, false, p);
  auto exec = std::make_unique<ExecHandle>(graph);
  CU_REQUIRE_OK(cuGraphLaunch(*exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == kSmall);
  // Usable after the launch, by ordinary work and queries.
  unsigned first = 0;
  CU_REQUIRE_OK(cuMemcpyDtoH(&first, p, sizeof first));
  CHECK(first == 3);
  CUdeviceptr base = 0;
  size_t size = 0;
  CU_REQUIRE_OK(cuMemGetAddressRange(&base, &size, p + 100));
  CHECK((base == p && size == kSmall));
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(&pool);
  CU_REQUIRE_OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
  CHECK(pool == nullptr);  // "owned by the graph instead of the memory pool"
  // "If any allocations created by hGraphExec remain unfreed ... the launch will fail".
  CU_CHECK_IS(cuGraphLaunch(*exec, s), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemFreeAsync(p, s));
  CU_CHECK_IS(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);  // freed once
  CU_REQUIRE_OK(cuGraphLaunch(*exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == kSmall);
  CU_REQUIRE_OK(cuMemFree(p));  // cuMemFree works too
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  CU_CHECK_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
  // Left allocated when the graph and its executable graph go: still the program's to free.
  CU_REQUIRE_OK(cuGraphLaunch(*exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  exec.reset();
  CU_REQUIRE_OK(cuGraphDestroy(graph.graph));
  graph.graph = nullptr;
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == kSmall);
  CU_REQUIRE_OK(cuMemcpyDtoH(&first, p, sizeof first));
  CHECK(first == 3);
  CU_REQUIRE_OK(cuMemFreeAsync(p, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
}

TEST_CASE("CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH frees the previous launch's allocations",
          "[fakecuda][graphmem]") {
  driver_ready();
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  TestStream s;
  CUdeviceptr p = 0;
  GraphHandle graph = capture_allocation(s, kSmall, 5, false, p);
  {
    ExecHandle exec(graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    cuuint64_t flags = 0;
    CU_REQUIRE_OK(cuGraphExecGetFlags(exec, &flags));
    CHECK(flags == CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    for (int i = 0; i < 3; ++i) {
      CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    }
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == kSmall);  // one allocation live, not three
    CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == kSmall);
  }
  CU_REQUIRE_OK(cuMemFree(p));
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("a graph allocation's address is never handed out to anything else while the graph lives",
          "[fakecuda][graphmem]") {
  driver_ready();
  TestStream s;
  CUdeviceptr p = 0;
  GraphHandle graph = capture_allocation(s, kSmall, 1, true, p);
  const auto check_no_overlap = [&] {
    std::vector<CUdeviceptr> taken;
    bool overlap = false;
    for (int i = 0; i < 20; ++i) {
      CUdeviceptr q = 0;
      REQUIRE(cuMemAlloc(&q, kSmall) == CUDA_SUCCESS);
      overlap = overlap || overlaps(q, kSmall, p, kSmall);
      taken.push_back(q);
      REQUIRE(cuMemAllocAsync(&q, kSmall, s) == CUDA_SUCCESS);
      overlap = overlap || overlaps(q, kSmall, p, kSmall);
      REQUIRE(cuMemFreeAsync(q, s) == CUDA_SUCCESS);
    }
    GraphHandle other = GraphHandle::create();
    CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(kSmall);
    CUgraphNode node = nullptr;
    REQUIRE(cuGraphAddMemAllocNode(&node, other, nullptr, 0, &a) == CUDA_SUCCESS);
    overlap = overlap || overlaps(a.dptr, kSmall, p, kSmall);
    REQUIRE(cuStreamSynchronize(s) == CUDA_SUCCESS);
    for (const CUdeviceptr q : taken) {
      REQUIRE(cuMemFree(q) == CUDA_SUCCESS);
    }
    return overlap;
  };
  CHECK_FALSE(check_no_overlap());  // before any launch
  {
    ExecHandle exec(graph);
    CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK_FALSE(check_no_overlap());  // after the graph freed it
  }
  CHECK_FALSE(check_no_overlap());  // the executable graph is gone, the graph is not
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("graphs with memory nodes: one executable graph, no clones, no deletions, no cloned children",
          "[fakecuda][graphmem][errors]") {
  driver_ready();
  TestStream s;
  CUdeviceptr p = 0;
  GraphHandle graph = capture_allocation(s, kSmall, 1, true, p);
  const std::vector<CUgraphNode> nodes = nodes_of(graph);
  {
    ExecHandle exec(graph);
    CUgraphExec second = nullptr;
    CU_CHECK_IS(cuGraphInstantiateWithFlags(&second, graph, 0), CUDA_ERROR_INVALID_VALUE);
  }
  ExecHandle again(graph);  // once the first is destroyed
  CUgraph clone = nullptr;
  CU_CHECK_IS(cuGraphClone(&clone, graph), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphDestroyNode(nodes[1]), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphRemoveDependencies(graph, &nodes[0], &nodes[1], nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  GraphHandle parent = GraphHandle::create();
  CUgraphNode child = nullptr;
  CU_CHECK_IS(cuGraphAddChildGraphNode(&child, parent, nullptr, 0, graph), CUDA_ERROR_INVALID_VALUE);
  // Nor may a child graph get memory nodes.
  GraphHandle plain = GraphHandle::create();
  CUgraphNode empty = nullptr;
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&empty, plain, nullptr, 0));
  CU_REQUIRE_OK(cuGraphAddChildGraphNode(&child, parent, nullptr, 0, plain));
  CUgraph embedded = nullptr;
  CU_REQUIRE_OK(cuGraphChildGraphNodeGetGraph(child, &embedded));
  CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(kSmall);
  CUgraphNode node = nullptr;
  CU_CHECK_IS(cuGraphAddMemAllocNode(&node, embedded, nullptr, 0, &a), CUDA_ERROR_INVALID_VALUE);
  // And a graph launched into a capture cannot become a child graph node if it has memory nodes.
  TestStream t;
  CaptureGuard guard(t);
  CU_REQUIRE_OK(cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_CHECK_IS(cuGraphLaunch(again, t), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

TEST_CASE("free nodes name a graph allocation, freed by one graph once", "[fakecuda][graphmem][free]") {
  driver_ready();
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  TestStream s;
  GraphHandle owner = GraphHandle::create();
  CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(kSmall);
  CUgraphNode alloc = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemAllocNode(&alloc, owner, nullptr, 0, &a));
  const CUdeviceptr p = a.dptr;
  REQUIRE(p != 0);
  GraphHandle freer = GraphHandle::create();
  CUgraphNode node = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemFreeNode(&node, freer, nullptr, 0, p));  // freed in another graph...
  CU_CHECK_IS(cuGraphAddMemFreeNode(&node, owner, &alloc, 1, p), CUDA_ERROR_INVALID_VALUE);   // ...not here
  CU_CHECK_IS(cuGraphAddMemFreeNode(&node, freer, nullptr, 0, p), CUDA_ERROR_INVALID_VALUE);  // twice
  CU_CHECK_IS(cuGraphAddMemFreeNode(&node, freer, nullptr, 0, p + 256), CUDA_ERROR_INVALID_VALUE);
  DeviceWords ordinary(4, 0);
  CU_CHECK_IS(cuGraphAddMemFreeNode(&node, freer, nullptr, 0, ordinary.ptr), CUDA_ERROR_INVALID_VALUE);
  ExecHandle allocate(owner);
  ExecHandle release(freer);
  CU_CHECK_IS(cuGraphLaunch(release, s), CUDA_ERROR_INVALID_VALUE);  // nothing to free yet
  CU_REQUIRE_OK(cuGraphLaunch(allocate, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == kSmall);
  CU_REQUIRE_OK(cuGraphLaunch(release, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  CU_REQUIRE_OK(cuGraphLaunch(allocate, s));  // freed: the owner may launch again
  CU_REQUIRE_OK(cuGraphLaunch(release, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  // In a capture, cuMemFreeAsync must name a graph allocation.
  CaptureGuard guard(s);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_CHECK_IS(cuMemFreeAsync(ordinary.ptr, s), CUDA_ERROR_INVALID_VALUE);
  CUgraph g = nullptr;
  CU_CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("hand-built alloc and free nodes; their parameters are checked", "[fakecuda][graphmem]") {
  driver_ready();
  GraphKernels k;
  PinnedWords out(2);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  CUDA_MEM_ALLOC_NODE_PARAMS a = alloc_params(4096);
  CUgraphNode alloc = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &a));
  const CUdeviceptr p = a.dptr;
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuCtxGetCurrent(&ctx));
  const CUDA_MEMSET_NODE_PARAMS m{p, 8, 4, 4, 2, 1};
  CUgraphNode memset = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemsetNode(&memset, g, &alloc, 1, &m, ctx));  // valid: the range is the graph's
  const CUgraphNode kernel = add_affine(g, k, {memset}, p, 3, 1, 2);
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = p;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = out.words;
  c.WidthInBytes = 8;
  c.Height = c.Depth = 1;
  CUgraphNode copy = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemcpyNode(&copy, g, &kernel, 1, &c, ctx));
  CUgraphNode free_node = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemFreeNode(&free_node, g, &copy, 1, p));
  {
    ExecHandle exec(g);
    CU_REQUIRE_OK(cuGraphLaunch(exec, s));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  CHECK(std::vector<unsigned>(out.words, out.words + 2) == std::vector<unsigned>(2, 13));
  CUDA_MEM_ALLOC_NODE_PARAMS back{};
  CU_REQUIRE_OK(cuGraphMemAllocNodeGetParams(alloc, &back));
  CHECK((back.dptr == p && back.bytesize == 4096 && back.accessDescCount == 0));
  CUgraphNode bad = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS wrong = alloc_params(4096);
  wrong.bytesize = 0;
  CU_CHECK_IS(cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &wrong), CUDA_ERROR_INVALID_VALUE);
  wrong = alloc_params(4096);
  wrong.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // "IPC is not supported"
  CU_CHECK_IS(cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &wrong), CUDA_ERROR_INVALID_VALUE);
  wrong = alloc_params(4096);
  wrong.poolProps.location.id = 1;
  CU_CHECK_IS(cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &wrong), CUDA_ERROR_INVALID_VALUE);
  wrong = alloc_params(4096);
  wrong.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
  CU_CHECK_IS(cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &wrong), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphAddMemAllocNode(&bad, g, nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeParams generic{};
  generic.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  generic.alloc.poolProps = a.poolProps;
  generic.alloc.bytesize = 512;
  CU_REQUIRE_OK(cuGraphAddNode(&bad, g, nullptr, nullptr, 0, &generic));
  CHECK(generic.alloc.dptr != 0);  // an out parameter
  CU_CHECK_IS(cuGraphNodeSetParams(bad, &generic), CUDA_ERROR_NOT_SUPPORTED);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("cuMemAllocFromPoolAsync in a capture is an alloc node too", "[fakecuda][graphmem]") {
  driver_ready();
  TestStream s;
  CUmemoryPool pool = nullptr;
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&pool, 0));
  CaptureGuard guard(s);
  CU_REQUIRE_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, kSmall, pool, s));
  CU_REQUIRE_OK(cuMemFreeAsync(p, s));
  GraphHandle g = end_capture(s);
  const std::vector<CUgraphNode> nodes = nodes_of(g);
  REQUIRE(nodes.size() == 2);
  CHECK(type_of(nodes[0]) == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CHECK(type_of(nodes[1]) == CU_GRAPH_NODE_TYPE_MEM_FREE);
}

TEST_CASE("cuGraphUpload maps a graph's memory ahead of its launch", "[fakecuda][graphmem][upload]") {
  driver_ready();
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
  TestStream s;
  CUdeviceptr p = 0;
  GraphHandle graph = capture_allocation(s, kSmall, 1, true, p);
  ExecHandle exec(graph);
  const fakecuda_stats before = stats_now();
  CU_REQUIRE_OK(cuGraphUpload(exec, s));
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == kSmall);
  CHECK(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  const fakecuda_stats uploaded = stats_now();
  CHECK(uploaded.bytes_in_use - before.bytes_in_use == kSmall);
  CHECK(uploaded.graph_uploads - before.graph_uploads == 1);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(stats_now().bytes_in_use == uploaded.bytes_in_use);  // the launch used what the upload mapped
  CU_CHECK_IS(cuGraphUpload(nullptr, s), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}

TEST_CASE("graph memory attributes: only high watermarks can be set, to zero", "[fakecuda][graphmem][errors]") {
  driver_ready();
  cuuint64_t value = 0;
  CU_CHECK_IS(cuDeviceGetGraphMemAttribute(1, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &value), CUDA_ERROR_INVALID_DEVICE);
  CU_CHECK_IS(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuDeviceGetGraphMemAttribute(0, invalid_enum<CUgraphMem_attribute>(9), &value), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &value), CUDA_ERROR_INVALID_VALUE);
  value = 5;
  CU_CHECK_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &value), CUDA_ERROR_INVALID_VALUE);
  value = 0;
  CU_CHECK_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &value), CUDA_SUCCESS);
  CU_CHECK_IS(cuDeviceGraphMemTrim(1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_CASE("work touching a graph allocation while it is not allocated faults", "[fakecuda][graphmem][fault]") {
  driver_ready();
  // The fault is sticky: a context of its own keeps the rest of the suite healthy.
  CUcontext ctx = nullptr;
  CU_REQUIRE_OK(cuCtxCreate(&ctx, nullptr, 0, 0));
  {
    GraphKernels k;
    TestStream s;
    CUdeviceptr p = 0;
    GraphHandle graph = capture_allocation(s, kSmall, 1, true, p);
    SECTION("before its graph ever ran") {
      CU_CHECK_IS(cuMemsetD32Async(p, 1, 1, s), CUDA_SUCCESS);          // an address of the driver's when issued...
      CU_CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);  // ...not allocated when it runs
    }
    SECTION("a kernel after the graph freed it") {
      ExecHandle exec(graph);
      CU_REQUIRE_OK(cuGraphLaunch(exec, s));
      CU_REQUIRE_OK(cuStreamSynchronize(s));
      CU_CHECK_IS(affine(k, p, 1, 1, 1, s), CUDA_SUCCESS);
      CU_CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    }
    SECTION("a copy after the graph freed it") {
      ExecHandle exec(graph);
      CU_REQUIRE_OK(cuGraphLaunch(exec, s));
      unsigned word = 0;
      CU_CHECK_IS(cuMemcpyDtoHAsync(&word, p, sizeof word, s), CUDA_ERROR_ILLEGAL_ADDRESS);  // pageable: waits
    }
  }
  CU_CHECK_IS(cuCtxDestroy(ctx), CUDA_SUCCESS);
  driver_ready();
  CU_CHECK_IS(cuCtxSynchronize(), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuDeviceGraphMemTrim(0));
}
