// Entry points: CUDA graphs, every generation the driver exports (the graph calls before and after
// CUgraphEdgeData, CUDA_KERNEL_NODE_PARAMS_v1 and _v2, the five-argument cuGraphInstantiate and
// cuGraphInstantiateWithFlags it became in CUDA 12, cuGraphExecUpdate and _v2), graph memory
// attributes and trimming. Unknown graph, node and executable-graph handles are
// CUDA_ERROR_INVALID_VALUE, the code cuda.h documents for these calls (cuGraphLaunch and
// cuGraphUpload keep CUDA_ERROR_INVALID_HANDLE for a stale executable graph, as fakecuda did).
#include "driver.hpp"
#include "graph.hpp"
#include "graph_abi.hpp"
#include "graph_exec.hpp"
#include "memory.hpp"
#include "modules.hpp"
#include "streams.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

using namespace fakecuda;

namespace {

// Runs `body` with the graph mutex held, exceptions turned into CUresults.
template <class F>
CUresult locked(F&& body) {
  FC_TRY(check_init());
  return guarded([&] {
    std::lock_guard<std::mutex> lock(graph_mutex());
    return body();
  });
}

// The add-node calls: check the graph and the dependency list, build the node with
// make(graph, params, child), add it.
template <class Make>
CUresult add_node(CUgraphNode* out, CUgraph hGraph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,
                  Make&& make) {
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::vector<Node*> d;
    FC_TRY(check_dependencies_locked(*g, deps, edges, n, d));
    std::vector<CUgraphEdgeData> e = edges != nullptr ? std::vector<CUgraphEdgeData>(edges, edges + n)
                                                      : std::vector<CUgraphEdgeData>(n, CUgraphEdgeData{});
    NodeParams params;
    std::unique_ptr<Graph> child;
    FC_TRY(make(*g, params, child));
    Node* node = nullptr;
    FC_TRY(add_node_locked(*g, std::move(params), std::move(child), d, e, node));
    *out = reinterpret_cast<CUgraphNode>(node);
    return CUDA_SUCCESS;
  });
}

// A node of the expected type, with the graph mutex held.
template <class F>
CUresult with_node(CUgraphNode h, CUgraphNodeType type, F&& body) {
  return locked([&] {
    Node* n = find_node_locked(h);
    if (n == nullptr || n->type() != type) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return body(*n);
  });
}

// Set-params on a graph node: new parameters of the same type replace the old ones.
CUresult replace_params(CUgraphNode h, NodeParams params) {
  return with_node(h, params.type, [&](Node& n) {
    n.params = std::move(params);
    return CUDA_SUCCESS;
  });
}

// Get-params on a graph node of `type`: a copy of the member of its parameters that type uses.
template <class T>
CUresult node_member(CUgraphNode h, CUgraphNodeType type, T NodeParams::*member, T* out) {
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(h, type, [&](Node& n) {
    *out = n.params.*member;
    return CUDA_SUCCESS;
  });
}

