// The graph registry and the structural operations on graphs: nodes, edges, destruction and
// cloning. Parameters of each node type are built in graph_params.cpp.
#include "graph.hpp"

#include "driver.hpp"
#include "memory.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace fakecuda {
namespace {

struct GraphRegistry {
  std::mutex mutex;
  std::unordered_set<const Graph*> graphs;                 // registered graph handles
  std::unordered_map<std::uint64_t, Graph*> graphs_by_id;  // the same, by id
  std::unordered_set<const Node*> nodes;                   // registered node handles
  std::uint64_t next_graph_id = 1;
  std::uint64_t next_node_uid = 1;
};

GraphRegistry& registry() {
  static auto* r = new GraphRegistry;  // leaked: executable graphs may outlive static destruction
  return *r;
}

void unregister_graph_locked(Graph& g) {
  GraphRegistry& r = registry();
  if (!g.registered) {
    return;
  }
  g.registered = false;
  r.graphs.erase(&g);
  r.graphs_by_id.erase(g.id);
  for (const auto& n : g.nodes) {
    r.nodes.erase(n.get());
    if (n->child) {
      unregister_graph_locked(*n->child);
    }
  }
}

void erase_one(std::vector<Node*>& v, const Node* n) {
  const auto it = std::find(v.begin(), v.end(), n);
  if (it != v.end()) {
    v.erase(it);
  }
}

}  // namespace

GraphAllocation::~GraphAllocation() { memory().graph_drop(ptr); }

Graph::~Graph() = default;

std::mutex& graph_mutex() { return registry().mutex; }

std::unique_ptr<Graph> new_unregistered_graph_locked() {
  auto g = std::make_unique<Graph>();
  g->id = registry().next_graph_id++;
  return g;
}

void register_graph_locked(Graph& g) {
  GraphRegistry& r = registry();
  g.registered = true;
  r.graphs.insert(&g);
  r.graphs_by_id.emplace(g.id, &g);
  for (const auto& n : g.nodes) {
    r.nodes.insert(n.get());
    if (n->child) {
      register_graph_locked(*n->child);
    }
  }
}

Graph* create_graph_locked() {
  Graph* g = new_unregistered_graph_locked().release();
  register_graph_locked(*g);
  return g;
}

void destroy_graph_locked(Graph* g) {
  unregister_graph_locked(*g);
  delete g;
}

Graph* find_graph_locked(CUgraph handle) {
  GraphRegistry& r = registry();
  const auto it = r.graphs.find(reinterpret_cast<const Graph*>(handle));
  return it == r.graphs.end() ? nullptr : const_cast<Graph*>(*it);
}

Node* find_node_locked(CUgraphNode handle) {
  GraphRegistry& r = registry();
  const auto it = r.nodes.find(reinterpret_cast<const Node*>(handle));
  return it == r.nodes.end() ? nullptr : const_cast<Node*>(*it);
}

bool graph_alive_locked(std::uint64_t id) { return registry().graphs_by_id.count(id) != 0; }

Graph* graph_by_id_locked(std::uint64_t id) {
  const auto it = registry().graphs_by_id.find(id);
  return it == registry().graphs_by_id.end() ? nullptr : it->second;
}

Node* find_node_by_uid_locked(std::uint64_t uid) {
  for (const Node* n : registry().nodes) {
    if (n->uid == uid) {
      return const_cast<Node*>(n);
    }
  }
  return nullptr;
}

// ---- edges -------------------------------------------------------------------------------

bool edge_is_default(const CUgraphEdgeData& e) {
  static const CUgraphEdgeData zero{};
  return std::memcmp(&e, &zero, sizeof e) == 0;
}

