// Instantiation, launch, upload, update and destruction of executable graphs (graph_exec.hpp), as
// cuda.h documents cuGraphInstantiate*, cuGraphLaunch, cuGraphUpload, cuGraphExecUpdate and the
// cuGraphExec*SetParams calls.
#include "graph_exec.hpp"

#include "capture.hpp"
#include "driver.hpp"
#include "memory.hpp"
#include "modules.hpp"
#include "stats.hpp"
#include "streams.hpp"
#include "work_ops.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <unordered_set>

namespace fakecuda {
namespace {

std::unordered_set<const Exec*>& execs() {
  static auto* s = new std::unordered_set<const Exec*>;  // graph_mutex
  return *s;
}

constexpr unsigned long long kKnownInstantiateFlags =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

// ---- flattening ----------------------------------------------------------------------------

// Where a node of the copied graph sits among the executable nodes: a child graph node spans an
// entry marker, its graph's nodes and an exit marker; dependents wait for the exit.
struct Span {
  std::size_t entry = 0;
  std::size_t exit = 0;
};

struct Flat {
  std::vector<ExecNode> nodes;
  std::vector<std::vector<std::size_t>> deps;
  std::unordered_map<const Node*, Span> spans;
};

std::size_t push(Flat& f, std::uint64_t origin_uid, const NodeParams& params) {
  f.nodes.push_back(ExecNode{origin_uid, params, true});
  f.deps.emplace_back();
  return f.nodes.size() - 1;
}

void place(const Graph& g, Flat& f) {
  for (const auto& n : g.nodes) {
    if (n->child) {
      const std::size_t entry = push(f, n->origin_uid, n->params);
      place(*n->child, f);
      f.spans[n.get()] = Span{entry, push(f, 0, NodeParams{})};
    } else {
      const std::size_t at = push(f, n->origin_uid, n->params);
      f.spans[n.get()] = Span{at, at};
    }
  }
}

void connect(const Graph& g, Flat& f, const Span* parent) {
  for (const auto& n : g.nodes) {
    const Span span = f.spans.at(n.get());
    auto& deps = f.deps[span.entry];
    for (const Node* d : n->deps) {
      deps.push_back(f.spans.at(d).exit);
    }
    if (n->deps.empty() && parent != nullptr) {
      deps.push_back(parent->entry);  // a child graph's roots start after its node's dependencies
    }
    if (n->child) {
      connect(*n->child, f, &span);
      auto& exit = f.deps[span.exit];
      for (const auto& c : n->child->nodes) {
        if (c->dependents.empty()) {
          exit.push_back(f.spans.at(c.get()).exit);
        }
      }
      if (n->child->nodes.empty()) {
        exit.push_back(span.entry);
      }
    }
  }
}

// Kahn's algorithm, earliest-created first. Returns false on a cycle, naming a node in it.
bool topological_order(const Flat& f, std::vector<std::size_t>& order, std::uint64_t& stuck_uid) {
  const std::size_t n = f.nodes.size();
  std::vector<std::size_t> waiting(n, 0);
  std::vector<std::vector<std::size_t>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    waiting[i] = f.deps[i].size();
    for (const std::size_t d : f.deps[i]) {
      out[d].push_back(i);
    }
  }
  std::deque<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) {
      ready.push_back(i);
    }
  }
  while (!ready.empty()) {
    const std::size_t i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (const std::size_t j : out[i]) {
      if (--waiting[j] == 0) {
        ready.push_back(j);
      }
    }
  }
  if (order.size() == n) {
    return true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] != 0 && f.nodes[i].origin_uid != 0) {
      stuck_uid = f.nodes[i].origin_uid;
      break;
    }
  }
  return false;
}

// CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH: "only kernel nodes, memcpy nodes, memset nodes, and
// child graph nodes", and at least one kernel, memcpy or memset node.
const Node* device_launch_offender(const Graph& g, bool& has_work) {
  for (const auto& n : g.nodes) {
    switch (n->type()) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
      case CU_GRAPH_NODE_TYPE_MEMCPY:
      case CU_GRAPH_NODE_TYPE_MEMSET:
        has_work = true;
        break;
      case CU_GRAPH_NODE_TYPE_GRAPH:
        if (const Node* bad = device_launch_offender(*n->child, has_work)) {
          return bad;
        }
        break;
      default:
        return n.get();
    }
  }
  return nullptr;
}

