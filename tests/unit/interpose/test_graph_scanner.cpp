// Reading graphs (graph_scanner.hpp) and what the catalog makes of them (graph_catalog.hpp),
// against fake graph queries: kernel parameters scanned with the kernel's layout, copies'
// sides, memsets, nested graphs flattened into their node, mem-alloc nodes as graph memory; an
// unreadable node makes the graph opaque; a node's new parameters replace only its words; and
// the recorder resolves a launch's words against the buffers live at the launch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/graph_catalog.hpp"
#include "memtool/interpose/graph_scanner.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;

namespace {

// A fake graph: nodes by handle, each with a type and its parameters.
struct FakeNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction function = nullptr;
  std::vector<std::vector<unsigned char>> args;  // kernel arguments' bytes
  std::vector<void*> arg_pointers;
  CUDA_MEMCPY3D copy{};
  CUdeviceptr memset_dst = 0;
  CUgraph child = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
};
std::map<CUgraph, std::vector<CUgraphNode>> g_graphs;
std::map<CUgraphNode, FakeNode> g_nodes;
std::uintptr_t g_next_handle = 0x9000;

CUgraph make_graph() {
  auto graph = reinterpret_cast<CUgraph>(g_next_handle++);
  g_graphs[graph];
  return graph;
}
CUgraphNode add(CUgraph graph, FakeNode node) {
  auto handle = reinterpret_cast<CUgraphNode>(g_next_handle++);
  g_nodes[handle] = std::move(node);
  FakeNode& n = g_nodes[handle];
  n.arg_pointers.clear();
  for (auto& a : n.args) n.arg_pointers.push_back(a.data());
  g_graphs[graph].push_back(handle);
  return handle;
}
template <class... T>
FakeNode kernel(CUfunction f, T... values) {
  FakeNode n;
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.function = f;
  (n.args.push_back(std::vector<unsigned char>(reinterpret_cast<const unsigned char*>(&values),
                                               reinterpret_cast<const unsigned char*>(&values) + sizeof(values))),
   ...);
  return n;
}
FakeNode copy_node(std::uint64_t dst, std::uint64_t src) {
  FakeNode n;
  n.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  n.copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  n.copy.srcDevice = src;
  n.copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  n.copy.dstDevice = dst;
  n.copy.dstXInBytes = 16;  // the copy writes from dst + 16
  n.copy.WidthInBytes = 32;
  n.copy.Height = 1;
  n.copy.Depth = 1;
  return n;
}

GraphQueries fake_graph_queries() {
  GraphQueries q;
  q.get_nodes = [](CUgraph graph, CUgraphNode* nodes, size_t* count) {
    const auto it = g_graphs.find(graph);
    if (it == g_graphs.end()) return CUDA_ERROR_INVALID_VALUE;
    if (nodes != nullptr) std::copy_n(it->second.begin(), std::min(*count, it->second.size()), nodes);
    *count = it->second.size();
    return CUDA_SUCCESS;
  };
  q.node_get_type = [](CUgraphNode node, CUgraphNodeType* type) {
    *type = g_nodes.at(node).type;
    return CUDA_SUCCESS;
  };
  q.kernel_node_get_params = [](CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
    FakeNode& n = g_nodes.at(node);
    *p = CUDA_KERNEL_NODE_PARAMS{};
    p->func = n.function;
    p->kernelParams = n.arg_pointers.data();
    return CUDA_SUCCESS;
  };
  q.memcpy_node_get_params = [](CUgraphNode node, CUDA_MEMCPY3D* p) {
    *p = g_nodes.at(node).copy;
    return CUDA_SUCCESS;
  };
  q.memset_node_get_params = [](CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* p) {
    *p = CUDA_MEMSET_NODE_PARAMS{};
    p->dst = g_nodes.at(node).memset_dst;
    return CUDA_SUCCESS;
  };
  q.child_graph_node_get_graph = [](CUgraphNode node, CUgraph* child) {
    *child = g_nodes.at(node).child;
    return CUDA_SUCCESS;
  };
  q.mem_alloc_node_get_params = [](CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
    *p = g_nodes.at(node).alloc;
    return CUDA_SUCCESS;
  };
  return q;
}

// Words of kernels by the fake layouts (fake_driver.hpp): gemm(a, b, c, n), axpy({x, y}, alpha).
KernelWords layout_words() {
  return [](CUfunction f, void** params, void**, std::vector<std::uint64_t>& words) {
    const auto it = fake_kernels().find(reinterpret_cast<std::uintptr_t>(f));
    if (it == fake_kernels().end()) return false;
    for (std::size_t i = 0; i < it->second.params.size(); ++i) {
      for (std::size_t o = 0; o + 8 <= it->second.params[i].second; o += 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, static_cast<const unsigned char*>(params[i]) + o, 8);
        words.push_back(w);
      }
    }
    return true;
  };
}

