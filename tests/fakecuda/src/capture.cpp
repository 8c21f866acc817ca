// Stream capture sequences: which streams capture into which graph with which dependencies, the
// capture modes, forks and joins through events, and the errors and invalidations the driver
// documents (cuda.h at cuStreamBeginCapture, cuThreadExchangeStreamCaptureMode,
// cuStreamEndCapture, cuStreamIsCapturing, cuStreamGetCaptureInfo, the CUDA_ERROR_STREAM_CAPTURE_*
// codes; the CUDA programming guide's "Prohibited and Unhandled Operations").
//
// Where the documentation is vague we take the strict reading, because fakecuda is the oracle
// memtool's tests run on and must catch every mistake the real driver might:
// - an error a call returns because of a capture invalidates every capture sequence that made it
//   an error (the unsafe call's forbidding captures, the capturing stream's, both of a merge);
// - potentially unsafe calls are cuMemAlloc/cuMemAllocPitch/cuMemAllocManaged, cuMemFree, pinned
//   host allocation, registration and their frees, every synchronous copy and memset, and queries
//   and synchronisation of streams, events and contexts;
// - cuStreamSynchronize/cuStreamQuery of a capturing stream, and cuCtxSynchronize of a context
//   with a capturing stream, "necessarily conflict" with capture: refused in every mode;
// - a capturing stream waiting on an event not recorded in its capture (recorded outside any
//   capture, or never recorded) without CU_EVENT_WAIT_EXTERNAL is CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
//   on an event of another capture under way, CUDA_ERROR_STREAM_CAPTURE_MERGE; any use of an event
//   last recorded in a capture that has ended is CUDA_ERROR_CAPTURED_EVENT;
// - cuStreamEndCapture / cuStreamBeginCapture on a stream in the wrong state is
//   CUDA_ERROR_ILLEGAL_STATE (as cuStreamUpdateCaptureDependencies documents for "not capturing");
// - cuStreamDestroy of a capturing stream is refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
#include "capture.hpp"

#include "graph.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <algorithm>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace fakecuda {

namespace detail {
std::atomic<int> g_captures{0};
}

struct Capture {
  std::uint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;          // the thread that began it
  std::shared_ptr<Stream> origin;  // where it began and must end
  Graph* graph = nullptr;          // registered; the application's if user_graph
  bool user_graph = false;         // cuStreamBeginCaptureToGraph
  bool invalidated = false;
  bool ended = false;
  std::vector<std::shared_ptr<Stream>> streams;  // every stream in the sequence, origin first
};