const Node* dead_kernel(const Graph& g) {
  for (const auto& n : g.nodes) {
    Function* fn = nullptr;
    if (n->type() == CU_GRAPH_NODE_TYPE_KERNEL && find_function(n->params.kernel.handle(), fn) != CUDA_SUCCESS) {
      return n.get();
    }
    if (n->child) {
      if (const Node* bad = dead_kernel(*n->child)) {
        return bad;
      }
    }
  }
  return nullptr;
}

// ---- update --------------------------------------------------------------------------------

struct UpdateFailure {
  CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
  const Node* node = nullptr;
  const Node* from = nullptr;
};

// The parameter changes an executable graph accepts (cuGraphExecUpdate's limitations).
CUgraphExecUpdateResult updatable(const NodeParams& was, const NodeParams& now) {
  switch (now.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return was.kernel.cooperative == now.kernel.cooperative ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                                              : CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return was.copy.srcMemoryType == now.copy.srcMemoryType && was.copy.dstMemoryType == now.copy.dstMemoryType
                 ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                 : CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS& a = was.memset;
      const CUDA_MEMSET_NODE_PARAMS& b = now.memset;
      // "For 2d memsets, only address and assigned value may be updated."
      const bool two_d = a.height > 1 || b.height > 1;
      const bool same_shape =
          a.pitch == b.pitch && a.width == b.width && a.height == b.height && a.elementSize == b.elementSize;
      return two_d && !same_shape ? CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED : CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return was.allocation->ptr == now.allocation->ptr && was.allocation->bytes == now.allocation->bytes
                 ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                 : CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return was.allocation->ptr == now.allocation->ptr ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                                        : CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
    default:
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
  }
}

// Nodes are paired in creation order and edges in the order they were added (cuGraphExecUpdate).
bool compare_locked(const Graph& shape, const Graph& g, const ExecState& st, UpdateFailure& fail) {
  if (shape.nodes.size() != g.nodes.size()) {
    fail = UpdateFailure{CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, nullptr, nullptr};
    return false;
  }
  std::unordered_map<const Node*, std::size_t> pos_a;
  std::unordered_map<const Node*, std::size_t> pos_b;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    pos_a[shape.nodes[i].get()] = i;
    pos_b[g.nodes[i].get()] = i;
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& a = *shape.nodes[i];
    const Node& b = *g.nodes[i];
    if (a.type() != b.type()) {
      fail = UpdateFailure{CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, &b, nullptr};
      return false;
    }
    if (a.deps.size() != b.deps.size()) {
      fail = UpdateFailure{CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, &b, nullptr};
      return false;
    }
    for (std::size_t k = 0; k < b.deps.size(); ++k) {
      if (pos_a.at(a.deps[k]) != pos_b.at(b.deps[k]) ||
          std::memcmp(&a.dep_edges[k], &b.dep_edges[k], sizeof(CUgraphEdgeData)) != 0) {
        fail = UpdateFailure{CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, &b, b.deps[k]};
        return false;
      }
    }
    if (a.child) {
      if (!compare_locked(*a.child, *b.child, st, fail)) {
        return false;
      }
      continue;
    }
    const CUgraphExecUpdateResult r = updatable(st.nodes[st.index.at(a.origin_uid)].params, b.params);
    if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
      fail = UpdateFailure{r, &b, nullptr};
      return false;
    }
  }
  return true;
}

void apply_locked(Graph& shape, const Graph& g, ExecState& st) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& a = *shape.nodes[i];
    const Node& b = *g.nodes[i];
    if (a.child) {
      apply_locked(*a.child, *b.child, st);
      continue;
    }
    st.nodes[st.index.at(a.origin_uid)].params = b.params;
    a.params = b.params;
  }
}

Node* shape_node(Graph& g, std::uint64_t origin_uid) {
  for (const auto& n : g.nodes) {
    if (n->origin_uid == origin_uid) {
      return n.get();
    }
    if (n->child) {
      if (Node* found = shape_node(*n->child, origin_uid)) {
        return found;
      }
    }
  }
  return nullptr;
}

// A copy of the executable graph as it runs now (parameters set on it included): what a graph
// launched into a capturing stream becomes, a child graph node.
void copy_current_params(const Graph& shape, Graph& copy, const ExecState& st) {
  for (std::size_t i = 0; i < shape.nodes.size(); ++i) {
    if (shape.nodes[i]->child) {
      copy_current_params(*shape.nodes[i]->child, *copy.nodes[i]->child, st);
    } else {
      copy.nodes[i]->params = st.nodes[st.index.at(shape.nodes[i]->origin_uid)].params;
    }
  }
}

