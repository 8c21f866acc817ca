// CUDA graphs as data: graphs, nodes with their parameters and edges, graph allocations, and the
// handle registry. The add-node entry points (api_graph.cpp) and stream capture (capture.cpp)
// build graphs through the same functions; executable graphs (graph_exec.hpp) are snapshots of
// them. The driver's graph objects are not thread-safe for concurrent use of one graph, but any
// thread may use any handle, so one mutex (graph_mutex) guards every graph, node and capture;
// functions named *_locked expect it held. Lock order: graph_mutex, then an executable graph's
// mutex, then an event's mutex, then a context's submit mutex or the memory manager's.
#pragma once

#include "cuda_abi.hpp"
#include "fakecuda/kernel_abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fakecuda {

struct Context;
struct Graph;

// The address range a mem-alloc node reserved (Memory::graph_reserve). Alloc and free nodes and
// their copies in executable graphs share it; when the last one goes the range is dropped
// (given back once the allocation is not live).
struct GraphAllocation {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
  std::uint64_t owner_graph = 0;     // id of the graph whose alloc node made it
  std::uint64_t freed_by_graph = 0;  // id of the graph holding a free node for it (0: none)
  GraphAllocation() = default;
  GraphAllocation(const GraphAllocation&) = delete;
  GraphAllocation& operator=(const GraphAllocation&) = delete;
  ~GraphAllocation();
};

// A kernel node: the arguments are packed when the node is added or set, as a launch copies them.
struct KernelParams {
  CUfunction func = nullptr;  // as given (a CUkernel stands for a CUfunction here)
  CUkernel kern = nullptr;
  CUcontext ctx = nullptr;
  fakecuda_launch_dims dims{};
  std::vector<unsigned char> packed;
  bool via_extra = false;  // set through `extra`: cuGraphKernelNodeGetParams hands back `extra`
  bool cooperative = false;
  const void* handle() const {
    return func != nullptr ? static_cast<const void*>(func) : static_cast<const void*>(kern);
  }
};

// Everything a node does, by type; only the members of `type` are meaningful.
struct NodeParams {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  KernelParams kernel;
  CUDA_MEMCPY3D copy{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUcontext ctx = nullptr;  // memcpy and memset nodes: the context they run on
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;                      // event record and event wait nodes
  std::shared_ptr<GraphAllocation> allocation;  // mem alloc and mem free nodes
  CUmemPoolProps pool_props{};                  // mem alloc nodes, as given
  std::vector<CUmemAccessDesc> access;
};

struct Node {
  Graph* graph = nullptr;
  std::uint64_t uid = 0;         // unique over the process, never reused
  std::uint64_t origin_uid = 0;  // in a clone or an executable graph's copy: the node copied
  NodeParams params;
  std::unique_ptr<Graph> child;  // child graph nodes own their graph
  std::vector<Node*> deps;       // incoming edges, in the order they were added
  std::vector<CUgraphEdgeData> dep_edges;
  std::vector<Node*> dependents;  // outgoing edges, in the order they were added
  // What cuGraphKernelNodeGetParams / cuGraphMemAllocNodeGetParams hand out, owned by the node.
  std::vector<void*> kernel_params_view;
  void* extra_view[5] = {};
  std::size_t extra_size_view = 0;
  CUgraphNodeType type() const { return params.type; }
};

struct Graph {
  std::uint64_t id = 0;                      // unique over the process, never reused
  std::vector<std::unique_ptr<Node>> nodes;  // in creation order
  Node* owner = nullptr;                     // the child graph node that holds it
  bool registered = false;                   // a handle the application may use
  int capturing = 0;                         // capture sequences writing into it
  int execs = 0;                             // live executable graphs instantiated from it
  std::uint64_t clone_source = 0;            // cuGraphClone: the graph it was cloned from
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();
};

std::mutex& graph_mutex();

// Registry. find_* return nullptr for handles that are not (or no longer) valid.
Graph* create_graph_locked();
std::unique_ptr<Graph> new_unregistered_graph_locked();
void register_graph_locked(Graph& g);  // g and its nodes and children become valid handles
void destroy_graph_locked(Graph* g);   // unregisters and deletes a top-level graph
Graph* find_graph_locked(CUgraph handle);
Node* find_node_locked(CUgraphNode handle);
bool graph_alive_locked(std::uint64_t id);
Graph* graph_by_id_locked(std::uint64_t id);  // registered graphs only
Node* find_node_by_uid_locked(std::uint64_t uid);

// Edges. check_dependencies_locked validates an add-node dependency list (nodes of `g`, no
// duplicates, valid edge data) and returns the nodes.
bool edge_is_default(const CUgraphEdgeData& e);
CUresult check_edge(const CUgraphEdgeData& e, const Node& from);
CUresult check_dependencies_locked(const Graph& g, const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t n,
                                   std::vector<Node*>& out);
CUresult add_node_locked(Graph& g, NodeParams params, std::unique_ptr<Graph> child, const std::vector<Node*>& deps,
                         const std::vector<CUgraphEdgeData>& edges, Node*& out);
void add_edge_locked(Node& from, Node& to, const CUgraphEdgeData& data);
bool remove_edge_locked(Node& from, Node& to, const CUgraphEdgeData& data);
void destroy_node_locked(Node* n);

// Graph properties.
bool has_mem_nodes(const Graph& g);            // alloc or free nodes, child graphs included
bool is_capture_graph_locked(const Graph& g);  // g or a graph containing it is being captured into
// A copy of g (child graphs deep-copied, allocations shared); origin_uid names the copied nodes.
std::unique_ptr<Graph> clone_graph_locked(const Graph& g);

// Node parameters (graph_params.cpp): what each add-node and set-params call checks, shared by
// stream capture. The kernel's arguments come packed (pack_arguments).
CUresult kernel_node_params(NodeParams& out, CUfunction func, CUkernel kern, CUcontext ctx,
                            const fakecuda_launch_dims& dims, std::vector<unsigned char> packed, bool via_extra,
                            bool cooperative);
CUresult kernel_node_params_from(NodeParams& out, CUfunction func, CUkernel kern, CUcontext ctx, unsigned grid_x,
                                 unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                                 unsigned shared, void** kernel_params, void** extra);
CUresult memcpy_node_params(NodeParams& out, const CUDA_MEMCPY3D& copy, CUcontext ctx);
CUresult memset_node_params(NodeParams& out, const CUDA_MEMSET_NODE_PARAMS& memset, CUcontext ctx);
CUresult host_node_params(NodeParams& out, const CUDA_HOST_NODE_PARAMS& host);
CUresult event_node_params(NodeParams& out, CUgraphNodeType type, CUevent event);
// Reserves the allocation's address range; the node's dptr is out.allocation->ptr.
CUresult alloc_node_params(NodeParams& out, const CUDA_MEM_ALLOC_NODE_PARAMS& alloc, Context* ctx);
CUresult alloc_node_params_for_stream(NodeParams& out, std::size_t bytes, Context* ctx);
CUresult free_node_params_locked(NodeParams& out, CUdeviceptr ptr);
// Type-specific rules for adding `params` to `g` (mem nodes: not in child graphs, one free).
CUresult attach_params_locked(Graph& g, NodeParams& params);

// The views Get*Params hand out.
CUresult kernel_params_view_locked(Node& n, CUDA_KERNEL_NODE_PARAMS& out);

}  // namespace fakecuda