// Set-params on a memcpy or memset node: the new parameters built in the node's own context.
template <class P>
CUresult rebuild_in_context(CUgraphNode h, CUgraphNodeType type, const P* given,
                            CUresult (*build)(NodeParams&, const P&, CUcontext)) {
  if (given == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(h, type, [&](Node& n) {
    NodeParams p;
    FC_TRY(build(p, *given, n.params.ctx));
    n.params = std::move(p);
    return CUDA_SUCCESS;
  });
}

// Set-event on an event record or event wait node.
CUresult replace_event(CUgraphNode h, CUgraphNodeType type, CUevent event) {
  FC_TRY(check_init());
  NodeParams p;
  FC_TRY(event_node_params(p, type, event));
  return replace_params(h, std::move(p));
}

CUresult child_clone(Graph& parent, CUgraph handle, std::unique_ptr<Graph>& out) {
  Graph* c = find_graph_locked(handle);
  // "If childGraph contains allocation nodes, free nodes, or conditional nodes, this call will
  // return an error."
  if (c == nullptr || c == &parent || has_mem_nodes(*c)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = clone_graph_locked(*c);
  return CUDA_SUCCESS;
}

bool contains_graph(const Graph& outer, const Graph& g) {
  for (const Graph* at = &outer; at != nullptr; at = at->owner != nullptr ? at->owner->graph : nullptr) {
    if (at == &g) {
      return true;
    }
  }
  return false;
}

// Copies `items` out the way cuGraphGetNodes and its siblings do: NULL array: the count only;
// otherwise up to *count entries, the rest NULL, and *count lowered to what there is.
template <class T>
CUresult fill_out(const std::vector<T>& items, T* out, size_t* count) {
  if (count == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (out == nullptr) {
    *count = items.size();
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < *count; ++i) {
    out[i] = i < items.size() ? items[i] : T{};
  }
  *count = std::min(*count, items.size());
  return CUDA_SUCCESS;
}

// Pairs of (from, to) with edge data, for cuGraphGetEdges and the dependency queries.
struct Edges {
  std::vector<CUgraphNode> from;
  std::vector<CUgraphNode> to;
  std::vector<CUgraphEdgeData> data;
};

CUresult edges_out(const Edges& e, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* count) {
  if (count == nullptr || (from == nullptr) != (to == nullptr) || (data != nullptr && from == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (from != nullptr && data == nullptr &&
      std::any_of(e.data.begin(), e.data.end(), [](const CUgraphEdgeData& d) { return !edge_is_default(d); })) {
    return CUDA_ERROR_LOSSY_QUERY;
  }
  if (from == nullptr) {
    *count = e.from.size();
    return CUDA_SUCCESS;
  }
  size_t n = *count;
  FC_TRY(fill_out(e.from, from, &n));
  n = *count;
  FC_TRY(fill_out(e.to, to, &n));
  if (data != nullptr) {
    n = *count;
    FC_TRY(fill_out(e.data, data, &n));
  }
  *count = std::min(*count, e.from.size());
  return CUDA_SUCCESS;
}

CUresult get_edges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* count) {
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    Edges e;
    for (const auto& n : g->nodes) {
      for (size_t i = 0; i < n->deps.size(); ++i) {
        e.from.push_back(reinterpret_cast<CUgraphNode>(n->deps[i]));
        e.to.push_back(reinterpret_cast<CUgraphNode>(n.get()));
        e.data.push_back(n->dep_edges[i]);
      }
    }
    return edges_out(e, from, to, data, count);
  });
}

// cuGraphNodeGetDependencies (incoming) and cuGraphNodeGetDependentNodes (outgoing).
CUresult node_edges(CUgraphNode hNode, bool incoming, CUgraphNode* nodes, CUgraphEdgeData* data, size_t* count) {
  return locked([&] {
    Node* n = find_node_locked(hNode);
    if (n == nullptr || count == nullptr || (data != nullptr && nodes == nullptr)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    Edges e;
    if (incoming) {
      for (size_t i = 0; i < n->deps.size(); ++i) {
        e.from.push_back(reinterpret_cast<CUgraphNode>(n->deps[i]));
        e.data.push_back(n->dep_edges[i]);
      }
    } else {
      for (const Node* d : n->dependents) {
        e.from.push_back(reinterpret_cast<CUgraphNode>(const_cast<Node*>(d)));
        const auto at = std::find(d->deps.begin(), d->deps.end(), n) - d->deps.begin();
        e.data.push_back(d->dep_edges[static_cast<size_t>(at)]);
      }
    }
    if (nodes != nullptr && data == nullptr &&
        std::any_of(e.data.begin(), e.data.end(), [](const CUgraphEdgeData& d) { return !edge_is_default(d); })) {
      return CUDA_ERROR_LOSSY_QUERY;
    }
    if (nodes == nullptr) {
      *count = e.from.size();
      return CUDA_SUCCESS;
    }
    const size_t asked = *count;
    FC_TRY(fill_out(e.from, nodes, count));
    if (data != nullptr) {
      size_t n2 = asked;
      FC_TRY(fill_out(e.data, data, &n2));
    }
    return CUDA_SUCCESS;
  });
}

// cuGraphAddDependencies / cuGraphRemoveDependencies: all pairs are checked before any changes.
CUresult change_dependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                             const CUgraphEdgeData* data, size_t n, bool add) {
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr || (n > 0 && (from == nullptr || to == nullptr))) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // "Dependencies cannot be removed from graphs which contain allocation or free nodes."
    if (!add && has_mem_nodes(*g)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::vector<std::pair<Node*, Node*>> pairs;
    for (size_t i = 0; i < n; ++i) {
      Node* f = find_node_locked(from[i]);
      Node* t = find_node_locked(to[i]);
      if (f == nullptr || t == nullptr || f->graph != g || t->graph != g || f == t) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      const CUgraphEdgeData e = data != nullptr ? data[i] : CUgraphEdgeData{};
      FC_TRY(check_edge(e, *f));
      const bool exists = std::find(t->deps.begin(), t->deps.end(), f) != t->deps.end();
      const bool repeated = std::find(pairs.begin(), pairs.end(), std::make_pair(f, t)) != pairs.end();
      if (add ? (exists || repeated) : !exists) {
        return CUDA_ERROR_INVALID_VALUE;  // adding an existing edge, removing a missing one
      }
      if (add && e.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC && t->type() != CU_GRAPH_NODE_TYPE_KERNEL) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      pairs.emplace_back(f, t);
    }
    if (!add) {
      for (size_t i = 0; i < n; ++i) {
        const CUgraphEdgeData e = data != nullptr ? data[i] : CUgraphEdgeData{};
        const auto& to_deps = pairs[i].second->deps;
        bool match = false;
        for (size_t k = 0; k < to_deps.size(); ++k) {
          match =
              match || (to_deps[k] == pairs[i].first && std::memcmp(&pairs[i].second->dep_edges[k], &e, sizeof e) == 0);
        }
        if (!match) {
          return CUDA_ERROR_INVALID_VALUE;  // the edge exists with other data
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const CUgraphEdgeData e = data != nullptr ? data[i] : CUgraphEdgeData{};
      if (add) {
        add_edge_locked(*pairs[i].first, *pairs[i].second, e);
      } else {
        remove_edge_locked(*pairs[i].first, *pairs[i].second, e);
      }
    }
    return CUDA_SUCCESS;
  });
}

// ---- kernel node parameters in each generation -------------------------------------------

template <class P>
CUresult kernel_params_of(NodeParams& out, const P* p, CUkernel kern, CUcontext ctx) {
  if (p == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return kernel_node_params_from(out, p->func, kern, ctx, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
                                 p->blockDimY, p->blockDimZ, p->sharedMemBytes, p->kernelParams, p->extra);
}

CUresult kernel_params_v1(NodeParams& out, const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  return kernel_params_of(out, p, nullptr, nullptr);
}

CUresult kernel_params_v2(NodeParams& out, const CUDA_KERNEL_NODE_PARAMS_v2* p) {
  return p == nullptr ? CUDA_ERROR_INVALID_VALUE : kernel_params_of(out, p, p->kern, p->ctx);
}

CUresult get_kernel_params(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2* out) {
  if (out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(h, CU_GRAPH_NODE_TYPE_KERNEL, [&](Node& n) { return kernel_params_view_locked(n, *out); });
}

// ---- cuGraphAddNode's tagged union -------------------------------------------------------

// "All unused bytes - that is, reserved0 and all bytes past the utilized union member - must be
// set to zero."
bool unused_bytes_zero(const CUgraphNodeParams& p, size_t member_size) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&p.reserved1);
  for (size_t i = member_size; i < sizeof p.reserved1; ++i) {
    if (bytes[i] != 0) {
      return false;
    }
  }
  return p.reserved0[0] == 0 && p.reserved0[1] == 0 && p.reserved0[2] == 0 && p.reserved2 == 0;
}

size_t member_size(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return sizeof(CUDA_KERNEL_NODE_PARAMS_v3);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return sizeof(CUDA_MEMCPY_NODE_PARAMS);
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return sizeof(CUDA_MEMSET_NODE_PARAMS_v2);
    case CU_GRAPH_NODE_TYPE_HOST:
      return sizeof(CUDA_HOST_NODE_PARAMS_v2);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return sizeof(CUDA_CHILD_GRAPH_NODE_PARAMS);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return sizeof(CUDA_EVENT_WAIT_NODE_PARAMS);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return sizeof(CUDA_EVENT_RECORD_NODE_PARAMS);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return sizeof(CUDA_MEM_FREE_NODE_PARAMS);
    default:
      return 0;
  }
}

// The size of the union member a node type uses; false for types fakecuda does not build.
bool union_member(CUgraphNodeType type, size_t& size) {
  size = member_size(type);
  return size != 0 || type == CU_GRAPH_NODE_TYPE_EMPTY;
}

// The parameters of every node type except child graphs and mem nodes, which depend on the graph.
CUresult generic_params(const CUgraphNodeParams& p, NodeParams& out) {
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS_v3& k = p.kernel;
      return kernel_node_params_from(out, k.func, k.kern, k.ctx, k.gridDimX, k.gridDimY, k.gridDimZ, k.blockDimX,
                                     k.blockDimY, k.blockDimZ, k.sharedMemBytes, k.kernelParams, k.extra);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (p.memcpy.flags != 0 || p.memcpy.reserved != 0) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      return memcpy_node_params(out, p.memcpy.copyParams, p.memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS_v2& m = p.memset;
      return memset_node_params(out, CUDA_MEMSET_NODE_PARAMS{m.dst, m.pitch, m.value, m.elementSize, m.width, m.height},
                                m.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      return host_node_params(out, CUDA_HOST_NODE_PARAMS{p.host.fn, p.host.userData});
    case CU_GRAPH_NODE_TYPE_EMPTY:
      out = NodeParams{};
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return event_node_params(out, p.type, p.eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return event_node_params(out, p.type, p.eventRecord.event);
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult add_generic(CUgraphNode* out, CUgraph hGraph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,
                     CUgraphNodeParams* p) {
  if (p == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t size = 0;
  if (!union_member(p->type, size)) {
    return p->type > CU_GRAPH_NODE_TYPE_CONDITIONAL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
  }
  if (!unused_bytes_zero(*p, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return add_node(out, hGraph, deps, edges, n, [&](Graph& g, NodeParams& params, std::unique_ptr<Graph>& child) {
    switch (p->type) {
      case CU_GRAPH_NODE_TYPE_GRAPH: {
        params.type = CU_GRAPH_NODE_TYPE_GRAPH;
        if (p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
          return child_clone(g, p->graph.graph, child);
        }
        if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        // The graph itself moves into the node: its handle stays valid, owned by the parent.
        Graph* moved = find_graph_locked(p->graph.graph);
        if (moved == nullptr || moved->owner != nullptr || moved->execs > 0 || is_capture_graph_locked(*moved) ||
            contains_graph(g, *moved)) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        child.reset(moved);
        return CUDA_SUCCESS;
      }
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
        std::memcpy(&alloc, &p->alloc, sizeof alloc);
        FC_TRY(alloc_node_params(params, alloc, current_context_or_null()));
        p->alloc.dptr = params.allocation->ptr;  // "out parameters which are modified during the call"
        return CUDA_SUCCESS;
      }
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return free_node_params_locked(params, p->free.dptr);
      default:
        return generic_params(*p, params);
    }
  });
}

// ---- instantiation -----------------------------------------------------------------------

// cuGraphInstantiate (10.0, 11.0): no flags; an error names a node and writes a message.
CUresult instantiate_with_log(CUgraphExec* out, CUgraph graph, CUgraphNode* error_node, char* log, size_t log_size) {
  FC_TRY(check_init());
  CUgraphInstantiateResult result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  const CUresult r = guarded([&] { return instantiate(out, graph, 0, false, error_node, &result); });
  if (log != nullptr && log_size > 0) {
    const char* text = r == CUDA_SUCCESS ? ""
                       : result == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE
                           ? "fakecuda: the graph has a cycle"
                           : "fakecuda: the graph cannot be instantiated";
    std::snprintf(log, log_size, "%s", text);
  }
  return r;
}

CUresult instantiate_with_params(CUgraphExec* out, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* p, bool per_thread) {
  FC_TRY(check_init());
  if (p == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  p->hErrNode_out = nullptr;
  p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  FC_TRY(guarded([&] { return instantiate(out, graph, p->flags, true, &p->hErrNode_out, &p->result_out); }));
  if ((p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    // "an upload of the graph into hUploadStream once the graph has been instantiated".
    const CUresult r = upload_exec(*out, p->hUploadStream, per_thread);
    if (r != CUDA_SUCCESS) {
      destroy_exec(*out);
      *out = nullptr;
      p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
      return r;
    }
  }
  return CUDA_SUCCESS;
}

CUresult exec_params(CUgraphExec exec, CUgraphNode node, CUresult built, NodeParams params) {
  FC_TRY(check_init());
  FC_TRY(built);
  return guarded([&] { return exec_set_params(exec, node, std::move(params)); });
}

// ---- graph memory attributes ----------------------------------------------------------------

CUresult graph_device(CUdevice dev) {
  FC_TRY(check_init());
  return check_device(dev);
}

// ---- DOT -------------------------------------------------------------------------------------

const char* type_name(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return "memset";
    case CU_GRAPH_NODE_TYPE_HOST:
      return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return "graph";
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return "wait_event";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return "event_record";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return "mem_alloc";
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return "mem_free";
    default:
      return "other";
  }
}

void write_dot(std::FILE* out, const Graph& g, const std::string& prefix) {
  for (const auto& n : g.nodes) {
    std::string label = type_name(n->type());
    Function* fn = nullptr;
    if (n->type() == CU_GRAPH_NODE_TYPE_KERNEL && find_function(n->params.kernel.handle(), fn) == CUDA_SUCCESS) {
      label += std::string("\\n") + fn->desc->name;
    }
    std::fprintf(out, "  \"%s%llu\" [label=\"%s\"];\n", prefix.c_str(), static_cast<unsigned long long>(n->uid),
                 label.c_str());
    for (const Node* d : n->deps) {
      std::fprintf(out, "  \"%s%llu\" -> \"%s%llu\";\n", prefix.c_str(), static_cast<unsigned long long>(d->uid),
                   prefix.c_str(), static_cast<unsigned long long>(n->uid));
    }
    if (n->child) {
      write_dot(out, *n->child, prefix + std::to_string(n->uid) + "_");
    }
  }
}

}  // namespace

// ---- graphs --------------------------------------------------------------------------------

FAKECUDA_API CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  FC_TRY(check_init());
  if (phGraph == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    *phGraph = reinterpret_cast<CUgraph>(create_graph_locked());
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphDestroy(CUgraph hGraph) {
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    // A child graph belongs to its node; a graph being captured into belongs to the capture.
    if (g == nullptr || g->owner != nullptr || g->capturing > 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    destroy_graph_locked(g);
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  if (phGraphClone == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Graph* g = find_graph_locked(originalGraph);
    // "Cloning is not supported for graphs which contain memory allocation nodes, memory free nodes".
    if (g == nullptr || has_mem_nodes(*g)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    Graph* copy = clone_graph_locked(*g).release();
    register_graph_locked(*copy);
    *phGraphClone = reinterpret_cast<CUgraph>(copy);
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  if (phNode == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Node* original = find_node_locked(hOriginalNode);
    Graph* clone = find_graph_locked(hClonedGraph);
    if (original == nullptr || clone == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (const auto& n : clone->nodes) {
      if (clone->clone_source == original->graph->id && n->origin_uid == original->uid) {
        *phNode = reinterpret_cast<CUgraphNode>(n.get());
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  });
}

FAKECUDA_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (type == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Node* n = find_node_locked(hNode);
    if (n == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *type = n->type();
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::vector<CUgraphNode> all;
    for (const auto& n : g->nodes) {
      all.push_back(reinterpret_cast<CUgraphNode>(n.get()));
    }
    return fill_out(all, nodes, numNodes);
  });
}

FAKECUDA_API CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::vector<CUgraphNode> roots;
    for (const auto& n : g->nodes) {
      if (n->deps.empty()) {
        roots.push_back(reinterpret_cast<CUgraphNode>(n.get()));
      }
    }
    return fill_out(roots, rootNodes, numRootNodes);
  });
}

FAKECUDA_API CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  return get_edges(hGraph, from, to, nullptr, numEdges);
}
FAKECUDA_API CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                                         size_t* numEdges) {
  return get_edges(hGraph, from, to, edgeData, numEdges);
}
FAKECUDA_API CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies,
                                                 size_t* numDependencies) {
  return node_edges(hNode, true, dependencies, nullptr, numDependencies);
}
FAKECUDA_API CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                                    CUgraphEdgeData* edgeData, size_t* numDependencies) {
  return node_edges(hNode, true, dependencies, edgeData, numDependencies);
}
FAKECUDA_API CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                   size_t* numDependentNodes) {
  return node_edges(hNode, false, dependentNodes, nullptr, numDependentNodes);
}
FAKECUDA_API CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                      CUgraphEdgeData* edgeData, size_t* numDependentNodes) {
  return node_edges(hNode, false, dependentNodes, edgeData, numDependentNodes);
}
FAKECUDA_API CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                             size_t numDependencies) {
  return change_dependencies(hGraph, from, to, nullptr, numDependencies, true);
}
FAKECUDA_API CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return change_dependencies(hGraph, from, to, edgeData, numDependencies, true);
}
FAKECUDA_API CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                size_t numDependencies) {
  return change_dependencies(hGraph, from, to, nullptr, numDependencies, false);
}
FAKECUDA_API CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                   const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return change_dependencies(hGraph, from, to, edgeData, numDependencies, false);
}

