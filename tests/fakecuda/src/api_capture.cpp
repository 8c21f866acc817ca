// Entry points: stream capture, every generation the driver exports (cuStreamBeginCapture without
// and with a mode, cuStreamGetCaptureInfo, _v2 and _v3, cuStreamUpdateCaptureDependencies and _v2)
// and their per-thread-stream (_ptsz) twins, where a NULL stream is the calling thread's default
// stream instead of the legacy one. The rules live in capture.cpp.
#include "capture.hpp"
#include "driver.hpp"
#include "graph_abi.hpp"
#include "streams.hpp"

using namespace fakecuda;

namespace {

template <class F>
CUresult on_stream(CUstream h, bool per_thread, F&& body) {
  FC_TRY(check_init());
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    return body(s);
  });
}

CUresult begin(CUstream h, CUstreamCaptureMode mode, bool per_thread) {
  return on_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    return capture_begin(s, mode, nullptr, nullptr, nullptr, 0);
  });
}

CUresult begin_to_graph(CUstream h, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t n,
                        CUstreamCaptureMode mode, bool per_thread) {
  if (graph == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return on_stream(h, per_thread,
                   [&](const std::shared_ptr<Stream>& s) { return capture_begin(s, mode, graph, deps, edges, n); });
}

CUresult end(CUstream h, CUgraph* graph, bool per_thread) {
  return on_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) { return capture_end(s, graph); });
}

CUresult query(CUstream h, const CaptureQuery& q, bool per_thread) {
  return on_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) { return capture_query(s, q); });
}

CUresult update(CUstream h, const CUgraphNode* deps, const CUgraphEdgeData* edges, std::size_t n, unsigned flags,
                bool per_thread) {
  return on_stream(h, per_thread, [&](const std::shared_ptr<Stream>& s) {
    return capture_update_dependencies(s, deps, edges, n, flags);
  });
}

CaptureQuery query_of(CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph = nullptr,
                      const CUgraphNode** deps = nullptr, const CUgraphEdgeData** edges = nullptr,
                      std::size_t* num = nullptr) {
  CaptureQuery q;
  q.status = status;
  q.id = id;
  q.graph = graph;
  q.deps = deps;
  q.edges = edges;
  q.num_deps = num;
  return q;
}

}  // namespace

// The CUDA 10.0 form had no mode: the default, global, applies.
FAKECUDA_API CUresult cuStreamBeginCapture(CUstream hStream) {
  return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}
FAKECUDA_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}
FAKECUDA_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin(hStream, mode, false);
}
FAKECUDA_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return begin(hStream, mode, true);
}
FAKECUDA_API CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                                  const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                  CUstreamCaptureMode mode) {
  return begin_to_graph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode, false);
}
FAKECUDA_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                       const CUgraphNode* dependencies,
                                                       const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                       CUstreamCaptureMode mode) {
  return begin_to_graph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode, true);
}

FAKECUDA_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  FC_TRY(check_init());
  return exchange_capture_mode(mode);
}

FAKECUDA_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) { return end(hStream, phGraph, false); }
FAKECUDA_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return end(hStream, phGraph, true);
}

FAKECUDA_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return query(hStream, query_of(captureStatus, nullptr), false);
}
FAKECUDA_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return query(hStream, query_of(captureStatus, nullptr), true);
}

FAKECUDA_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                             cuuint64_t* id_out) {
  return query(hStream, query_of(captureStatus_out, id_out), false);
}
FAKECUDA_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                  cuuint64_t* id_out) {
  return query(hStream, query_of(captureStatus_out, id_out), true);
}
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                cuuint64_t* id_out, CUgraph* graph_out,
                                                const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return query(hStream, query_of(captureStatus_out, id_out, graph_out, dependencies_out, nullptr, numDependencies_out),
               false);
}
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     size_t* numDependencies_out) {
  return query(hStream, query_of(captureStatus_out, id_out, graph_out, dependencies_out, nullptr, numDependencies_out),
               true);
}
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                cuuint64_t* id_out, CUgraph* graph_out,
                                                const CUgraphNode** dependencies_out,
                                                const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return query(hStream,
               query_of(captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out),
               false);
}
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     const CUgraphEdgeData** edgeData_out,
                                                     size_t* numDependencies_out) {
  return query(hStream,
               query_of(captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out),
               true);
}

FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                                        size_t numDependencies, unsigned int flags) {
  return update(hStream, dependencies, nullptr, numDependencies, flags, false);
}
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                             size_t numDependencies, unsigned int flags) {
  return update(hStream, dependencies, nullptr, numDependencies, flags, true);
}
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                                           const CUgraphEdgeData* dependencyData,
                                                           size_t numDependencies, unsigned int flags) {
  return update(hStream, dependencies, dependencyData, numDependencies, flags, false);
}
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                                const CUgraphEdgeData* dependencyData,
                                                                size_t numDependencies, unsigned int flags) {
  return update(hStream, dependencies, dependencyData, numDependencies, flags, true);
}
