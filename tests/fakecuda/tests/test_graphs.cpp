// CUDA graphs built by hand: every node type run on real data in dependency order, topology queries
// and edits, cloning, instantiation, parameter updates of graphs and executable graphs, child
// graphs, launch ordering across streams, destruction while a launch is pending, and the shared
// launch path (counters, work observer).
#include "graph_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using namespace fakecuda_test;

namespace {

// Generations cuda.h shows only under their newest names.
using KernelNodeGetParamsV1 = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1*);  // CUDA 10.0
using ExecKernelNodeSetParamsV1 = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1*);  // 10.1
using InstantiateV1 = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);                 // 10.0 and 11.0
using ExecUpdateV1 = CUresult (*)(CUgraphExec, CUgraph, CUgraphNode*, CUgraphExecUpdateResult*);        // CUDA 10.2
using GetEdgesV1 = CUresult (*)(CUgraph, CUgraphNode*, CUgraphNode*, size_t*);                          // CUDA 10.0
using AddDependenciesV1 = CUresult (*)(CUgraph, const CUgraphNode*, const CUgraphNode*, size_t);        // CUDA 10.0
using AddNodeV1 = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraphNodeParams*);  // CUDA 12.2

void bump(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

CUcontext current() {
  CUcontext ctx = nullptr;
  REQUIRE(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
  return ctx;
}

CUgraphNode add_memset(CUgraph g, std::vector<CUgraphNode> deps, CUdeviceptr dst, unsigned value, size_t n) {
  const CUDA_MEMSET_NODE_PARAMS m{dst, n * sizeof(unsigned), value, 4, n, 1};
  CUgraphNode node = nullptr;
  REQUIRE(status_name(cuGraphAddMemsetNode(&node, g, deps.data(), deps.size(), &m, current())) == "CUDA_SUCCESS");
  return node;
}

CUDA_MEMCPY3D copy_1d(CUmemorytype dst_type, void* dst, CUmemorytype src_type, const void* src, size_t bytes) {
  CUDA_MEMCPY3D c{};
  c.dstMemoryType = dst_type;
  c.srcMemoryType = src_type;
  if (dst_type == CU_MEMORYTYPE_HOST) {
    c.dstHost = dst;
  } else {
    c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  }
  if (src_type == CU_MEMORYTYPE_HOST) {
    c.srcHost = src;
  } else {
    c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  }
  c.WidthInBytes = bytes;
  c.Height = 1;
  c.Depth = 1;
  return c;
}

void* as_host(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

struct HostProbe {
  const unsigned* watched = nullptr;
  unsigned seen = 0;
  std::atomic<int> calls{0};
};

void probe(void* user) {
  auto* p = static_cast<HostProbe*>(user);
  p->seen = *p->watched;
  p->calls.fetch_add(1);
}

void launch_and_wait(CUgraphExec e, CUstream s) {
  CU_REQUIRE_OK(cuGraphLaunch(e, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
}

}  // namespace

TEST_CASE("a hand-built graph of every node type runs in dependency order on real data", "[fakecuda][graphs]") {
  driver_ready();
  GraphKernels k;
  DeviceWords a(4, 0);
  DeviceWords b(4, 0);
  PinnedWords out(4);
  TestStream s;
  TestStream other;
  TestEvent recorded;
  TestEvent waited;
  CU_REQUIRE_OK(cuEventRecord(waited, other));
  HostProbe seen;
  seen.watched = out.words;
  GraphHandle inner = GraphHandle::create();
  add_affine(inner, k, {}, a.ptr, 2, 0, 4);  // 5 -> 10
  GraphHandle graph = GraphHandle::create();
  CUgraphNode wait = nullptr;
  CU_REQUIRE_OK(cuGraphAddEventWaitNode(&wait, graph, nullptr, 0, waited));
  const CUgraphNode memset = add_memset(graph, {wait}, a.ptr, 1, 4);
  const CUgraphNode kernel = add_affine(graph, k, {memset}, a.ptr, 3, 2, 4);  // 1 -> 5
  CUgraphNode child = nullptr;
  CU_REQUIRE_OK(cuGraphAddChildGraphNode(&child, graph, &kernel, 1, inner));
  const CUDA_MEMCPY3D d2d = copy_1d(CU_MEMORYTYPE_DEVICE, as_host(b.ptr), CU_MEMORYTYPE_DEVICE, as_host(a.ptr), 16);
  CUgraphNode copy = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemcpyNode(&copy, graph, &child, 1, &d2d, current()));
  const CUDA_MEMCPY3D d2h = copy_1d(CU_MEMORYTYPE_HOST, out.words, CU_MEMORYTYPE_DEVICE, as_host(b.ptr), 16);
  CUgraphNode copy_out = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemcpyNode(&copy_out, graph, &copy, 1, &d2h, current()));
  const CUDA_HOST_NODE_PARAMS h{probe, &seen};
  CUgraphNode host = nullptr;
  CU_REQUIRE_OK(cuGraphAddHostNode(&host, graph, &copy_out, 1, &h));
  CUgraphNode record = nullptr;
  CU_REQUIRE_OK(cuGraphAddEventRecordNode(&record, graph, &host, 1, recorded));
  CUgraphNode empty = nullptr;
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&empty, graph, &record, 1));
  std::vector<CUgraphNodeType> types;
  for (CUgraphNode n : nodes_of(graph)) {
    types.push_back(type_of(n));
  }
  CHECK(types == std::vector<CUgraphNodeType>{
                     CU_GRAPH_NODE_TYPE_WAIT_EVENT, CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_KERNEL,
                     CU_GRAPH_NODE_TYPE_GRAPH, CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMCPY,
                     CU_GRAPH_NODE_TYPE_HOST, CU_GRAPH_NODE_TYPE_EVENT_RECORD, CU_GRAPH_NODE_TYPE_EMPTY});
  ExecHandle exec(graph);
  CHECK(a.read() == std::vector<unsigned>(4, 0));  // instantiating runs nothing
  launch_and_wait(exec, s);
  CHECK(std::vector<unsigned>(out.words, out.words + 4) == std::vector<unsigned>(4, 10));
  CHECK(b.read() == std::vector<unsigned>(4, 10));
  CHECK(seen.seen == 10);  // the host node ran after the copy it depends on
  CHECK(seen.calls.load() == 1);
  CU_CHECK_IS(cuEventQuery(recorded), CUDA_SUCCESS);
  // The graph holds its own copies: changing the child graph it was cloned from changes nothing.
  add_affine(inner, k, {}, a.ptr, 100, 0, 4);
  launch_and_wait(exec, s);
  CHECK(std::vector<unsigned>(out.words, out.words + 4) == std::vector<unsigned>(4, 10));
  CHECK(seen.calls.load() == 2);
}