bool has(const std::vector<std::uint64_t>& words, std::uint64_t w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

struct Reset {
  Reset() {
    g_graphs.clear();
    g_nodes.clear();
    install_fake_kernels();
  }
};

}  // namespace

TEST_CASE("a graph's nodes give the words its launch may touch memory through", "[interpose][graphs]") {
  const Reset reset;
  const CUgraph graph = make_graph();
  const CUgraphNode gemm =
      add(graph, kernel(handle(0x100), std::uint64_t{0xA000}, std::uint64_t{0xB000}, std::uint64_t{0xC000}, 4));
  add(graph, copy_node(0xD000, 0xE000));
  FakeNode set;
  set.type = CU_GRAPH_NODE_TYPE_MEMSET;
  set.memset_dst = 0xF000;
  add(graph, set);
  const CUgraph child = make_graph();
  struct Pair {
    std::uint64_t x, y;
  };
  add(child, kernel(handle(0x200), Pair{0x11000, 0x12000}, 1.0f));  // axpy({x, y}, alpha)
  FakeNode nest;
  nest.type = CU_GRAPH_NODE_TYPE_GRAPH;
  nest.child = child;
  const CUgraphNode nested = add(graph, nest);
  FakeNode alloc;
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc.alloc.dptr = 0x20000;
  alloc.alloc.bytesize = 4096;
  add(graph, alloc);
  FakeNode host;
  host.type = CU_GRAPH_NODE_TYPE_HOST;
  add(graph, host);

  const ScannedGraph scanned = scan_graph(fake_graph_queries(), graph, layout_words());
  CHECK_FALSE(scanned.opaque);
  REQUIRE(scanned.nodes.size() == 6);
  CHECK(scanned.nodes[0].node == gemm);
  CHECK(has(scanned.nodes[0].words, 0xA000));
  CHECK(has(scanned.nodes[0].words, 0xC000));
  CHECK(has(scanned.nodes[1].words, 0xD000));  // both sides of the copy, its bases...
  CHECK(has(scanned.nodes[1].words, 0xE000));
  CHECK(has(scanned.nodes[1].words, 0xD010));  // ... and the first byte it writes
  CHECK(scanned.nodes[2].words == std::vector<std::uint64_t>{0xF000});
  CHECK(scanned.nodes[3].node == nested);  // the child graph's words are its node's
  CHECK(has(scanned.nodes[3].words, 0x11000));
  CHECK(has(scanned.nodes[3].words, 0x12000));
  REQUIRE(scanned.allocations.size() == 1);
  CHECK(scanned.allocations[0].address == 0x20000);
  CHECK(scanned.allocations[0].size == 4096);
  CHECK(scanned.nodes[5].words.empty());
}

TEST_CASE("a node memtool cannot read makes its graph opaque", "[interpose][graphs]") {
  const Reset reset;
  SECTION("a kernel of unknown layout") {
    const CUgraph graph = make_graph();
    add(graph, kernel(handle(0x999), std::uint64_t{0xA000}));
    const ScannedGraph scanned = scan_graph(fake_graph_queries(), graph, layout_words());
    CHECK(scanned.opaque);
    CHECK_THAT(scanned.opaque_why, Catch::Contains("layout"));
  }
  SECTION("a conditional node, inside a child graph") {
    const CUgraph child = make_graph();
    FakeNode cond;
    cond.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    add(child, cond);
    const CUgraph graph = make_graph();
    FakeNode nest;
    nest.type = CU_GRAPH_NODE_TYPE_GRAPH;
    nest.child = child;
    add(graph, nest);
    const ScannedGraph scanned = scan_graph(fake_graph_queries(), graph, layout_words());
    CHECK(scanned.opaque);
    REQUIRE(scanned.nodes.size() == 1);
    CHECK(scanned.nodes[0].opaque);
  }
  SECTION("no graph queries at all") {
    const ScannedGraph scanned = scan_graph(GraphQueries{}, make_graph(), layout_words());
    CHECK(scanned.opaque);
  }
}