// ---- launches ------------------------------------------------------------------------------

struct EventPublish {
  std::shared_ptr<Event> event;
  std::shared_ptr<EventRecord> record;
};

// The allocations a launch maps, and the allocations of other graphs it frees.
void graph_memory_of(const ExecState& st, std::vector<Memory::GraphLaunchAlloc>& allocs,
                     std::vector<CUdeviceptr>& frees) {
  std::unordered_set<CUdeviceptr> freed_here;
  std::unordered_set<CUdeviceptr> allocated_here;
  for (const ExecNode& n : st.nodes) {
    if (n.params.type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
      freed_here.insert(n.params.allocation->ptr);
    } else if (n.params.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      allocated_here.insert(n.params.allocation->ptr);
    }
  }
  for (const ExecNode& n : st.nodes) {
    if (n.params.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      allocs.push_back(
          Memory::GraphLaunchAlloc{n.params.allocation->ptr, freed_here.count(n.params.allocation->ptr) != 0});
    } else if (n.params.type == CU_GRAPH_NODE_TYPE_MEM_FREE && allocated_here.count(n.params.allocation->ptr) == 0) {
      frees.push_back(n.params.allocation->ptr);
    }
  }
}

// Checks made before a launch changes anything: kernels still loaded, copies and memsets still
// valid, events still there; collects what the launch must wait for (event wait nodes).
CUresult check_launch_locked(const ExecState& st, std::vector<Dependency>& waits) {
  for (const ExecNode& n : st.nodes) {
    if (!n.enabled) {
      continue;
    }
    const NodeParams& p = n.params;
    switch (p.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        Function* fn = nullptr;
        if (find_function(p.kernel.handle(), fn) != CUDA_SUCCESS) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        FC_TRY(check_memcpy3d(p.copy));
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        FC_TRY(check_memset_node(p.memset));
        break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
        std::shared_ptr<Event> e;
        if (find_event(p.event, e) != CUDA_SUCCESS) {
          return CUDA_ERROR_INVALID_VALUE;  // destroyed since the node was made
        }
        if (p.type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
          std::lock_guard<std::mutex> lock(e->mutex);
          if (e->captured) {
            return CUDA_ERROR_CAPTURED_EVENT;
          }
          // An event wait node waits for the work its event held when the graph was launched; the
          // whole launch waits for it (a valid schedule of the node's edge).
          if (e->last && !e->last->done.load(std::memory_order_acquire)) {
            waits.push_back(Dependency{e->last->stream, e->last->seq});
          }
        }
        break;
      }
      default:
        break;
    }
  }
  return CUDA_SUCCESS;
}

std::function<void()> node_op(const ExecNode& n, const std::shared_ptr<Stream>& s, std::vector<EventPublish>& records) {
  const NodeParams& p = n.params;
  Context* owner = s->context;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      Function* fn = nullptr;
      find_function(p.kernel.handle(), fn);  // checked by check_launch_locked under the same lock
      return kernel_op(*fn, p.kernel.packed, p.kernel.dims, *s);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      std::function<void()> op;
      const CUresult r =
          p.type == CU_GRAPH_NODE_TYPE_MEMCPY ? memcpy3d_op(p.copy, *s, op) : memset_node_op(p.memset, *s, op);
      if (r != CUDA_SUCCESS) {
        // Memory freed between the check and now: the node faults when it runs.
        return [owner] { set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS); };
      }
      return op;
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      count(stats().host_functions);
      const CUDA_HOST_NODE_PARAMS host = p.host;
      return [host] { host.fn(host.userData); };
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: {
      EventPublish publish;
      find_event(p.event, publish.event);
      publish.record = std::make_shared<EventRecord>();
      publish.record->stream = s;
      records.push_back(publish);
      count(stats().event_records);
      return [record = publish.record] {
        record->time = std::chrono::steady_clock::now();
        record->done.store(true, std::memory_order_release);
      };
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      const CUdeviceptr ptr = p.allocation->ptr;
      return [ptr] { memory().graph_alloc_run(ptr); };
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
      const CUdeviceptr ptr = p.allocation->ptr;
      return [ptr] { memory().graph_free_run(ptr); };
    }
    default:
      return nullptr;  // empty nodes, event waits (the launch waited), child graph markers
  }
}