TEST_CASE("graph topology can be listed and edited", "[fakecuda][graphs][topology]") {
  driver_ready();
  GraphHandle g = GraphHandle::create();
  CUgraphNode n[4] = {};
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&n[0], g, nullptr, 0));
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&n[1], g, &n[0], 1));
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&n[2], g, &n[0], 1));
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&n[3], g, &n[1], 1));
  CHECK(nodes_of(g) == std::vector<CUgraphNode>(n, n + 4));
  size_t count = 0;
  CU_REQUIRE_OK(cuGraphGetRootNodes(g, nullptr, &count));
  CHECK(count == 1);
  // More room than nodes: the rest is NULL and the count is what there is; less: truncated.
  CUgraphNode roots[3] = {n[3], n[3], n[3]};
  count = 3;
  CU_REQUIRE_OK(cuGraphGetRootNodes(g, roots, &count));
  CHECK((count == 1 && roots[0] == n[0] && roots[1] == nullptr && roots[2] == nullptr));
  CUgraphNode two[2] = {};
  count = 2;
  CU_REQUIRE_OK(cuGraphGetNodes(g, two, &count));
  CHECK((count == 2 && two[0] == n[0] && two[1] == n[1]));
  CUgraphNode from[3] = {};
  CUgraphNode to[3] = {};
  count = 3;
  CU_REQUIRE_OK(driver_symbol<GetEdgesV1>("cuGraphGetEdges")(g, from, to, &count));
  CHECK(count == 3);
  CHECK((from[0] == n[0] && to[0] == n[1] && from[2] == n[1] && to[2] == n[3]));
  CUgraphEdgeData data[3] = {};
  count = 3;
  CU_REQUIRE_OK(cuGraphGetEdges(g, from, to, data, &count));
  CHECK(count == 3);
  CU_CHECK_IS(cuGraphGetEdges(g, nullptr, to, nullptr, &count), CUDA_ERROR_INVALID_VALUE);
  std::vector<CUgraphNode> dependents(2);
  count = 2;
  CU_REQUIRE_OK(cuGraphNodeGetDependentNodes(n[0], dependents.data(), nullptr, &count));
  CHECK(dependents == std::vector<CUgraphNode>{n[1], n[2]});
  // Edits: an edge that exists, a missing edge, a self edge, a node of another graph.
  CU_CHECK_IS(cuGraphAddDependencies(g, &n[0], &n[1], nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphRemoveDependencies(g, &n[2], &n[3], nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphAddDependencies(g, &n[2], &n[2], nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  GraphHandle other = GraphHandle::create();
  CUgraphNode foreign = nullptr;
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&foreign, other, nullptr, 0));
  CU_CHECK_IS(cuGraphAddDependencies(g, &foreign, &n[3], nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphAddEmptyNode(&foreign, g, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
  CUgraphNode twice[2] = {n[0], n[0]};
  CUgraphNode extra = nullptr;
  CU_CHECK_IS(cuGraphAddEmptyNode(&extra, g, twice, 2), CUDA_ERROR_INVALID_VALUE);  // duplicates
  CU_REQUIRE_OK(driver_symbol<AddDependenciesV1>("cuGraphAddDependencies")(g, &n[2], &n[3], 1));
  CHECK(dependencies_of(n[3]) == std::vector<CUgraphNode>{n[1], n[2]});
  CU_REQUIRE_OK(cuGraphRemoveDependencies(g, &n[1], &n[3], nullptr, 1));
  CHECK(dependencies_of(n[3]) == std::vector<CUgraphNode>{n[2]});
  // Edge data: a programmatic edge needs kernel nodes; a lossy query is refused.
  CUgraphEdgeData programmatic{};
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  programmatic.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  CU_CHECK_IS(cuGraphAddDependencies(g, &n[1], &n[2], &programmatic, 1), CUDA_ERROR_INVALID_VALUE);
  CUgraphEdgeData to_port{};
  to_port.to_port = 1;
  CU_CHECK_IS(cuGraphAddDependencies(g, &n[1], &n[2], &to_port, 1), CUDA_ERROR_INVALID_VALUE);
  // Destroying a node severs its edges.
  CU_REQUIRE_OK(cuGraphDestroyNode(n[2]));
  CHECK(dependencies_of(n[3]).empty());
  CHECK(nodes_of(g).size() == 3);
  CUgraphNodeType t;
  CU_CHECK_IS(cuGraphNodeGetType(n[2], &t), CUDA_ERROR_INVALID_VALUE);  // gone
}

TEST_CASE("kernel node parameters are copied when set, and read back from the node", "[fakecuda][graphs][kernel]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(2, 1);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  AffineArgs call(data.ptr, 4, 1, 2);
  CUDA_KERNEL_NODE_PARAMS p = call.node(k);
  CUgraphNode node = nullptr;
  CU_REQUIRE_OK(cuGraphAddKernelNode(&node, g, nullptr, 0, &p));
  call.mul = 1000;  // after the call: not seen by the node
  CUDA_KERNEL_NODE_PARAMS back{};
  CU_REQUIRE_OK(cuGraphKernelNodeGetParams(node, &back));
  CHECK(*static_cast<unsigned*>(back.kernelParams[1]) == 4);
  CUDA_KERNEL_NODE_PARAMS_v1 old{};
  CU_REQUIRE_OK(driver_symbol<KernelNodeGetParamsV1>("cuGraphKernelNodeGetParams")(node, &old));
  CHECK(old.func == k.affine);
  {
    ExecHandle exec(g);
    launch_and_wait(exec, s);
  }
  CHECK(data.read() == std::vector<unsigned>(2, 5));
  call.mul = 2;
  CU_REQUIRE_OK(cuGraphKernelNodeSetParams(node, &p));
  {
    ExecHandle exec(g);
    launch_and_wait(exec, s);
  }
  CHECK(data.read() == std::vector<unsigned>(2, 11));
  // Arguments through `extra`: read back as `extra`.
  unsigned char packed[20] = {};
  std::memcpy(packed, &call.ptr, 8);
  const unsigned values[3] = {1, 1, 2};
  std::memcpy(packed + 8, values, sizeof values);
  size_t size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  p.kernelParams = nullptr;
  p.extra = extra;
  CU_REQUIRE_OK(cuGraphKernelNodeSetParams(node, &p));
  CU_REQUIRE_OK(cuGraphKernelNodeGetParams(node, &back));
  CHECK(back.kernelParams == nullptr);
  REQUIRE(back.extra != nullptr);
  CHECK(back.extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER);
  // Bad parameters.
  p.extra = nullptr;
  CU_CHECK_IS(cuGraphKernelNodeSetParams(node, &p), CUDA_ERROR_INVALID_VALUE);  // no arguments
  p.kernelParams = call.args;
  p.extra = extra;
  CU_CHECK_IS(cuGraphKernelNodeSetParams(node, &p), CUDA_ERROR_INVALID_VALUE);  // both forms
  p.extra = nullptr;
  p.blockDimX = 4096;
  CU_CHECK_IS(cuGraphAddKernelNode(&node, g, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  p.blockDimX = 1;
  p.func = reinterpret_cast<CUfunction>(&p);
  CU_CHECK_IS(cuGraphAddKernelNode(&node, g, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMSET_NODE_PARAMS wrong{};
  CU_CHECK_IS(cuGraphMemsetNodeGetParams(node, &wrong), CUDA_ERROR_INVALID_VALUE);  // not a memset node
}

TEST_CASE("memcpy, memset and event nodes take new parameters of their own type, read back as set",
          "[fakecuda][graphs][params]") {
  driver_ready();
  GraphHandle g = GraphHandle::create();
  DeviceWords a(4, 0);
  const CUgraphNode memset = add_memset(g, {}, a.ptr, 1, 4);
  DeviceWords b(4, 7);
  const CUDA_MEMCPY3D all = copy_1d(CU_MEMORYTYPE_DEVICE, as_host(b.ptr), CU_MEMORYTYPE_DEVICE, as_host(a.ptr), 16);
  CUgraphNode copy = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemcpyNode(&copy, g, &memset, 1, &all, current()));
  TestStream s;
  TestEvent first;
  TestEvent second;
  CU_REQUIRE_OK(cuEventRecord(first, s));
  CU_REQUIRE_OK(cuEventRecord(second, s));
  CUgraphNode record = nullptr;
  CU_REQUIRE_OK(cuGraphAddEventRecordNode(&record, g, &copy, 1, first));
  CUgraphNode wait = nullptr;
  CU_REQUIRE_OK(cuGraphAddEventWaitNode(&wait, g, nullptr, 0, first));
  // A memset of 3, a copy of the first two words, the other event: kept in the nodes' context.
  const CUDA_MEMSET_NODE_PARAMS three{a.ptr, 4 * sizeof(unsigned), 3, 4, 4, 1};
  CU_REQUIRE_OK(cuGraphMemsetNodeSetParams(memset, &three));
  const CUDA_MEMCPY3D half = copy_1d(CU_MEMORYTYPE_DEVICE, as_host(b.ptr), CU_MEMORYTYPE_DEVICE, as_host(a.ptr), 8);
  CU_REQUIRE_OK(cuGraphMemcpyNodeSetParams(copy, &half));
  CU_REQUIRE_OK(cuGraphEventRecordNodeSetEvent(record, second));
  CU_REQUIRE_OK(cuGraphEventWaitNodeSetEvent(wait, second));
  CUDA_MEMSET_NODE_PARAMS m{};
  CU_REQUIRE_OK(cuGraphMemsetNodeGetParams(memset, &m));
  CHECK(m.value == 3);
  CUDA_MEMCPY3D c{};
  CU_REQUIRE_OK(cuGraphMemcpyNodeGetParams(copy, &c));
  CHECK(c.WidthInBytes == 8);
  CUevent e = nullptr;
  CU_REQUIRE_OK(cuGraphEventRecordNodeGetEvent(record, &e));
  CHECK(e == second.event);
  e = nullptr;
  CU_REQUIRE_OK(cuGraphEventWaitNodeGetEvent(wait, &e));
  CHECK(e == second.event);
  {
    ExecHandle exec(g);
    launch_and_wait(exec, s);
  }
  CHECK(b.read() == std::vector<unsigned>{3, 3, 7, 7});
  // No parameters, or a node of another type: refused, the node as it was.
  CU_CHECK_IS(cuGraphMemsetNodeSetParams(memset, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphMemcpyNodeSetParams(memset, &all), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphMemsetNodeSetParams(copy, &three), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphEventRecordNodeSetEvent(wait, first), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphEventWaitNodeSetEvent(record, first), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphEventRecordNodeGetEvent(wait, &e), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphMemcpyNodeGetParams(copy, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuGraphMemcpyNodeGetParams(copy, &c));
  CHECK(c.WidthInBytes == 8);
}

TEST_CASE("a clone is independent of its original, and cuGraphNodeFindInClone maps nodes",
          "[fakecuda][graphs][clone]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  const CUgraphNode first = add_affine(g, k, {}, data.ptr, 2, 0, 1);
  CUgraph raw = nullptr;
  CU_REQUIRE_OK(cuGraphClone(&raw, g));
  GraphHandle clone(raw);
  add_affine(g, k, {first}, data.ptr, 10, 0, 1);  // only the original grows
  CHECK(nodes_of(clone).size() == 1);
  CUgraphNode mapped = nullptr;
  CU_REQUIRE_OK(cuGraphNodeFindInClone(&mapped, first, clone));
  CHECK(mapped == nodes_of(clone)[0]);
  CU_CHECK_IS(cuGraphNodeFindInClone(&mapped, nodes_of(g)[1], clone), CUDA_ERROR_INVALID_VALUE);
  ExecHandle exec(clone);
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>{2});
}

TEST_CASE("instantiation checks the graph and its flags", "[fakecuda][graphs][instantiate]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 3);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  const CUgraphNode a = add_affine(g, k, {}, data.ptr, 2, 0, 1);
  const CUgraphNode b = add_affine(g, k, {a}, data.ptr, 1, 1, 1);
  CUgraphExec e = nullptr;
  CU_CHECK_IS(cuGraphInstantiateWithFlags(&e, g, 64), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphInstantiateWithFlags(&e, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphInstantiateWithFlags(
                  &e, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphInstantiateWithFlags(nullptr, g, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphInstantiateWithFlags(&e, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  SECTION("the CUDA 10.0 and 11.0 generations") {
    char log[128] = "unchanged";
    CUgraphNode error = nullptr;
    CU_REQUIRE_OK(driver_symbol<InstantiateV1>("cuGraphInstantiate")(&e, g, &error, log, sizeof log));
    CHECK(error == nullptr);
    CU_CHECK_IS(cuGraphExecDestroy(e), CUDA_SUCCESS);
    CU_REQUIRE_OK(driver_symbol<InstantiateV1>("cuGraphInstantiate_v2")(&e, g, nullptr, nullptr, 0));
    launch_and_wait(e, s);
    CHECK(data.read() == std::vector<unsigned>{7});
    CU_CHECK_IS(cuGraphExecDestroy(e), CUDA_SUCCESS);
  }
  SECTION("a cycle is an invalid structure") {
    CU_REQUIRE_OK(cuGraphAddDependencies(g, &b, &a, nullptr, 1));
    CUDA_GRAPH_INSTANTIATE_PARAMS p{};
    CU_CHECK_IS(cuGraphInstantiateWithParams(&e, g, &p), CUDA_ERROR_INVALID_VALUE);
    CHECK(p.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
    CHECK((p.hErrNode_out == a || p.hErrNode_out == b));
    char log[128] = {};
    CUgraphNode error = nullptr;
    CU_CHECK_IS(driver_symbol<InstantiateV1>("cuGraphInstantiate")(&e, g, &error, log, sizeof log),
                CUDA_ERROR_INVALID_VALUE);
    CHECK((error == a || error == b));
    CHECK(std::string(log).find("cycle") != std::string::npos);
  }
  SECTION("with parameters: upload, flags read back") {
    CUDA_GRAPH_INSTANTIATE_PARAMS p{};
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    p.hUploadStream = s;
    CU_REQUIRE_OK(cuGraphInstantiateWithParams(&e, g, &p));
    CHECK(p.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS);
    cuuint64_t flags = 0;
    CU_REQUIRE_OK(cuGraphExecGetFlags(e, &flags));
    CHECK(flags == CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);  // UPLOAD is not reported
    CU_CHECK_IS(cuGraphExecDestroy(e), CUDA_SUCCESS);
  }
  SECTION("device launch: only kernel, memcpy, memset and child graph nodes") {
    CUgraphNode host = nullptr;
    const CUDA_HOST_NODE_PARAMS h{[](void*) {}, nullptr};
    CU_REQUIRE_OK(cuGraphAddHostNode(&host, g, nullptr, 0, &h));
    CUDA_GRAPH_INSTANTIATE_PARAMS p{};
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    CU_CHECK_IS(cuGraphInstantiateWithParams(&e, g, &p), CUDA_ERROR_INVALID_VALUE);
    CHECK(p.result_out == CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
    CHECK(p.hErrNode_out == host);
  }
}

TEST_CASE("an executable graph takes new node parameters without changing its graph", "[fakecuda][graphs][exec]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(2, 0);
  DeviceWords other(2, 0);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  const CUgraphNode memset = add_memset(g, {}, data.ptr, 1, 2);
  const CUgraphNode kernel = add_affine(g, k, {memset}, data.ptr, 3, 0, 2);
  ExecHandle exec(g);
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>(2, 3));
  // New kernel arguments (CUDA 12 generation), then the CUDA 10.1 generation.
  AffineArgs call(data.ptr, 5, 1, 2);
  const CUDA_KERNEL_NODE_PARAMS p = call.node(k);
  CU_REQUIRE_OK(cuGraphExecKernelNodeSetParams(exec, kernel, &p));
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>(2, 6));
  CUDA_KERNEL_NODE_PARAMS back{};
  CU_REQUIRE_OK(cuGraphKernelNodeGetParams(kernel, &back));
  CHECK(*static_cast<unsigned*>(back.kernelParams[1]) == 3);  // the graph's node is not modified
  CUDA_KERNEL_NODE_PARAMS_v1 old{};
  std::memcpy(&old, &p, sizeof old);
  call.mul = 7;
  CU_REQUIRE_OK(driver_symbol<ExecKernelNodeSetParamsV1>("cuGraphExecKernelNodeSetParams")(exec, kernel, &old));
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>(2, 8));
  // A 1D memset may change address and value; a memset may not become 2D.
  CUDA_MEMSET_NODE_PARAMS m{other.ptr, 8, 4, 4, 2, 1};
  CU_REQUIRE_OK(cuGraphExecMemsetNodeSetParams(exec, memset, &m, current()));
  launch_and_wait(exec, s);
  CHECK(other.read() == std::vector<unsigned>(2, 4));
  CHECK(data.read() == std::vector<unsigned>(2, 8 * 7 + 1));  // no memset of `data` any more
  CUDA_MEMSET_NODE_PARAMS two_d{data.ptr, 4, 1, 4, 1, 2};
  CU_CHECK_IS(cuGraphExecMemsetNodeSetParams(exec, memset, &two_d, current()), CUDA_ERROR_INVALID_VALUE);
  // Node and type mismatches.
  CU_CHECK_IS(cuGraphExecMemsetNodeSetParams(exec, kernel, &m, current()), CUDA_ERROR_INVALID_VALUE);
  GraphHandle unrelated = GraphHandle::create();
  const CUgraphNode stranger = add_affine(unrelated, k, {}, data.ptr, 1, 0, 2);
  CU_CHECK_IS(cuGraphExecKernelNodeSetParams(exec, stranger, &p), CUDA_ERROR_INVALID_VALUE);
  // Disabled nodes do not run; host nodes cannot be disabled.
  CU_REQUIRE_OK(cuGraphNodeSetEnabled(exec, kernel, 0));
  unsigned enabled = 1;
  CU_REQUIRE_OK(cuGraphNodeGetEnabled(exec, kernel, &enabled));
  CHECK(enabled == 0);
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>(2, 57));
  CU_REQUIRE_OK(cuGraphNodeSetEnabled(exec, kernel, 1));
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>(2, 57 * 7 + 1));
  CUgraphNode host = nullptr;
  const CUDA_HOST_NODE_PARAMS h{[](void*) {}, nullptr};
  CU_REQUIRE_OK(cuGraphAddHostNode(&host, g, nullptr, 0, &h));
  CU_CHECK_IS(cuGraphNodeSetEnabled(exec, host, 0), CUDA_ERROR_INVALID_VALUE);  // not in the executable graph
}

TEST_CASE("cuGraphExecUpdate takes the parameters of a graph with the same topology", "[fakecuda][graphs][update]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  const CUgraphNode first = add_affine(g, k, {}, data.ptr, 2, 0, 1);
  add_affine(g, k, {first}, data.ptr, 1, 1, 1);
  ExecHandle exec(g);
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>{3});
  CUgraphExecUpdateResultInfo info{};
  SECTION("same topology, new parameters") {
    GraphHandle same = GraphHandle::create();
    const CUgraphNode x = add_affine(same, k, {}, data.ptr, 10, 0, 1);
    add_affine(same, k, {x}, data.ptr, 1, 5, 1);
    CU_REQUIRE_OK(cuGraphExecUpdate(exec, same, &info));
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    launch_and_wait(exec, s);
    CHECK(data.read() == std::vector<unsigned>{35});
    // Set-params still name the instantiated graph's nodes.
    AffineArgs call(data.ptr, 1, 0, 1);
    const CUDA_KERNEL_NODE_PARAMS p = call.node(k);
    CU_REQUIRE_OK(cuGraphExecKernelNodeSetParams(exec, first, &p));
    launch_and_wait(exec, s);
    CHECK(data.read() == std::vector<unsigned>{40});
  }
  SECTION("another node count") {
    GraphHandle more = GraphHandle::create();
    const CUgraphNode x = add_affine(more, k, {}, data.ptr, 10, 0, 1);
    add_affine(more, k, {x}, data.ptr, 1, 5, 1);
    add_affine(more, k, {x}, data.ptr, 1, 5, 1);
    CU_CHECK_IS(cuGraphExecUpdate(exec, more, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    CHECK(info.errorNode == nullptr);
  }
  SECTION("another node type") {
    GraphHandle typed = GraphHandle::create();
    const CUgraphNode x = add_affine(typed, k, {}, data.ptr, 10, 0, 1);
    const CUgraphNode m = add_memset(typed, {x}, data.ptr, 0, 1);
    CU_CHECK_IS(cuGraphExecUpdate(exec, typed, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    CHECK(info.errorNode == m);
  }
  SECTION("another edge, through the CUDA 10.2 generation") {
    GraphHandle rewired = GraphHandle::create();
    add_affine(rewired, k, {}, data.ptr, 10, 0, 1);
    const CUgraphNode y = add_affine(rewired, k, {}, data.ptr, 1, 5, 1);  // no edge
    CUgraphNode error = nullptr;
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    CU_CHECK_IS(driver_symbol<ExecUpdateV1>("cuGraphExecUpdate")(exec, rewired, &error, &result),
                CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    CHECK(error == y);
    launch_and_wait(exec, s);  // the executable graph is unchanged
    CHECK(data.read() == std::vector<unsigned>{7});
  }
}

TEST_CASE("child graphs: embedded, owned by their node, updatable in an executable graph",
          "[fakecuda][graphs][child]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s;
  GraphHandle inner = GraphHandle::create();
  add_affine(inner, k, {}, data.ptr, 2, 0, 1);
  GraphHandle g = GraphHandle::create();
  CUgraphNode child = nullptr;
  CU_REQUIRE_OK(cuGraphAddChildGraphNode(&child, g, nullptr, 0, inner));
  add_affine(g, k, {child}, data.ptr, 1, 1, 1);
  CUgraph embedded = nullptr;
  CU_REQUIRE_OK(cuGraphChildGraphNodeGetGraph(child, &embedded));
  CHECK(embedded != inner.graph);                                   // cloned
  CU_CHECK_IS(cuGraphDestroy(embedded), CUDA_ERROR_INVALID_VALUE);  // owned by the node
  CUgraphExec e = nullptr;
  CU_CHECK_IS(cuGraphInstantiateWithFlags(&e, embedded, 0), CUDA_ERROR_INVALID_VALUE);
  add_affine(embedded, k, {nodes_of(embedded)[0]}, data.ptr, 3, 0, 1);  // not a copy: the node sees it
  ExecHandle exec(g);
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>{1 * 2 * 3 + 1});
  // The executable graph's child takes a same-shaped graph's parameters.
  GraphHandle same = GraphHandle::create();
  const CUgraphNode x = add_affine(same, k, {}, data.ptr, 1, 0, 1);
  add_affine(same, k, {x}, data.ptr, 1, 0, 1);
  CU_REQUIRE_OK(cuGraphExecChildGraphNodeSetParams(exec, child, same));
  launch_and_wait(exec, s);
  CHECK(data.read() == std::vector<unsigned>{8});
  CU_CHECK_IS(cuGraphExecChildGraphNodeSetParams(exec, child, inner), CUDA_ERROR_INVALID_VALUE);  // 1 node, not 2
}

TEST_CASE("graph launches are ordered in their stream and behind the same graph's previous launch",
          "[fakecuda][graphs][order]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 1);
  TestStream s1;
  TestStream s2;
  TestEvent e;
  GraphHandle doubles = GraphHandle::create();
  add_affine(doubles, k, {}, data.ptr, 2, 0, 1);
  GraphHandle adds = GraphHandle::create();
  add_affine(adds, k, {}, data.ptr, 1, 3, 1);
  ExecHandle x2(doubles);
  ExecHandle plus3(adds);
  SECTION("two graphs on two streams, ordered by an event") {
    Gate gate;
    gate.hold(s1);
    CU_REQUIRE_OK(cuGraphLaunch(x2, s1));
    CU_REQUIRE_OK(cuEventRecord(e, s1));
    CU_REQUIRE_OK(cuStreamWaitEvent(s2, e, 0));
    CU_REQUIRE_OK(cuGraphLaunch(plus3, s2));
    CU_CHECK_IS(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
    CHECK(data.read() == std::vector<unsigned>{1});
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s2));
    CHECK(data.read() == std::vector<unsigned>{1 * 2 + 3});
  }
  SECTION("one executable graph launched on two streams runs one launch at a time") {
    Gate gate;
    gate.hold(s1);
    CU_REQUIRE_OK(cuGraphLaunch(x2, s1));
    CU_REQUIRE_OK(cuGraphLaunch(x2, s2));  // waits for the launch on s1
    CU_CHECK_IS(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s2));
    CHECK(data.read() == std::vector<unsigned>{4});
  }
  SECTION("a launch follows the work issued to its stream before it") {
    Gate gate;
    gate.hold(s1);
    CU_REQUIRE_OK(cuMemsetD32Async(data.ptr, 10, 1, s1));
    CU_REQUIRE_OK(cuGraphLaunch(plus3, s1));
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s1));
    CHECK(data.read() == std::vector<unsigned>{13});
  }
}

TEST_CASE("destroying an executable graph or its graph while a launch is pending lets the launch finish",
          "[fakecuda][graphs][destroy]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 2);
  TestStream s;
  CUgraph g = nullptr;
  CU_REQUIRE_OK(cuGraphCreate(&g, 0));
  add_affine(g, k, {}, data.ptr, 5, 0, 1);
  CUgraphExec e = nullptr;
  CU_REQUIRE_OK(cuGraphInstantiateWithFlags(&e, g, 0));
  CU_REQUIRE_OK(cuGraphDestroy(g));  // the executable graph does not need its graph
  Gate gate;
  gate.hold(s);
  CU_REQUIRE_OK(cuGraphLaunch(e, s));
  // "If the executable graph is in-flight, it will not be terminated, but rather freed
  // asynchronously on completion."
  CU_REQUIRE_OK(cuGraphExecDestroy(e));
  CU_CHECK_IS(cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphLaunch(e, s), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
  gate.open();
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(data.read() == std::vector<unsigned>{10});
}

TEST_CASE("cuGraphAddNode builds each supported node type from its tagged union", "[fakecuda][graphs][generic]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(2, 0);
  PinnedWords out(2);
  TestStream s;
  TestEvent e;
  GraphHandle g = GraphHandle::create();
  std::atomic<int> calls{0};
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_MEMSET;
  p.memset.dst = data.ptr;
  p.memset.pitch = 8;
  p.memset.value = 3;
  p.memset.elementSize = 4;
  p.memset.width = 2;
  p.memset.height = 1;
  p.memset.ctx = current();
  CUgraphNode memset = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&memset, g, nullptr, nullptr, 0, &p));
  AffineArgs call(data.ptr, 2, 1, 2);
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_KERNEL;
  p.kernel.func = k.affine;
  p.kernel.gridDimX = p.kernel.gridDimY = p.kernel.gridDimZ = 1;
  p.kernel.blockDimX = p.kernel.blockDimY = p.kernel.blockDimZ = 1;
  p.kernel.kernelParams = call.args;
  CUgraphNode kernel = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&kernel, g, &memset, nullptr, 1, &p));
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  p.memcpy.copyCtx = current();
  p.memcpy.copyParams = copy_1d(CU_MEMORYTYPE_HOST, out.words, CU_MEMORYTYPE_DEVICE, as_host(data.ptr), 8);
  CUgraphNode copy = nullptr;
  CU_REQUIRE_OK(driver_symbol<AddNodeV1>("cuGraphAddNode")(&copy, g, &kernel, 1, &p));  // CUDA 12.2
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_HOST;
  p.host.fn = bump;
  p.host.userData = &calls;
  CUgraphNode host = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&host, g, &copy, nullptr, 1, &p));
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
  p.eventRecord.event = e;
  CUgraphNode record = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&record, g, &host, nullptr, 1, &p));
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUgraphNode empty = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&empty, g, &record, nullptr, 1, &p));
  // A child graph moved in: its handle now belongs to the node.
  CUgraph moved = nullptr;
  CU_REQUIRE_OK(cuGraphCreate(&moved, 0));
  CUgraphNode inside = nullptr;
  CU_REQUIRE_OK(cuGraphAddEmptyNode(&inside, moved, nullptr, 0));
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_GRAPH;
  p.graph.graph = moved;
  p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  CUgraphNode child = nullptr;
  CU_REQUIRE_OK(cuGraphAddNode(&child, g, &empty, nullptr, 1, &p));
  CUgraph got = nullptr;
  CU_REQUIRE_OK(cuGraphChildGraphNodeGetGraph(child, &got));
  CHECK(got == moved);
  CU_CHECK_IS(cuGraphDestroy(moved), CUDA_ERROR_INVALID_VALUE);
  {
    ExecHandle exec(g);
    launch_and_wait(exec, s);
  }
  CHECK(std::vector<unsigned>(out.words, out.words + 2) == std::vector<unsigned>(2, 7));
  CHECK(calls.load() == 1);
  CU_CHECK_IS(cuEventQuery(e), CUDA_SUCCESS);
  // Set-params through the tagged union, on a graph and on an executable graph.
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_MEMSET;
  p.memset.dst = data.ptr;
  p.memset.pitch = 8;
  p.memset.value = 10;
  p.memset.elementSize = 4;
  p.memset.width = 2;
  p.memset.height = 1;
  p.memset.ctx = current();
  CU_REQUIRE_OK(cuGraphNodeSetParams(memset, &p));
  {
    ExecHandle exec(g);
    launch_and_wait(exec, s);
    CHECK(std::vector<unsigned>(out.words, out.words + 2) == std::vector<unsigned>(2, 21));
    p.memset.value = 0;
    CU_REQUIRE_OK(cuGraphExecNodeSetParams(exec, memset, &p));
    launch_and_wait(exec, s);
    CHECK(std::vector<unsigned>(out.words, out.words + 2) == std::vector<unsigned>(2, 1));
  }
  // What the union must not hold.
  p.reserved0[1] = 1;
  CUgraphNode bad = nullptr;
  CU_CHECK_IS(cuGraphAddNode(&bad, g, nullptr, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_EMPTY;
  p.reserved1[3] = 1;  // bytes past the (empty) member
  CU_CHECK_IS(cuGraphAddNode(&bad, g, nullptr, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
  CU_CHECK_IS(cuGraphAddNode(&bad, g, nullptr, nullptr, 0, &p), CUDA_ERROR_NOT_SUPPORTED);
  p = CUgraphNodeParams{};
  p.type = CU_GRAPH_NODE_TYPE_HOST;
  p.host.fn = bump;
  CU_CHECK_IS(cuGraphNodeSetParams(memset, &p), CUDA_ERROR_INVALID_VALUE);  // another type
}

TEST_CASE("graph kernels, copies and memsets go through the launch path: counters and the work observer",
          "[fakecuda][graphs][observer]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(4, 0);
  PinnedWords out(4);
  TestStream s;
  GraphHandle g = GraphHandle::create();
  const CUgraphNode memset = add_memset(g, {}, data.ptr, 1, 4);
  const CUgraphNode kernel = add_affine(g, k, {memset}, data.ptr, 2, 0, 4);
  const CUDA_MEMCPY3D d2h = copy_1d(CU_MEMORYTYPE_HOST, out.words, CU_MEMORYTYPE_DEVICE, as_host(data.ptr), 16);
  CUgraphNode copy = nullptr;
  CU_REQUIRE_OK(cuGraphAddMemcpyNode(&copy, g, &kernel, 1, &d2h, current()));
  struct Seen {
    std::atomic<int> issued[4] = {};
    std::atomic<int> ran{0};
  } seen;
  fakecuda_work_observer observer{};
  observer.issued = [](const fakecuda_work* w, void* user) -> unsigned long long {
    static_cast<Seen*>(user)->issued[w->kind].fetch_add(1);
    return 1;
  };
  observer.ran = [](unsigned long long, unsigned long long start, unsigned long long end, void* user) {
    if (end >= start) {
      static_cast<Seen*>(user)->ran.fetch_add(1);
    }
  };
  observer.user = &seen;
  const fakecuda_stats before = stats_now();
  const unsigned long long affine_before = fakecuda_kernel_launches("affine_u32");
  ExecHandle exec(g);
  fakecuda_set_work_observer(&observer);
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  CU_REQUIRE_OK(cuGraphLaunch(exec, s));
  fakecuda_set_work_observer(nullptr);
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(std::vector<unsigned>(out.words, out.words + 4) == std::vector<unsigned>(4, 2));
  CHECK(seen.issued[FAKECUDA_WORK_KERNEL].load() == 2);
  CHECK(seen.issued[FAKECUDA_WORK_COPY].load() == 2);
  CHECK(seen.issued[FAKECUDA_WORK_MEMSET].load() == 2);
  CHECK(seen.ran.load() == 6);
  const fakecuda_stats after = stats_now();
  CHECK(after.graph_instantiations - before.graph_instantiations == 1);
  CHECK(after.graph_launches - before.graph_launches == 2);
  CHECK(after.launches - before.launches == 2);
  CHECK(after.memsets - before.memsets == 2);
  CHECK(after.copies - before.copies == 2);
  CHECK(after.bytes_d2h - before.bytes_d2h == 32);
  CHECK(fakecuda_kernel_launches("affine_u32") - affine_before == 2);
}

TEST_CASE("cuGraphDebugDotPrint writes the graph's topology", "[fakecuda][graphs][dot]") {
  driver_ready();
  GraphKernels k;
  DeviceWords data(1, 0);
  GraphHandle g = GraphHandle::create();
  const CUgraphNode a = add_affine(g, k, {}, data.ptr, 1, 1, 1);
  add_memset(g, {a}, data.ptr, 0, 1);
  char path[] = "/tmp/fakecuda-dot-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  CU_REQUIRE_OK(cuGraphDebugDotPrint(g, path, 0));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  CHECK(text.str().find("digraph") != std::string::npos);
  CHECK(text.str().find("affine_u32") != std::string::npos);
  CHECK(text.str().find("memset") != std::string::npos);
  CHECK(text.str().find("->") != std::string::npos);
  CU_CHECK_IS(cuGraphDebugDotPrint(g, "/nonexistent/dir/graph.dot", 0), CUDA_ERROR_OPERATING_SYSTEM);
  CU_CHECK_IS(cuGraphDebugDotPrint(g, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("graph handles are checked", "[fakecuda][graphs][errors]") {
  driver_ready();
  CUgraph g = nullptr;
  CU_CHECK_IS(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  int junk = 0;
  const auto bogus_graph = reinterpret_cast<CUgraph>(&junk);
  const auto bogus_node = reinterpret_cast<CUgraphNode>(&junk);
  CUgraphNode node = nullptr;
  size_t n = 0;
  CU_CHECK_IS(cuGraphAddEmptyNode(&node, bogus_graph, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphGetNodes(bogus_graph, nullptr, &n), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphDestroyNode(bogus_node), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphDestroy(bogus_graph), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphLaunch(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphLaunch(reinterpret_cast<CUgraphExec>(&junk), nullptr), CUDA_ERROR_INVALID_HANDLE);
  CU_CHECK_IS(cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(&junk)), CUDA_ERROR_INVALID_VALUE);
  GraphHandle real = GraphHandle::create();
  CU_CHECK_IS(cuGraphGetNodes(real, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  const CUDA_HOST_NODE_PARAMS no_fn{nullptr, nullptr};
  CU_CHECK_IS(cuGraphAddHostNode(&node, real, nullptr, 0, &no_fn), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphAddEventRecordNode(&node, real, nullptr, 0, reinterpret_cast<CUevent>(&junk)),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuGraphAddEmptyNode(&node, real, nullptr, 1), CUDA_ERROR_INVALID_VALUE);  // NULL with a count
  const CUDA_MEMSET_NODE_PARAMS bad_size{0, 0, 0, 3, 1, 1};
  CU_CHECK_IS(cuGraphAddMemsetNode(&node, real, nullptr, 0, &bad_size, current()), CUDA_ERROR_INVALID_VALUE);
}