FAKECUDA_API CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  return locked([&] {
    Node* n = find_node_locked(hNode);
    // "Nodes which belong to a graph which contains allocation or free nodes cannot be
    // destroyed"; a graph being captured into allows no node removal (cuStreamGetCaptureInfo).
    if (n == nullptr || has_mem_nodes(*n->graph) || is_capture_graph_locked(*n->graph)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    destroy_node_locked(n);
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  (void)flags;  // every level of detail gets the same topology, types and kernel names
  if (path == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Graph* g = find_graph_locked(hGraph);
    if (g == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
      return CUDA_ERROR_OPERATING_SYSTEM;
    }
    std::fprintf(out, "digraph fakecuda_graph_%llu {\n", static_cast<unsigned long long>(g->id));
    write_dot(out, *g, "n");
    std::fprintf(out, "}\n");
    return std::fclose(out) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
  });
}

// ---- add-node calls and node parameters ---------------------------------------------------

FAKECUDA_API CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) { return kernel_params_v1(p, nodeParams); });
}
FAKECUDA_API CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) { return kernel_params_v2(p, nodeParams); });
}
FAKECUDA_API CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (nodeParams == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUDA_KERNEL_NODE_PARAMS_v2 full{};
  FC_TRY(get_kernel_params(hNode, &full));
  std::memcpy(nodeParams, &full, sizeof *nodeParams);  // v1 is v2's leading members
  if (nodeParams->func == nullptr) {
    nodeParams->func = reinterpret_cast<CUfunction>(full.kern);
  }
  return CUDA_SUCCESS;
}
FAKECUDA_API CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return get_kernel_params(hNode, nodeParams);
}
FAKECUDA_API CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  FC_TRY(check_init());
  NodeParams p;
  FC_TRY(guarded([&] { return kernel_params_v1(p, nodeParams); }));
  return replace_params(hNode, std::move(p));
}
FAKECUDA_API CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  FC_TRY(check_init());
  NodeParams p;
  FC_TRY(guarded([&] { return kernel_params_v2(p, nodeParams); }));
  return replace_params(hNode, std::move(p));
}