namespace {

// A stream in a capture sequence and the nodes its next work depends on.
struct StreamCapture {
  std::shared_ptr<Capture> capture;
  std::vector<Node*> deps;
  std::vector<CUgraphEdgeData> edges;
  // The arrays cuStreamGetCaptureInfo hands out: valid until the next call on the stream.
  std::vector<CUgraphNode> info_deps;
  std::vector<CUgraphEdgeData> info_edges;
};

struct CaptureTable {
  std::unordered_map<const Stream*, StreamCapture> streams;  // graph_mutex
  std::vector<std::shared_ptr<Capture>> captures;            // begun and not ended (graph_mutex)
  std::uint64_t next_id = 1;
};

CaptureTable& table() {
  static auto* t = new CaptureTable;  // leaked: stream workers may outlive static destruction
  return *t;
}

// The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode tls_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

StreamCapture* state_of_locked(const Stream& s) {
  auto& streams = table().streams;
  const auto it = streams.find(&s);
  return it == streams.end() ? nullptr : &it->second;
}

void invalidate_locked(Capture& c) {
  if (!c.invalidated) {
    c.invalidated = true;
    count(stats().graph_captures_invalidated);
  }
}

// Captures with a blocking stream in the legacy stream's context: the legacy stream "has an
// implicit dependency on the capturing stream(s)", so using it is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
std::vector<Capture*> implicit_conflicts_locked(const Stream& legacy) {
  std::vector<Capture*> out;
  for (const auto& c : table().captures) {
    for (const auto& s : c->streams) {
      if (s->context == legacy.context && s->blocking()) {
        out.push_back(c.get());
        break;
      }
    }
  }
  return out;
}

CUresult check_legacy_locked(const Stream& s, bool invalidate) {
  if (s.role != StreamRole::legacy) {
    return CUDA_SUCCESS;
  }
  const std::vector<Capture*> conflicts = implicit_conflicts_locked(s);
  if (conflicts.empty()) {
    return CUDA_SUCCESS;
  }
  if (invalidate) {
    for (Capture* c : conflicts) {
      invalidate_locked(*c);
    }
  }
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

void add_deps(StreamCapture& st, const std::vector<Node*>& deps, const std::vector<CUgraphEdgeData>& edges) {
  for (std::size_t i = 0; i < deps.size(); ++i) {
    if (std::find(st.deps.begin(), st.deps.end(), deps[i]) == st.deps.end()) {
      st.deps.push_back(deps[i]);
      st.edges.push_back(i < edges.size() ? edges[i] : CUgraphEdgeData{});
    }
  }
}

// Adds a node to the capture graph after the stream's dependencies; they become just the node.
CUresult record_node_locked(StreamCapture& st, NodeParams params, std::unique_ptr<Graph> child, Node*& out) {
  Capture& c = *st.capture;
  const CUresult r = add_node_locked(*c.graph, std::move(params), std::move(child), st.deps, st.edges, out);
  if (r != CUDA_SUCCESS) {
    invalidate_locked(c);
    return r;
  }
  st.deps.assign(1, out);
  st.edges.assign(1, CUgraphEdgeData{});
  count(stats().graph_captured_nodes);
  return CUDA_SUCCESS;
}

// An event record or event wait node for `e`, added as record_node_locked does.
CUresult record_event_node_locked(StreamCapture& st, CUgraphNodeType type, Event& e) {
  NodeParams params;
  params.type = type;
  params.event = reinterpret_cast<CUevent>(&e);
  Node* node = nullptr;
  return record_node_locked(st, std::move(params), nullptr, node);
}

// Where work on `s` goes, with the graph mutex held: `st` its capture (null: not capturing, the
// work runs), or the error that refuses it (a legacy stream's implicit conflict, an invalidated
// capture).
CUresult capturing_locked(const Stream& s, StreamCapture*& st) {
  st = nullptr;
  FC_TRY(check_legacy_locked(s, true));
  StreamCapture* found = state_of_locked(s);
  if (found != nullptr && found->capture->invalidated) {
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  st = found;
  return CUDA_SUCCESS;
}

// With the graph mutex held: body(st) where `s` is capturing, nothing where it is not, the error
// where capturing_locked refuses it.
template <class F>
CUresult if_capturing(const std::shared_ptr<Stream>& s, F&& body) {
  std::lock_guard<std::mutex> lock(graph_mutex());
  StreamCapture* st = nullptr;
  FC_TRY(capturing_locked(*s, st));
  return st == nullptr ? CUDA_SUCCESS : body(*st);
}

// Records a node made by make(params, child) on a capturing stream (`captured`); a node it
// cannot make invalidates the capture.
template <class Make>
CUresult capture_node(const std::shared_ptr<Stream>& s, Make&& make, bool& captured) {
  captured = false;
  return if_capturing(s, [&](StreamCapture& st) {
    NodeParams params;
    std::unique_ptr<Graph> child;
    const CUresult r = make(params, child);
    if (r != CUDA_SUCCESS) {
      invalidate_locked(*st.capture);
      return r;
    }
    Node* node = nullptr;
    FC_TRY(record_node_locked(st, std::move(params), std::move(child), node));
    captured = true;
    return CUDA_SUCCESS;
  });
}

// Ends a capture sequence: every stream leaves capture, the graph stops being a capture graph.
void end_locked(const std::shared_ptr<Capture>& c) {
  CaptureTable& t = table();
  for (const auto& s : c->streams) {
    t.streams.erase(s.get());
  }
  c->ended = true;
  --c->graph->capturing;
  t.captures.erase(std::find(t.captures.begin(), t.captures.end(), c));
  detail::g_captures.fetch_sub(1, std::memory_order_relaxed);
}

// Every node some other stream of the capture still depends on must be joined into the origin
// stream: an ancestor of (or one of) the origin's dependencies.
bool joined_locked(const Capture& c) {
  const StreamCapture* origin = state_of_locked(*c.origin);
  std::unordered_set<const Node*> reach;
  std::vector<const Node*> todo(origin->deps.begin(), origin->deps.end());
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (reach.insert(n).second) {
      todo.insert(todo.end(), n->deps.begin(), n->deps.end());
    }
  }
  for (const auto& s : c.streams) {
    for (const Node* d : state_of_locked(*s)->deps) {
      if (reach.count(d) == 0) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

// ---- work on capturing streams -------------------------------------------------------------

CUresult capture_work(const std::shared_ptr<Stream>& s, const std::function<CUresult(NodeParams&)>& make,
                      bool& captured) {
  return capture_node(
      s, [&](NodeParams& params, std::unique_ptr<Graph>&) { return make(params); }, captured);
}

CUresult capture_child_graph(const std::shared_ptr<Stream>& s,
                             const std::function<CUresult(std::unique_ptr<Graph>&)>& make, bool& captured) {
  return capture_node(
      s,
      [&](NodeParams& params, std::unique_ptr<Graph>& child) {
        params.type = CU_GRAPH_NODE_TYPE_GRAPH;
        return make(child);
      },
      captured);
}

CUresult capture_refuse(const std::shared_ptr<Stream>& s) {
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  return if_capturing(s, [](StreamCapture& st) {
    invalidate_locked(*st.capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  });
}

// ---- calls that capture forbids ------------------------------------------------------------

// cuThreadExchangeStreamCaptureMode: in GLOBAL mode a thread may not make potentially unsafe
// calls while it has a non-relaxed capture under way or any other thread has a GLOBAL one; in
// THREAD_LOCAL mode only its own non-relaxed captures count; RELAXED threads are never stopped.
CUresult capture_check_unsafe_call() {
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  const CUstreamCaptureMode mode = tls_mode;
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_SUCCESS;
  }
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(graph_mutex());
  bool forbidden = false;
  for (const auto& c : table().captures) {
    const bool own = c->thread == me && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool other =
        mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->thread != me && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || other) {
      invalidate_locked(*c);
      forbidden = true;
    }
  }
  return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult capture_check_stream_sync(const std::shared_ptr<Stream>& s) {
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(graph_mutex());
    FC_TRY(check_legacy_locked(*s, true));
    if (StreamCapture* st = state_of_locked(*s)) {
      // "It is invalid to synchronize or query the execution status of a stream which is being
      // captured": not work scheduled for execution. Refused in every mode.
      invalidate_locked(*st->capture);
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return capture_check_unsafe_call();
}

CUresult capture_check_context_sync(const Context& ctx) {
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(graph_mutex());
    bool conflict = false;
    for (const auto& c : table().captures) {
      for (const auto& s : c->streams) {
        if (s->context == &ctx) {
          invalidate_locked(*c);
          conflict = true;
          break;
        }
      }
    }
    if (conflict) {
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // a broader handle encompassing a capture
    }
  }
  return capture_check_unsafe_call();
}

CUresult capture_check_event(Event& e, bool potentially_unsafe) {
  std::shared_ptr<CapturedRecord> record;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    record = e.captured;
  }
  if (record) {
    // Even RELAXED threads may not query an event last recorded in a capture.
    if (std::shared_ptr<Capture> c = record->capture.lock()) {
      std::lock_guard<std::mutex> lock(graph_mutex());
      if (!c->ended) {
        invalidate_locked(*c);
      }
    }
    return CUDA_ERROR_CAPTURED_EVENT;
  }
  return potentially_unsafe ? capture_check_unsafe_call() : CUDA_SUCCESS;
}

CUresult capture_check_stream_destroy(const std::shared_ptr<Stream>& s) {
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  if (StreamCapture* st = state_of_locked(*s)) {
    invalidate_locked(*st->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

// ---- events: record, wait, fork and join ---------------------------------------------------

CUresult capture_event_record(const std::shared_ptr<Stream>& s, Event& e, unsigned flags, bool& handled) {
  handled = false;
  if (!captures_exist()) {
    return CUDA_SUCCESS;
  }
  return if_capturing(s, [&](StreamCapture& st) {
    if ((flags & CU_EVENT_RECORD_EXTERNAL) != 0) {
      // "Event is captured in the graph as an external event node".
      FC_TRY(record_event_node_locked(st, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e));
    }
    // The event now stands for the stream's captured work so far: a wait on it forks or joins.
    auto record = std::make_shared<CapturedRecord>();
    record->capture = st.capture;
    record->deps = st.deps;
    record->edges = st.edges;
    {
      std::lock_guard<std::mutex> event_lock(e.mutex);
      e.captured = std::move(record);
    }
    handled = true;
    return CUDA_SUCCESS;
  });
}

CUresult capture_wait_event(const std::shared_ptr<Stream>& s, Event& e, unsigned flags, bool& handled) {
  handled = false;
  std::shared_ptr<CapturedRecord> record;
  {
    std::lock_guard<std::mutex> event_lock(e.mutex);
    record = e.captured;
  }
  if (!captures_exist() && !record) {
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  StreamCapture* st = state_of_locked(*s);
  if (record) {
    std::shared_ptr<Capture> c = record->capture.lock();
    if (!c || c->ended) {
      if (st != nullptr) {
        invalidate_locked(*st->capture);
      }
      return CUDA_ERROR_CAPTURED_EVENT;  // the capture it was recorded in is over
    }
    if (s->role == StreamRole::legacy) {
      invalidate_locked(*c);
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;  // the legacy stream cannot join a capture
    }
    if (st != nullptr && st->capture != c) {
      invalidate_locked(*st->capture);
      invalidate_locked(*c);
      return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    if (c->invalidated) {
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (st == nullptr) {
      // Fork: the stream joins the capture, its next work depending on the event's nodes.
      StreamCapture joined;
      joined.capture = c;
      joined.deps = record->deps;
      joined.edges = record->edges;
      table().streams.emplace(s.get(), std::move(joined));
      c->streams.push_back(s);
    } else {
      add_deps(*st, record->deps, record->edges);  // join
    }
    handled = true;
    return CUDA_SUCCESS;
  }
  FC_TRY(capturing_locked(*s, st));
  if (st == nullptr) {
    return CUDA_SUCCESS;  // an ordinary wait
  }
  if ((flags & CU_EVENT_WAIT_EXTERNAL) == 0) {
    // "It is invalid to wait on a non-captured event from a stream which is being captured
    // without specifying the cudaEventWaitExternal flag."
    invalidate_locked(*st->capture);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  FC_TRY(record_event_node_locked(*st, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e));
  handled = true;
  return CUDA_SUCCESS;
}

// ---- the capture entry points --------------------------------------------------------------

CUresult capture_begin(const std::shared_ptr<Stream>& s, CUstreamCaptureMode mode, CUgraph into,
                       const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t num_deps) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (s->role == StreamRole::legacy) {
    return CUDA_ERROR_INVALID_VALUE;  // "Capture may not be initiated if stream is CU_STREAM_LEGACY"
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  if (state_of_locked(*s) != nullptr) {
    return CUDA_ERROR_ILLEGAL_STATE;  // "only ... if the stream is not already in capture mode"
  }
  Graph* graph = nullptr;
  std::vector<Node*> initial;
  if (into != nullptr) {
    graph = find_graph_locked(into);
    if (graph == nullptr || graph->owner != nullptr || is_capture_graph_locked(*graph)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    FC_TRY(check_dependencies_locked(*graph, deps, edges, num_deps, initial));
  } else {
    graph = create_graph_locked();
  }
  auto c = std::make_shared<Capture>();
  CaptureTable& t = table();
  c->id = t.next_id++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->graph = graph;
  c->user_graph = into != nullptr;
  c->streams.push_back(s);
  ++graph->capturing;
  StreamCapture st;
  st.capture = c;
  st.deps = initial;
  if (edges != nullptr) {
    st.edges.assign(edges, edges + num_deps);
  } else {
    st.edges.assign(initial.size(), CUgraphEdgeData{});
  }
  t.streams.emplace(s.get(), std::move(st));
  t.captures.push_back(std::move(c));
  detail::g_captures.fetch_add(1, std::memory_order_relaxed);
  count(stats().graph_captures);
  return CUDA_SUCCESS;
}

CUresult capture_end(const std::shared_ptr<Stream>& s, CUgraph* graph_out) {
  if (graph_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  StreamCapture* st = state_of_locked(*s);
  if (st == nullptr) {
    return CUDA_ERROR_ILLEGAL_STATE;  // not capturing
  }
  const std::shared_ptr<Capture> c = st->capture;
  if (c->origin != s) {
    invalidate_locked(*c);
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;  // "the capture was not initiated in this stream"
  }
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id()) {
    invalidate_locked(*c);
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  CUresult result = CUDA_SUCCESS;
  if (c->invalidated) {
    result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else if (!joined_locked(*c)) {
    invalidate_locked(*c);
    result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  }
  end_locked(c);
  if (result != CUDA_SUCCESS) {
    if (!c->user_graph) {
      destroy_graph_locked(c->graph);  // "a NULL graph will be returned"
    }
    *graph_out = nullptr;
    return result;
  }
  *graph_out = reinterpret_cast<CUgraph>(c->graph);
  return CUDA_SUCCESS;
}

CUresult capture_query(const std::shared_ptr<Stream>& s, const CaptureQuery& q) {
  if (q.status == nullptr || (q.edges != nullptr && q.deps == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!captures_exist()) {
    *q.status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  // On the legacy stream beside a capturing blocking stream: an error, but "the blocking stream
  // capture is not invalidated".
  FC_TRY(check_legacy_locked(*s, false));
  StreamCapture* st = state_of_locked(*s);
  if (st == nullptr) {
    *q.status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  const Capture& c = *st->capture;
  if (c.invalidated) {
    *q.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_SUCCESS;
  }
  if (q.deps != nullptr && q.edges == nullptr &&
      std::any_of(st->edges.begin(), st->edges.end(), [](const CUgraphEdgeData& e) { return !edge_is_default(e); })) {
    return CUDA_ERROR_LOSSY_QUERY;  // edge data the caller's generation cannot receive
  }
  *q.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (q.id != nullptr) {
    *q.id = c.id;
  }
  if (q.graph != nullptr) {
    *q.graph = reinterpret_cast<CUgraph>(c.graph);
  }
  st->info_deps.clear();
  for (Node* n : st->deps) {
    st->info_deps.push_back(reinterpret_cast<CUgraphNode>(n));
  }
  st->info_edges = st->edges;
  if (q.deps != nullptr) {
    *q.deps = st->info_deps.empty() ? nullptr : st->info_deps.data();
  }
  if (q.edges != nullptr) {
    *q.edges = st->info_edges.empty() ? nullptr : st->info_edges.data();
  }
  if (q.num_deps != nullptr) {
    *q.num_deps = st->info_deps.size();
  }
  return CUDA_SUCCESS;
}

CUresult capture_update_dependencies(const std::shared_ptr<Stream>& s, const CUgraphNode* deps,
                                     const CUgraphEdgeData* edges, std::size_t n, unsigned flags) {
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(graph_mutex());
  StreamCapture* st = state_of_locked(*s);
  if (st == nullptr) {
    return CUDA_ERROR_ILLEGAL_STATE;  // documented: the stream is not capturing
  }
  if (st->capture->invalidated) {
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  std::vector<Node*> nodes;
  FC_TRY(check_dependencies_locked(*st->capture->graph, deps, edges, n, nodes));
  std::vector<CUgraphEdgeData> data = edges != nullptr ? std::vector<CUgraphEdgeData>(edges, edges + n)
                                                       : std::vector<CUgraphEdgeData>(n, CUgraphEdgeData{});
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    st->deps = std::move(nodes);
    st->edges = std::move(data);
  } else {
    add_deps(*st, nodes, data);
  }
  return CUDA_SUCCESS;
}

CUresult exchange_capture_mode(CUstreamCaptureMode* mode) {
  if (mode == nullptr || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                          *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::swap(*mode, tls_mode);
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