// CUgraphEdgeData: to_port must be 0, reserved bytes zero; only kernel nodes have non-zero
// outgoing ports, and those go with programmatic edges (cuda.h, CUgraphEdgeData).
CUresult check_edge(const CUgraphEdgeData& e, const Node& from) {
  for (const unsigned char b : e.reserved) {
    if (b != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (e.to_port != 0 || e.type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (e.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) {
    if (from.type() != CU_GRAPH_NODE_TYPE_KERNEL || (e.from_port != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC &&
                                                     e.from_port != CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  } else if (e.from_port != CU_GRAPH_KERNEL_NODE_PORT_DEFAULT) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult check_dependencies_locked(const Graph& g, const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t n,
                                   std::vector<Node*>& out) {
  if (n > 0 && deps == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out.clear();
  for (std::size_t i = 0; i < n; ++i) {
    Node* d = find_node_locked(deps[i]);
    if (d == nullptr || d->graph != &g || std::find(out.begin(), out.end(), d) != out.end()) {
      return CUDA_ERROR_INVALID_VALUE;  // not a node of this graph, or a duplicate
    }
    if (edges != nullptr) {
      FC_TRY(check_edge(edges[i], *d));
    }
    out.push_back(d);
  }
  return CUDA_SUCCESS;
}

void add_edge_locked(Node& from, Node& to, const CUgraphEdgeData& data) {
  to.deps.push_back(&from);
  to.dep_edges.push_back(data);
  from.dependents.push_back(&to);
}

bool remove_edge_locked(Node& from, Node& to, const CUgraphEdgeData& data) {
  for (std::size_t i = 0; i < to.deps.size(); ++i) {
    if (to.deps[i] == &from && std::memcmp(&to.dep_edges[i], &data, sizeof data) == 0) {
      to.deps.erase(to.deps.begin() + static_cast<std::ptrdiff_t>(i));
      to.dep_edges.erase(to.dep_edges.begin() + static_cast<std::ptrdiff_t>(i));
      erase_one(from.dependents, &to);
      return true;
    }
  }
  return false;
}

CUresult add_node_locked(Graph& g, NodeParams params, std::unique_ptr<Graph> child, const std::vector<Node*>& deps,
                         const std::vector<CUgraphEdgeData>& edges, Node*& out) {
  for (const CUgraphEdgeData& e : edges) {
    if (e.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC && params.type != CU_GRAPH_NODE_TYPE_KERNEL) {
      return CUDA_ERROR_INVALID_VALUE;  // programmatic edges connect kernel nodes only
    }
  }
  FC_TRY(attach_params_locked(g, params));
  auto node = std::make_unique<Node>();
  node->graph = &g;
  node->uid = registry().next_node_uid++;
  node->origin_uid = node->uid;
  node->params = std::move(params);
  if (child) {
    child->owner = node.get();
    node->child = std::move(child);
  }
  for (std::size_t i = 0; i < deps.size(); ++i) {
    add_edge_locked(*deps[i], *node, i < edges.size() ? edges[i] : CUgraphEdgeData{});
  }
  out = node.get();
  if (g.registered) {
    GraphRegistry& r = registry();
    r.nodes.insert(out);
    if (out->child) {
      register_graph_locked(*out->child);
    }
  }
  g.nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

void destroy_node_locked(Node* n) {
  while (!n->deps.empty()) {
    remove_edge_locked(*n->deps.front(), *n, n->dep_edges.front());
  }
  while (!n->dependents.empty()) {
    Node* to = n->dependents.front();
    for (std::size_t i = 0; i < to->deps.size(); ++i) {
      if (to->deps[i] == n) {
        remove_edge_locked(*n, *to, to->dep_edges[i]);
        break;
      }
    }
  }
  registry().nodes.erase(n);
  if (n->child) {
    unregister_graph_locked(*n->child);
  }
  auto& nodes = n->graph->nodes;
  nodes.erase(std::find_if(nodes.begin(), nodes.end(), [n](const auto& p) { return p.get() == n; }));
}

// ---- properties and cloning --------------------------------------------------------------

bool has_mem_nodes(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (n->type() == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type() == CU_GRAPH_NODE_TYPE_MEM_FREE ||
        (n->child && has_mem_nodes(*n->child))) {
      return true;
    }
  }
  return false;
}

bool is_capture_graph_locked(const Graph& g) {
  return g.capturing > 0 || (g.owner != nullptr && is_capture_graph_locked(*g.owner->graph));
}

std::unique_ptr<Graph> clone_graph_locked(const Graph& g) {
  std::unique_ptr<Graph> copy = new_unregistered_graph_locked();
  copy->clone_source = g.id;
  std::unordered_map<const Node*, Node*> to_copy;
  for (const auto& n : g.nodes) {
    auto c = std::make_unique<Node>();
    c->graph = copy.get();
    c->uid = registry().next_node_uid++;
    c->origin_uid = n->uid;
    c->params = n->params;
    if (n->child) {
      c->child = clone_graph_locked(*n->child);
      c->child->owner = c.get();
    }
    to_copy.emplace(n.get(), c.get());
    copy->nodes.push_back(std::move(c));
  }
  // Edges in the original's order on both ends, so a clone pairs with its original edge by edge.
  for (const auto& n : g.nodes) {
    Node* c = to_copy.at(n.get());
    for (std::size_t i = 0; i < n->deps.size(); ++i) {
      c->deps.push_back(to_copy.at(n->deps[i]));
      c->dep_edges.push_back(n->dep_edges[i]);
    }
    for (const Node* d : n->dependents) {
      c->dependents.push_back(to_copy.at(d));
    }
  }
  return copy;
}

}  // namespace fakecuda