FAKECUDA_API CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    return copyParams == nullptr ? CUDA_ERROR_INVALID_VALUE : memcpy_node_params(p, *copyParams, ctx);
                  });
}
FAKECUDA_API CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  return node_member(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &NodeParams::copy, nodeParams);
}
FAKECUDA_API CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  return rebuild_in_context(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, nodeParams, &memcpy_node_params);
}

FAKECUDA_API CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                                           CUcontext ctx) {
  return add_node(
      phGraphNode, hGraph, dependencies, nullptr, numDependencies, [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
        return memsetParams == nullptr ? CUDA_ERROR_INVALID_VALUE : memset_node_params(p, *memsetParams, ctx);
      });
}
FAKECUDA_API CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return node_member(hNode, CU_GRAPH_NODE_TYPE_MEMSET, &NodeParams::memset, nodeParams);
}
FAKECUDA_API CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return rebuild_in_context(hNode, CU_GRAPH_NODE_TYPE_MEMSET, nodeParams, &memset_node_params);
}

FAKECUDA_API CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                         size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    return nodeParams == nullptr ? CUDA_ERROR_INVALID_VALUE : host_node_params(p, *nodeParams);
                  });
}
FAKECUDA_API CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  return node_member(hNode, CU_GRAPH_NODE_TYPE_HOST, &NodeParams::host, nodeParams);
}
FAKECUDA_API CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  FC_TRY(check_init());
  NodeParams p;
  FC_TRY(nodeParams == nullptr ? CUDA_ERROR_INVALID_VALUE : host_node_params(p, *nodeParams));
  return replace_params(hNode, std::move(p));
}

