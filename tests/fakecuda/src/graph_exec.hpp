// Executable graphs: what cuGraphInstantiate makes of a graph, and how it runs. An executable
// graph is a snapshot: the graph's nodes flattened (child graphs inlined between two marker
// nodes) in a topological order, each with its own copy of the parameters, plus a copy of the
// graph's structure that cuGraphExecUpdate compares against. A launch is one operation on the
// launching stream, ordered like any other work in it and behind the previous launch of the same
// executable graph; its worker runs the nodes one at a time in that order, through the same code
// as ordinary launches, copies and memsets (work_ops.hpp).
#pragma once

#include "graph.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fakecuda {

class Stream;

struct ExecNode {
  std::uint64_t origin_uid = 0;  // the instantiated graph's node (0: a child graph marker)
  NodeParams params;
  bool enabled = true;  // cuGraphNodeSetEnabled
};

struct ExecState {
  std::mutex mutex;                                      // parameters, flags and the last launch
  std::vector<ExecNode> nodes;                           // topological order
  std::unordered_map<std::uint64_t, std::size_t> index;  // origin uid -> position in nodes
  std::unique_ptr<Graph> shape;                          // the instantiated graph's structure (unregistered copy)
  std::uint64_t graph_id = 0;
  unsigned long long flags = 0;
  bool has_mem_nodes = false;
  std::shared_ptr<Stream> last_stream;  // the previous launch or upload, which the next follows
  std::uint64_t last_seq = 0;
};

// What a CUgraphExec handle points at; the state outlives it while launches are pending
// ("If the executable graph is in-flight, it will not be terminated, but rather freed
// asynchronously on completion").
struct Exec {
  std::shared_ptr<ExecState> state;
};

Exec* find_exec_locked(CUgraphExec handle);

// The upload CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD asks for is the caller's (upload_exec).
CUresult instantiate(CUgraphExec* out, CUgraph graph, unsigned long long flags, bool allow_upload_flag,
                     CUgraphNode* error_node, CUgraphInstantiateResult* result);
CUresult destroy_exec(CUgraphExec exec);
CUresult launch_exec(CUgraphExec exec, CUstream stream, bool per_thread);
CUresult upload_exec(CUgraphExec exec, CUstream stream, bool per_thread);

// Parameters of one node of an executable graph (cuGraphExec*SetParams): `node` is the node of
// the graph it was instantiated from; `params` were built and checked by graph_params.cpp.
CUresult exec_set_params(CUgraphExec exec, CUgraphNode node, NodeParams params);
CUresult exec_set_child_graph(CUgraphExec exec, CUgraphNode node, CUgraph child);
CUresult exec_set_enabled(CUgraphExec exec, CUgraphNode node, bool enabled);
CUresult exec_get_enabled(CUgraphExec exec, CUgraphNode node, unsigned* enabled);
CUresult exec_update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo& info);
CUresult exec_flags(CUgraphExec exec, cuuint64_t* flags);

}  // namespace fakecuda