TEST_CASE("the catalog: launches get their graph's words, a node's new parameters replace only its own",
          "[interpose][graphs]") {
  const Reset reset;
  const CUgraph graph = make_graph();
  const CUgraphNode first =
      add(graph, kernel(handle(0x100), std::uint64_t{0xA000}, std::uint64_t{0xB000}, std::uint64_t{0xC000}, 4));
  FakeNode set;
  set.type = CU_GRAPH_NODE_TYPE_MEMSET;
  set.memset_dst = 0xF000;
  add(graph, set);
  GraphCatalog catalog;
  catalog.set_exec(0x77, scan_graph(fake_graph_queries(), graph, layout_words()));
  std::vector<std::uint64_t> words;
  GraphCatalog::Launch launch = catalog.launch(0x77, words);
  CHECK(launch.known);
  CHECK_FALSE(launch.opaque);
  CHECK(launch.first);
  CHECK(has(words, 0xA000));
  CHECK(has(words, 0xF000));
  words.clear();
  CHECK_FALSE(catalog.launch(0x77, words).first);  // the driver holds its memory from the first on

  // cuGraphExecKernelNodeSetParams: the kernel now reads 0x1A000 instead of 0xA000.
  std::uint64_t a = 0x1A000, b = 0xB000, c = 0xC000;
  int n = 4;
  void* params[] = {&a, &b, &c, &n};
  catalog.set_node(0x77, scan_kernel_params(first, handle(0x100), params, nullptr, layout_words()));
  words.clear();
  launch = catalog.launch(0x77, words);
  CHECK(has(words, 0x1A000));
  CHECK_FALSE(has(words, 0xA000));
  CHECK(has(words, 0xF000));  // the memset node is untouched

  // A graph with the same shape has the same identity in the step signature; an unknown or
  // destroyed one is opaque.
  GraphCatalog other;
  other.set_exec(0x88, scan_graph(fake_graph_queries(), graph, layout_words()));
  std::vector<std::uint64_t> ignored;
  CHECK(other.launch(0x88, ignored).shape == launch.shape);
  catalog.erase_exec(0x77);
  const GraphCatalog::Launch gone = catalog.launch(0x77, ignored);
  CHECK_FALSE(gone.known);
  CHECK(gone.opaque);
}

TEST_CASE("graph memory: known by its base until the driver hands the range to something else", "[interpose][graphs]") {
  GraphCatalog catalog;
  CHECK_FALSE(catalog.any_graph_memory());
  catalog.add_graph_memory(0x10000, 0x1000);
  catalog.add_graph_memory(0x20000, 0x1000);
  CHECK(catalog.is_graph_memory(0x10000));
  CHECK_FALSE(catalog.is_graph_memory(0x10800));  // interior: not an allocation's base
  CHECK(catalog.totals().graph_bytes == 0x2000);
  catalog.forget_graph_memory(0x10800, 16);  // an ordinary allocation inside the first range
  CHECK_FALSE(catalog.is_graph_memory(0x10000));
  CHECK(catalog.is_graph_memory(0x20000));
  CHECK(catalog.totals().graph_allocations == 1);
  // Graph memory of graphs not launched yet is pending: the driver takes it at their first launch.
  const Reset reset;
  const CUgraph graph = make_graph();
  FakeNode alloc;
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc.alloc.dptr = 0x30000;
  alloc.alloc.bytesize = 8192;
  add(graph, alloc);
  catalog.set_exec(0x99, scan_graph(fake_graph_queries(), graph, layout_words()));
  CHECK(catalog.pending_graph_bytes() == 8192);
  CHECK(catalog.upload(0x99));
  CHECK_FALSE(catalog.upload(0x99));
  CHECK(catalog.pending_graph_bytes() == 0);
  CHECK(catalog.is_graph_memory(0x30000));
}

TEST_CASE("the recorder resolves a graph launch against the buffers live at the launch", "[interpose][graphs]") {
  const Reset reset;
  CollectingSink::Shared shared;
  Recorder recorder(default_options(), std::make_unique<CollectingSink>(shared));
  recorder.set_driver_queries(fake_queries());
  recorder.set_graph_queries(fake_graph_queries());
  recorder.on_alloc(0xA000, 0x100, memtool::trace::MemoryKind::device, 0);
  recorder.on_alloc(0xC000, 0x100, memtool::trace::MemoryKind::device, 0);
  const CUgraph graph = make_graph();
  add(graph, kernel(handle(0x100), std::uint64_t{0xA010}, std::uint64_t{0xB000}, std::uint64_t{0xC000}, 4));
  recorder.on_graph_exec(0x55, graph);
  LaunchSeen seen = recorder.on_graph_launch(0x55, 0);
  std::vector<std::uint64_t> touched(seen.touched.begin(), seen.touched.end());
  std::sort(touched.begin(), touched.end());
  CHECK(touched == std::vector<std::uint64_t>{0xA000, 0xC000});  // an interior pointer too
  CHECK(seen.first_graph_launch);
  // 0xC000 freed and 0xB000 allocated since: the next launch sees the buffers as they are.
  (void)recorder.on_free(0xC000, memtool::trace::MemoryKind::device, 0);
  recorder.on_alloc(0xB000, 0x100, memtool::trace::MemoryKind::device, 0);
  seen = recorder.on_graph_launch(0x55, 0);
  touched.assign(seen.touched.begin(), seen.touched.end());
  std::sort(touched.begin(), touched.end());
  CHECK(touched == std::vector<std::uint64_t>{0xA000, 0xB000});
  CHECK_FALSE(seen.first_graph_launch);
  // A graph memtool never saw instantiated touches every live device buffer.
  seen = recorder.on_graph_launch(0x66, 0);
  CHECK(seen.touched.size() == 2);
  const RecorderStats stats = recorder.stats();
  CHECK(stats.graph_launches == 3);
  CHECK(stats.opaque_graph_launches == 1);
}