// Orders an operation of this executable graph behind its previous launch or upload.
void follow_previous(const ExecState& st, const std::shared_ptr<Stream>& s, std::vector<Dependency>& deps) {
  if (st.last_stream && st.last_stream != s && st.last_stream->completed() < st.last_seq) {
    deps.push_back(Dependency{st.last_stream, st.last_seq});
  }
}

CUresult exec_state(CUgraphExec handle, std::shared_ptr<ExecState>& out, CUresult unknown) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  Exec* e = find_exec_locked(handle);
  if (e == nullptr) {
    return unknown;
  }
  out = e->state;
  return CUDA_SUCCESS;
}

}  // namespace

Exec* find_exec_locked(CUgraphExec handle) {
  const auto it = execs().find(reinterpret_cast<const Exec*>(handle));
  return it == execs().end() ? nullptr : const_cast<Exec*>(*it);
}

CUresult instantiate(CUgraphExec* out, CUgraph graph, unsigned long long flags, bool allow_upload_flag,
                     CUgraphNode* error_node, CUgraphInstantiateResult* result) {
  const auto fail = [&](CUgraphInstantiateResult why, const Node* node) {
    if (result != nullptr) {
      *result = why;
    }
    if (error_node != nullptr) {
      *error_node = reinterpret_cast<CUgraphNode>(const_cast<Node*>(node));
    }
    return CUDA_ERROR_INVALID_VALUE;
  };
  if (error_node != nullptr) {
    *error_node = nullptr;
  }
  if (out == nullptr || (flags & ~kKnownInstantiateFlags) != 0 ||
      ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0 && !allow_upload_flag) ||
      ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0 &&
       (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0)) {
    return fail(CUDA_GRAPH_INSTANTIATE_ERROR, nullptr);
  }
  Exec* exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(graph_mutex());
    Graph* g = find_graph_locked(graph);
    // Not while it is being captured into ("not instantiable until ... cuStreamEndCapture").
    if (g == nullptr || is_capture_graph_locked(*g)) {
      return fail(CUDA_GRAPH_INSTANTIATE_ERROR, nullptr);
    }
    const bool mem = has_mem_nodes(*g);
    // "If hGraph contains any allocation or free nodes, there can be at most one executable graph
    // in existence for that graph at a time." A child graph belongs to its node: not on its own.
    if ((mem && g->execs > 0) || g->owner != nullptr) {
      return fail(CUDA_GRAPH_INSTANTIATE_ERROR, nullptr);
    }
    if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) {
      bool has_work = false;
      const Node* bad = device_launch_offender(*g, has_work);
      if (bad != nullptr || !has_work) {
        return fail(CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED, bad);
      }
    }
    if (const Node* bad = dead_kernel(*g)) {
      return fail(CUDA_GRAPH_INSTANTIATE_ERROR, bad);
    }
    auto st = std::make_shared<ExecState>();
    st->shape = clone_graph_locked(*g);
    Flat flat;
    place(*st->shape, flat);
    connect(*st->shape, flat, nullptr);
    std::vector<std::size_t> order;
    std::uint64_t stuck = 0;
    if (!topological_order(flat, order, stuck)) {
      return fail(CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE, find_node_by_uid_locked(stuck));  // a cycle
    }
    for (const std::size_t i : order) {
      if (flat.nodes[i].origin_uid != 0) {
        st->index[flat.nodes[i].origin_uid] = st->nodes.size();
      }
      st->nodes.push_back(std::move(flat.nodes[i]));
    }
    st->graph_id = g->id;
    st->flags = flags;
    st->has_mem_nodes = mem;
    ++g->execs;
    exec = new Exec{std::move(st)};
    execs().insert(exec);
    count(stats().graph_instantiations);
  }
  *out = reinterpret_cast<CUgraphExec>(exec);
  if (result != nullptr) {
    *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  }
  return CUDA_SUCCESS;
}

CUresult destroy_exec(CUgraphExec handle) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  Exec* e = find_exec_locked(handle);
  if (e == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  execs().erase(e);
  if (Graph* g = graph_by_id_locked(e->state->graph_id)) {
    --g->execs;
  }
  delete e;  // launches still pending keep the state alive
  return CUDA_SUCCESS;
}

namespace {

// The way into a launch or an upload: body(state, stream) once the executable graph and the
// stream are found, exceptions turned into CUresults.
template <class F>
CUresult with_exec_and_stream(CUgraphExec handle, CUstream stream, bool per_thread, F&& body) {
  FC_TRY(check_init());
  if (handle == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<ExecState> st;
    FC_TRY(exec_state(handle, st, CUDA_ERROR_INVALID_HANDLE));
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(stream, per_thread, s));
    return body(st, s);
  });
}