FAKECUDA_API CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies, size_t numDependencies,
                                               CUgraph childGraph) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph& g, NodeParams& p, std::unique_ptr<Graph>& child) {
                    p.type = CU_GRAPH_NODE_TYPE_GRAPH;
                    return child_clone(g, childGraph, child);  // "The child graph is cloned in this call."
                  });
}
FAKECUDA_API CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  if (phGraph == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(hNode, CU_GRAPH_NODE_TYPE_GRAPH, [&](Node& n) {
    *phGraph = reinterpret_cast<CUgraph>(n.child.get());
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          size_t numDependencies) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    p.type = CU_GRAPH_NODE_TYPE_EMPTY;
                    return CUDA_SUCCESS;
                  });
}

FAKECUDA_API CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                CUevent event) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    return event_node_params(p, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
                  });
}
FAKECUDA_API CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return node_member(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &NodeParams::event, event_out);
}
FAKECUDA_API CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return replace_event(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}
FAKECUDA_API CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                              size_t numDependencies, CUevent event) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    return event_node_params(p, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
                  });
}
FAKECUDA_API CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return node_member(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, &NodeParams::event, event_out);
}
FAKECUDA_API CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return replace_event(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}

FAKECUDA_API CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                             size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) {
                    if (nodeParams == nullptr) {
                      return CUDA_ERROR_INVALID_VALUE;
                    }
                    FC_TRY(alloc_node_params(p, *nodeParams, current_context_or_null()));
                    nodeParams->dptr = p.allocation->ptr;  // fixed across instantiations and launches
                    return CUDA_SUCCESS;
                  });
}
FAKECUDA_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  if (params_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, [&](Node& n) {
    *params_out = CUDA_MEM_ALLOC_NODE_PARAMS{};
    params_out->poolProps = n.params.pool_props;
    params_out->accessDescs = n.params.access.empty() ? nullptr : n.params.access.data();  // owned by the node
    params_out->accessDescCount = n.params.access.size();
    params_out->bytesize = n.params.allocation->bytes;
    params_out->dptr = n.params.allocation->ptr;
    return CUDA_SUCCESS;
  });
}
FAKECUDA_API CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                            size_t numDependencies, CUdeviceptr dptr) {
  return add_node(phGraphNode, hGraph, dependencies, nullptr, numDependencies,
                  [&](Graph&, NodeParams& p, std::unique_ptr<Graph>&) { return free_node_params_locked(p, dptr); });
}
FAKECUDA_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  if (dptr_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_node(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, [&](Node& n) {
    *dptr_out = n.params.allocation->ptr;
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return add_generic(phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams);
}
FAKECUDA_API CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                        const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                        CUgraphNodeParams* nodeParams) {
  return add_generic(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

// "Modifying parameters is not supported for node types CU_GRAPH_NODE_TYPE_MEM_ALLOC and
// CU_GRAPH_NODE_TYPE_MEM_FREE."
FAKECUDA_API CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  if (nodeParams == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t size = 0;
  if (union_member(nodeParams->type, size) && !unused_bytes_zero(*nodeParams, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return locked([&] {
    Node* n = find_node_locked(hNode);
    if (n == nullptr || n->type() != nodeParams->type) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    switch (nodeParams->type) {
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return CUDA_ERROR_NOT_SUPPORTED;
      case CU_GRAPH_NODE_TYPE_GRAPH: {
        if (nodeParams->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
          return CUDA_ERROR_NOT_SUPPORTED;
        }
        std::unique_ptr<Graph> child;
        FC_TRY(child_clone(*n->graph, nodeParams->graph.graph, child));
        if (n->graph->registered) {
          register_graph_locked(*child);
        }
        child->owner = n;
        std::unique_ptr<Graph> old = std::move(n->child);
        n->child = std::move(child);
        destroy_graph_locked(old.release());  // the old child graph's handles die with it
        return CUDA_SUCCESS;
      }
      default: {
        NodeParams p;
        FC_TRY(generic_params(*nodeParams, p));
        n->params = std::move(p);
        return CUDA_SUCCESS;
      }
    }
  });
}

// ---- executable graphs -------------------------------------------------------------------

FAKECUDA_API CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                         char* logBuffer, size_t bufferSize) {
  return instantiate_with_log(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
FAKECUDA_API CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                            char* logBuffer, size_t bufferSize) {
  return instantiate_with_log(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
FAKECUDA_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  FC_TRY(check_init());
  return guarded([&] { return instantiate(phGraphExec, hGraph, flags, false, nullptr, nullptr); });
}
FAKECUDA_API CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return instantiate_with_params(phGraphExec, hGraph, instantiateParams, false);
}
FAKECUDA_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return instantiate_with_params(phGraphExec, hGraph, instantiateParams, true);
}
FAKECUDA_API CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  FC_TRY(check_init());
  return guarded([&] { return exec_flags(hGraphExec, flags); });
}

FAKECUDA_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  FC_TRY(check_init());
  return guarded([&] { return destroy_exec(hGraphExec); });
}

FAKECUDA_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return launch_exec(hGraphExec, hStream, false);
}
FAKECUDA_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return launch_exec(hGraphExec, hStream, true);
}
FAKECUDA_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  return upload_exec(hGraphExec, hStream, false);
}
FAKECUDA_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return upload_exec(hGraphExec, hStream, true);
}

