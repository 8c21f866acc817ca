// Reading a CUDA graph's nodes for the words a launch of it may touch memory through (issue 32):
// kernel parameters (the words of every parameter, as a launch's are scanned), the two sides
// of memcpy nodes, the destination of memset nodes, and nested graphs' nodes; the allocations
// of mem-alloc nodes (graph memory). A node memtool cannot read fully — an unknown type,
// conditional, external-semaphore or batch-mem-op nodes, a kernel whose parameter layout is
// unknown — makes the graph opaque: a launch of it may touch any buffer.
//
// The words are resolved against the live buffers at each launch (graph_catalog.hpp), so a
// buffer freed and another allocated at its address since instantiation is seen as it is.
// Driver calls go through GraphQueries (the real driver's functions, never hooked; fakes in
// unit tests). Not thread-safe by itself: callers scan outside every lock and store the result.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memtool/interpose/cuda_api.hpp"

namespace memtool::interpose {

struct GraphQueries {
  CUresult (*get_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*node_get_type)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*kernel_node_get_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;  // the _v2 ABI
  CUresult (*memcpy_node_get_params)(CUgraphNode, CUDA_MEMCPY3D*) = nullptr;
  CUresult (*memset_node_get_params)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS*) = nullptr;
  CUresult (*child_graph_node_get_graph)(CUgraphNode, CUgraph*) = nullptr;
  CUresult (*mem_alloc_node_get_params)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*) = nullptr;
  // What the driver's graph memory pool holds (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT).
  CUresult (*device_get_graph_mem_attribute)(CUdevice, CUgraphMem_attribute, void*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;

  [[nodiscard]] bool complete() const {
    return get_nodes != nullptr && node_get_type != nullptr && kernel_node_get_params != nullptr &&
           memcpy_node_get_params != nullptr && memset_node_get_params != nullptr &&
           child_graph_node_get_graph != nullptr;
  }
};

// Appends the words of a kernel's parameters (kernelParams with the kernel's layout, else the
// `extra` packed buffer); false when neither can be read (the layout is unknown).
using KernelWords = std::function<bool(CUfunction, void** kernel_params, void** extra, std::vector<std::uint64_t>&)>;

struct GraphAllocation {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// One node of the graph given (a child graph node carries its whole subgraph's words).
struct ScannedNode {
  CUgraphNode node = nullptr;
  std::vector<std::uint64_t> words;
  bool opaque = false;
};

struct ScannedGraph {
  std::vector<ScannedNode> nodes;
  std::vector<GraphAllocation> allocations;  // its mem-alloc nodes' (child graphs' included)
  bool opaque = false;                       // some node is
  std::string opaque_why;                    // the first reason, for the log
};

// Nested graphs deeper than this are opaque (a cycle through child graphs cannot exist, but a
// corrupt handle could look like one).
inline constexpr int kMaxGraphDepth = 16;

ScannedGraph scan_graph(const GraphQueries& queries, CUgraph graph, const KernelWords& kernel_words);

// A node's new parameters, as the cuGraphExec*SetParams calls give them.
ScannedNode scan_kernel_params(CUgraphNode node, CUfunction function, void** kernel_params, void** extra,
                               const KernelWords& kernel_words);
ScannedNode scan_memcpy_params(CUgraphNode node, const CUDA_MEMCPY3D& copy);
ScannedNode scan_memset_params(CUgraphNode node, CUdeviceptr dst);
// A child graph node's new graph: its nodes' words together, its allocations appended to `into`.
ScannedNode scan_child_graph(const GraphQueries& queries, CUgraphNode node, CUgraph child,
                             const KernelWords& kernel_words, std::vector<GraphAllocation>* allocations);

}  // namespace memtool::interpose