CUresult launch_on(const std::shared_ptr<ExecState>& st, const std::shared_ptr<Stream>& s) {
  FC_TRY(sticky_error(s->context));
  if (captures_exist()) {  // a graph launched into a capturing stream becomes a child graph node
    bool captured = false;
    FC_TRY(capture_child_graph(
        s,
        [&](std::unique_ptr<Graph>& child) {
          std::lock_guard<std::mutex> exec_lock(st->mutex);
          if (st->has_mem_nodes) {
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // child graphs may not hold mem nodes (cloned)
          }
          child = clone_graph_locked(*st->shape);
          copy_current_params(*st->shape, *child, *st);
          return CUDA_SUCCESS;
        },
        captured));
    if (captured) {
      return CUDA_SUCCESS;
    }
  }
  std::lock_guard<std::mutex> exec_lock(st->mutex);
  std::vector<Dependency> deps;
  FC_TRY(check_launch_locked(*st, deps));
  std::vector<Memory::GraphLaunchAlloc> allocs;
  std::vector<CUdeviceptr> frees;
  std::vector<CUdeviceptr> auto_freed;
  graph_memory_of(*st, allocs, frees);
  if (!allocs.empty() || !frees.empty()) {
    FC_TRY(memory().graph_launch_begin(
        allocs, frees, (st->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0, false, auto_freed));
  }
  std::vector<EventPublish> records;
  std::vector<std::function<void()>> ops;
  for (const ExecNode& n : st->nodes) {
    if (n.enabled) {
      if (std::function<void()> op = node_op(n, s, records)) {
        ops.push_back(std::move(op));
      }
    }
  }
  follow_previous(*st, s, deps);
  const std::uint64_t seq = enqueue(
      s,
      [st, ops = std::move(ops), auto_freed = std::move(auto_freed), allocs]() mutable {
        for (const CUdeviceptr p : auto_freed) {
          memory().graph_free_run(p);  // "as though it called cuMemFreeAsync" before the launch
        }
        for (auto& op : ops) {
          op();
        }
        if (!allocs.empty()) {
          memory().graph_launch_end(allocs);
        }
      },
      std::move(deps));
  st->last_stream = s;
  st->last_seq = seq;
  for (EventPublish& p : records) {
    p.record->seq = seq;
    std::lock_guard<std::mutex> event_lock(p.event->mutex);
    p.event->last = p.record;
    p.event->captured.reset();
  }
  count(stats().graph_launches);
  return CUDA_SUCCESS;
}

CUresult upload_on(const std::shared_ptr<ExecState>& st, const std::shared_ptr<Stream>& s) {
  FC_TRY(capture_refuse(s));
  std::lock_guard<std::mutex> exec_lock(st->mutex);
  std::vector<Memory::GraphLaunchAlloc> allocs;
  std::vector<CUdeviceptr> frees;
  std::vector<CUdeviceptr> unused;
  graph_memory_of(*st, allocs, frees);
  if (!allocs.empty()) {
    // "Uses memory cached by stream to back the allocations owned by hGraphExec": mapped now.
    FC_TRY(memory().graph_launch_begin(allocs, {}, false, true, unused));
  }
  std::vector<Dependency> deps;
  follow_previous(*st, s, deps);
  st->last_seq = enqueue(
      s, [] {}, std::move(deps));
  st->last_stream = s;
  count(stats().graph_uploads);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult launch_exec(CUgraphExec handle, CUstream stream, bool per_thread) {
  return with_exec_and_stream(handle, stream, per_thread, launch_on);
}

CUresult upload_exec(CUgraphExec handle, CUstream stream, bool per_thread) {
  return with_exec_and_stream(handle, stream, per_thread, upload_on);
}

namespace {

// The executable graph's copy of a node of the graph it was instantiated from: body(copy) runs
// with the graph and exec mutexes held; an unknown exec or node, or a node the executable graph
// does not have, is CUDA_ERROR_INVALID_VALUE.
template <class F>
CUresult with_exec_node(CUgraphExec handle, CUgraphNode node, F&& body) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  Exec* e = find_exec_locked(handle);
  Node* n = find_node_locked(node);
  if (e == nullptr || n == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  ExecState& st = *e->state;
  std::lock_guard<std::mutex> exec_lock(st.mutex);
  const auto it = st.index.find(n->uid);
  if (it == st.index.end()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return body(st.nodes[it->second]);
}

// "Currently only kernel, memset and memcpy nodes are supported" (cuGraphNodeSetEnabled).
bool can_be_disabled(const ExecNode& x) {
  return x.params.type == CU_GRAPH_NODE_TYPE_KERNEL || x.params.type == CU_GRAPH_NODE_TYPE_MEMSET ||
         x.params.type == CU_GRAPH_NODE_TYPE_MEMCPY;
}

}  // namespace

CUresult exec_set_params(CUgraphExec handle, CUgraphNode node, NodeParams params) {
  return with_exec_node(handle, node, [&](ExecNode& x) {
    if (x.params.type != params.type) {
      return CUDA_ERROR_INVALID_VALUE;  // another type
    }
    NodeParams& was = x.params;
    switch (params.type) {
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        // cuGraphExecMemcpyNodeSetParams: 1-dimensional operands, same memory types.
        if (was.copy.Height > 1 || was.copy.Depth > 1 || params.copy.Height > 1 || params.copy.Depth > 1 ||
            updatable(was, params) != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        break;
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
      case CU_GRAPH_NODE_TYPE_GRAPH:
        return CUDA_ERROR_NOT_SUPPORTED;
      default:
        if (updatable(was, params) != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
          return CUDA_ERROR_INVALID_VALUE;
        }
    }
    was = std::move(params);
    return CUDA_SUCCESS;
  });
}

CUresult exec_set_child_graph(CUgraphExec handle, CUgraphNode node, CUgraph child) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  Exec* e = find_exec_locked(handle);
  Node* n = find_node_locked(node);
  Graph* g = find_graph_locked(child);
  if (e == nullptr || n == nullptr || g == nullptr || n->type() != CU_GRAPH_NODE_TYPE_GRAPH) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  ExecState& st = *e->state;
  std::lock_guard<std::mutex> exec_lock(st.mutex);
  Node* copy = shape_node(*st.shape, n->uid);
  UpdateFailure failure;
  if (copy == nullptr || !copy->child || !compare_locked(*copy->child, *g, st, failure)) {
    return CUDA_ERROR_INVALID_VALUE;  // the topology must match (cuGraphExecChildGraphNodeSetParams)
  }
  apply_locked(*copy->child, *g, st);
  return CUDA_SUCCESS;
}

CUresult exec_set_enabled(CUgraphExec handle, CUgraphNode node, bool enabled) {
  return with_exec_node(handle, node, [&](ExecNode& x) {
    if (!can_be_disabled(x)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    x.enabled = enabled;
    return CUDA_SUCCESS;
  });
}

CUresult exec_get_enabled(CUgraphExec handle, CUgraphNode node, unsigned* enabled) {
  if (enabled == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return with_exec_node(handle, node, [&](const ExecNode& x) {
    if (!can_be_disabled(x)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *enabled = x.enabled ? 1 : 0;
    return CUDA_SUCCESS;
  });
}

CUresult exec_update(CUgraphExec handle, CUgraph graph, CUgraphExecUpdateResultInfo& info) {
  info = CUgraphExecUpdateResultInfo{CU_GRAPH_EXEC_UPDATE_ERROR, nullptr, nullptr};
  std::lock_guard<std::mutex> lock(graph_mutex());
  Exec* e = find_exec_locked(handle);
  Graph* g = find_graph_locked(graph);
  if (e == nullptr || g == nullptr || is_capture_graph_locked(*g)) {
    return CUDA_ERROR_INVALID_VALUE;  // "CU_GRAPH_EXEC_UPDATE_ERROR if passed an invalid value"
  }
  ExecState& st = *e->state;
  std::lock_guard<std::mutex> exec_lock(st.mutex);
  UpdateFailure failure;
  if (!compare_locked(*st.shape, *g, st, failure)) {
    info.result = failure.result;
    info.errorNode = reinterpret_cast<CUgraphNode>(const_cast<Node*>(failure.node));
    info.errorFromNode = reinterpret_cast<CUgraphNode>(const_cast<Node*>(failure.from));
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  apply_locked(*st.shape, *g, st);
  info.result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult exec_flags(CUgraphExec handle, cuuint64_t* flags) {
  if (flags == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::shared_ptr<ExecState> st;
  FC_TRY(exec_state(handle, st, CUDA_ERROR_INVALID_VALUE));
  std::lock_guard<std::mutex> exec_lock(st->mutex);
  // "CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD will not be returned by this API".
  *flags = st->flags & ~static_cast<cuuint64_t>(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
