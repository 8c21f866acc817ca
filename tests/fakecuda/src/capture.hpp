// Stream capture (cuStreamBeginCapture ... cuStreamEndCapture) and the rules it imposes on the
// rest of the driver. Every entry point that puts work into a stream asks capture_work first: on
// a capturing stream the work becomes a graph node with the stream's current dependencies instead
// of running. Calls the driver calls "potentially unsafe" during capture ask
// capture_check_unsafe_call; synchronisation and queries of capturing streams, captured events and
// the legacy stream beside a capturing blocking stream have their own checks. A refused call
// invalidates the capture sequences concerned, as the driver does ("When an invalid operation is
// attempted during stream capture, any associated capture graphs are invalidated"), so the later
// cuStreamEndCapture returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. capture.cpp says which reading
// of the documentation each rule follows.
#pragma once

#include "cuda_abi.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace fakecuda {

class Stream;
struct Context;
struct Event;
struct Graph;
struct Node;
struct NodeParams;
struct Capture;

// An event recorded in a capturing stream: the nodes later work that waits on it depends on.
struct CapturedRecord {
  std::weak_ptr<Capture> capture;
  std::vector<Node*> deps;
  std::vector<CUgraphEdgeData> edges;
};

namespace detail {
extern std::atomic<int> g_captures;  // capture sequences begun and not ended
}

// One relaxed load: is any capture sequence under way? Every hook is skipped when not.
inline bool captures_exist() noexcept { return detail::g_captures.load(std::memory_order_relaxed) > 0; }

// Work for stream `s`: on a capturing stream `make` builds the node's parameters and the work is
// recorded (captured = true); otherwise it runs as usual. Errors: the capture is invalidated
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED from then on), `make` failed, or `s` is the legacy stream
// while a blocking stream of its context captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
CUresult capture_work(const std::shared_ptr<Stream>& s, const std::function<CUresult(NodeParams&)>& make,
                      bool& captured);
// The same for a node that owns a child graph (a graph launched into a capturing stream).
CUresult capture_child_graph(const std::shared_ptr<Stream>& s,
                             const std::function<CUresult(std::unique_ptr<Graph>&)>& make, bool& captured);
// Work the driver does not capture (cuStreamAddCallback, prefetches, uploads):
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED on a capturing stream.
CUresult capture_refuse(const std::shared_ptr<Stream>& s);

// A potentially unsafe call (cuMemAlloc, cuMemFree, synchronous copies and memsets, pinned host
// allocation, queries and synchronisation): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the calling
// thread's capture mode and the captures under way forbid it (cuThreadExchangeStreamCaptureMode).
CUresult capture_check_unsafe_call();
CUresult capture_check_stream_sync(const std::shared_ptr<Stream>& s);  // cuStreamSynchronize/Query
CUresult capture_check_context_sync(const Context& ctx);               // cuCtxSynchronize
// cuEventQuery/Synchronize (potentially unsafe) and cuEventElapsedTime (not): an event last
// recorded in a capture is CUDA_ERROR_CAPTURED_EVENT in every mode.
CUresult capture_check_event(Event& e, bool potentially_unsafe);
CUresult capture_check_stream_destroy(const std::shared_ptr<Stream>& s);

// cuEventRecord[WithFlags] and cuStreamWaitEvent on capturing streams (and waits that fork a
// capture into another stream). handled = true: nothing is to be enqueued.
CUresult capture_event_record(const std::shared_ptr<Stream>& s, Event& e, unsigned flags, bool& handled);
CUresult capture_wait_event(const std::shared_ptr<Stream>& s, Event& e, unsigned flags, bool& handled);

// The capture entry points (api_capture.cpp).
CUresult capture_begin(const std::shared_ptr<Stream>& s, CUstreamCaptureMode mode, CUgraph into,
                       const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t num_deps);
CUresult capture_end(const std::shared_ptr<Stream>& s, CUgraph* graph_out);
struct CaptureQuery {
  CUstreamCaptureStatus* status = nullptr;
  cuuint64_t* id = nullptr;
  CUgraph* graph = nullptr;
  const CUgraphNode** deps = nullptr;
  const CUgraphEdgeData** edges = nullptr;
  std::size_t* num_deps = nullptr;
};
CUresult capture_query(const std::shared_ptr<Stream>& s, const CaptureQuery& q);
CUresult capture_update_dependencies(const std::shared_ptr<Stream>& s, const CUgraphNode* deps,
                                     const CUgraphEdgeData* edges, std::size_t n, unsigned flags);
CUresult exchange_capture_mode(CUstreamCaptureMode* mode);

}  // namespace fakecuda