FAKECUDA_API CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                           CUgraphExecUpdateResultInfo* resultInfo) {
  FC_TRY(check_init());
  if (resultInfo == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return exec_update(hGraphExec, hGraph, *resultInfo); });
}
FAKECUDA_API CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                                        CUgraphExecUpdateResult* updateResult_out) {
  FC_TRY(check_init());
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = guarded([&] { return exec_update(hGraphExec, hGraph, info); });
  if (hErrorNode_out != nullptr) {
    *hErrorNode_out = info.errorNode;
  }
  if (updateResult_out != nullptr) {
    *updateResult_out = info.result;
  }
  return r;
}

FAKECUDA_API CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  NodeParams p;
  const CUresult built = check_init() == CUDA_SUCCESS ? guarded([&] { return kernel_params_v1(p, nodeParams); })
                                                      : CUDA_ERROR_NOT_INITIALIZED;
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  NodeParams p;
  const CUresult built = check_init() == CUDA_SUCCESS ? guarded([&] { return kernel_params_v2(p, nodeParams); })
                                                      : CUDA_ERROR_NOT_INITIALIZED;
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  NodeParams p;
  const CUresult built = copyParams == nullptr ? CUDA_ERROR_INVALID_VALUE
                                               : guarded([&] { return memcpy_node_params(p, *copyParams, ctx); });
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  NodeParams p;
  const CUresult built = memsetParams == nullptr ? CUDA_ERROR_INVALID_VALUE
                                                 : guarded([&] { return memset_node_params(p, *memsetParams, ctx); });
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_HOST_NODE_PARAMS* nodeParams) {
  NodeParams p;
  const CUresult built = nodeParams == nullptr ? CUDA_ERROR_INVALID_VALUE : host_node_params(p, *nodeParams);
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  NodeParams p;
  const CUresult built = event_node_params(p, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  NodeParams p;
  const CUresult built = event_node_params(p, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
  return exec_params(hGraphExec, hNode, built, std::move(p));
}
FAKECUDA_API CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                         CUgraph childGraph) {
  FC_TRY(check_init());
  return guarded([&] { return exec_set_child_graph(hGraphExec, hNode, childGraph); });
}
FAKECUDA_API CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                               CUgraphNodeParams* nodeParams) {
  FC_TRY(check_init());
  if (nodeParams == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (nodeParams->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return CUDA_ERROR_NOT_SUPPORTED;  // "API unsupported"
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return cuGraphExecChildGraphNodeSetParams(hGraphExec, hNode, nodeParams->graph.graph);
    default: {
      NodeParams p;
      const CUresult built = guarded([&] { return generic_params(*nodeParams, p); });
      return exec_params(hGraphExec, hNode, built, std::move(p));
    }
  }
}
FAKECUDA_API CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  FC_TRY(check_init());
  return guarded([&] { return exec_set_enabled(hGraphExec, hNode, isEnabled != 0); });
}
FAKECUDA_API CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
  FC_TRY(check_init());
  return guarded([&] { return exec_get_enabled(hGraphExec, hNode, isEnabled); });
}

// ---- graph memory --------------------------------------------------------------------------

FAKECUDA_API CUresult cuDeviceGraphMemTrim(CUdevice device) {
  FC_TRY(graph_device(device));
  return guarded([&] { return memory().graph_trim(device); });
}

FAKECUDA_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FC_TRY(graph_device(device));
  if (value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Memory::GraphMemStats g = memory().graph_stats(device);
  cuuint64_t v = 0;
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
      v = g.used;
      break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      v = g.used_high;
      break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      v = g.reserved;
      break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      v = g.reserved_high;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(value, &v, sizeof v);
  return CUDA_SUCCESS;
}

// Only the high watermarks can be set, and only to zero.
FAKECUDA_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FC_TRY(graph_device(device));
  if (value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  cuuint64_t v = 0;
  std::memcpy(&v, value, sizeof v);
  if (v != 0 || (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  memory().graph_reset_high(device, attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                            attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
  return CUDA_SUCCESS;
}
