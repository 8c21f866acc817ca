// The handlers of stream capture and executable graphs (issue 32; see handlers.hpp): the capture
// tracker learns where captures begin and end; the recorder reads an executable graph's nodes
// when it is instantiated or updated, after the real call succeeded, so that each launch of it
// is one work item with its buffers.
#include "memtool/interpose/handlers.hpp"

namespace memtool::interpose {
namespace {

std::uint64_t u64(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

template <class F, class... Args>
CUresult begin_capture(const Call<F>& call, CUstream hStream, int mode, Args... args) {
  CaptureTracker* captures = call.recorder.captures();
  if (captures == nullptr) return call.real(args...);
  const std::uint64_t stream = recorded_stream(hStream, call.variant);
  captures->before_begin(stream);
  const CUresult result = call.real(args...);
  captures->after_begin(stream, result == CUDA_SUCCESS);
  if (result == CUDA_SUCCESS) call.recorder.on_capture_begin(stream, mode);
  return result;
}

// The new executable graph's memory is the driver's at its first upload or launch: the strategies
// make room for it now (the figure counts it until then).
template <class F, class... Args>
CUresult instantiate(const Call<F>& call, CUgraphExec* exec, CUgraph graph, Args... args) {
  const CUresult result = call.real(args...);
  if (result == CUDA_SUCCESS && exec != nullptr && *exec != nullptr) {
    call.recorder.on_graph_exec(u64(*exec), graph);
    call.runtimes.current().set_graph_memory(call.recorder.graph_memory_bytes(false));
  }
  return result;
}

}  // namespace

// --- stream capture ---------------------------------------------------------------------------

CUresult handle_cuStreamBeginCapture(const Call<fn::cuStreamBeginCapture>& call, CUstream hStream) noexcept {
  // The first generation has no mode: global (cuda.h's default since 10.1).
  return begin_capture(call, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, hStream);
}

CUresult handle_cuStreamBeginCapture_v2(const Call<fn::cuStreamBeginCapture_v2>& call, CUstream hStream,
                                        CUstreamCaptureMode mode) noexcept {
  return begin_capture(call, hStream, mode, hStream, mode);
}

CUresult handle_cuStreamBeginCaptureToGraph(const Call<fn::cuStreamBeginCaptureToGraph>& call, CUstream hStream,
                                            CUgraph hGraph, const CUgraphNode* dependencies,
                                            const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                            CUstreamCaptureMode mode) noexcept {
  return begin_capture(call, hStream, mode, hStream, hGraph, dependencies, dependencyData, numDependencies, mode);
}

CUresult handle_cuStreamEndCapture(const Call<fn::cuStreamEndCapture>& call, CUstream hStream,
                                   CUgraph* phGraph) noexcept {
  const CUresult result = call.real(hStream, phGraph);
  const std::uint64_t stream = recorded_stream(hStream, call.variant);
  if (CaptureTracker* captures = call.recorder.captures()) captures->after_end(stream);
  call.recorder.on_capture_end(stream, static_cast<int>(result));
  return result;
}

// --- executable graphs ------------------------------------------------------------------------

CUresult handle_cuGraphInstantiate(const Call<fn::cuGraphInstantiate>& call, CUgraphExec* phGraphExec, CUgraph hGraph,
                                   CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize) noexcept {
  return instantiate(call, phGraphExec, hGraph, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult handle_cuGraphInstantiate_v2(const Call<fn::cuGraphInstantiate_v2>& call, CUgraphExec* phGraphExec,
                                      CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                                      size_t bufferSize) noexcept {
  return instantiate(call, phGraphExec, hGraph, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult handle_cuGraphInstantiateWithFlags(const Call<fn::cuGraphInstantiateWithFlags>& call, CUgraphExec* phGraphExec,
                                            CUgraph hGraph, unsigned long long flags) noexcept {
  return instantiate(call, phGraphExec, hGraph, phGraphExec, hGraph, flags);
}

CUresult handle_cuGraphInstantiateWithParams(const Call<fn::cuGraphInstantiateWithParams>& call,
                                             CUgraphExec* phGraphExec, CUgraph hGraph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) noexcept {
  return instantiate(call, phGraphExec, hGraph, phGraphExec, hGraph, instantiateParams);
}

// An update that succeeded leaves the executable graph with the new graph's parameters (cuda.h:
// "the update ... is applied"); one that failed leaves it as it was.
CUresult handle_cuGraphExecUpdate(const Call<fn::cuGraphExecUpdate>& call, CUgraphExec hGraphExec, CUgraph hGraph,
                                  CUgraphNode* hErrorNode_out, CUgraphExecUpdateResult* updateResult_out) noexcept {
  const CUresult result = call.real(hGraphExec, hGraph, hErrorNode_out, updateResult_out);
  if (result == CUDA_SUCCESS) call.recorder.on_graph_exec(u64(hGraphExec), hGraph);
  return result;
}

CUresult handle_cuGraphExecUpdate_v2(const Call<fn::cuGraphExecUpdate_v2>& call, CUgraphExec hGraphExec, CUgraph hGraph,
                                     CUgraphExecUpdateResultInfo* resultInfo) noexcept {
  const CUresult result = call.real(hGraphExec, hGraph, resultInfo);
  if (result == CUDA_SUCCESS) call.recorder.on_graph_exec(u64(hGraphExec), hGraph);
  return result;
}

CUresult handle_cuGraphExecKernelNodeSetParams(const Call<fn::cuGraphExecKernelNodeSetParams>& call,
                                               CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, nodeParams);
  if (result == CUDA_SUCCESS && nodeParams != nullptr) {
    call.recorder.on_graph_exec_kernel(u64(hGraphExec), hNode, nodeParams->func, nodeParams->kernelParams,
                                       nodeParams->extra);
  }
  return result;
}

CUresult handle_cuGraphExecKernelNodeSetParams_v2(const Call<fn::cuGraphExecKernelNodeSetParams_v2>& call,
                                                  CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS* nodeParams) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, nodeParams);
  if (result == CUDA_SUCCESS && nodeParams != nullptr) {
    const CUfunction function =
        nodeParams->func != nullptr ? nodeParams->func : reinterpret_cast<CUfunction>(nodeParams->kern);
    call.recorder.on_graph_exec_kernel(u64(hGraphExec), hNode, function, nodeParams->kernelParams, nodeParams->extra);
  }
  return result;
}

CUresult handle_cuGraphExecMemcpyNodeSetParams(const Call<fn::cuGraphExecMemcpyNodeSetParams>& call,
                                               CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_MEMCPY3D* copyParams, CUcontext ctx) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, copyParams, ctx);
  if (result == CUDA_SUCCESS && copyParams != nullptr) {
    call.recorder.on_graph_exec_memcpy(u64(hGraphExec), hNode, *copyParams);
  }
  return result;
}

CUresult handle_cuGraphExecMemsetNodeSetParams(const Call<fn::cuGraphExecMemsetNodeSetParams>& call,
                                               CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, memsetParams, ctx);
  if (result == CUDA_SUCCESS && memsetParams != nullptr) {
    call.recorder.on_graph_exec_memset(u64(hGraphExec), hNode, memsetParams->dst);
  }
  return result;
}

CUresult handle_cuGraphExecChildGraphNodeSetParams(const Call<fn::cuGraphExecChildGraphNodeSetParams>& call,
                                                   CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   CUgraph childGraph) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, childGraph);
  if (result == CUDA_SUCCESS) call.recorder.on_graph_exec_child(u64(hGraphExec), hNode, childGraph);
  return result;
}

// The generic form: the node's type says which parameters it carries. Types that touch no
// memory keep what was known of the node; types memtool cannot read make it opaque.
CUresult handle_cuGraphExecNodeSetParams(const Call<fn::cuGraphExecNodeSetParams>& call, CUgraphExec hGraphExec,
                                         CUgraphNode hNode, CUgraphNodeParams* nodeParams) noexcept {
  const CUresult result = call.real(hGraphExec, hNode, nodeParams);
  if (result != CUDA_SUCCESS || nodeParams == nullptr) return result;
  const std::uint64_t exec = u64(hGraphExec);
  switch (nodeParams->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS_v3& k = nodeParams->kernel;
      const CUfunction function = k.func != nullptr ? k.func : reinterpret_cast<CUfunction>(k.kern);
      call.recorder.on_graph_exec_kernel(exec, hNode, function, k.kernelParams, k.extra);
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      call.recorder.on_graph_exec_memcpy(exec, hNode, nodeParams->memcpy.copyParams);
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      call.recorder.on_graph_exec_memset(exec, hNode, nodeParams->memset.dst);
      break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      call.recorder.on_graph_exec_child(exec, hNode, nodeParams->graph.graph);
      break;
    case CU_GRAPH_NODE_TYPE_HOST:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      break;
    default:
      call.recorder.on_graph_exec_opaque_node(exec, hNode);
      break;
  }
  return result;
}

CUresult handle_cuGraphUpload(const Call<fn::cuGraphUpload>& call, CUgraphExec hGraphExec, CUstream hStream) noexcept {
  const bool first = call.recorder.on_graph_upload(u64(hGraphExec));
  const CUresult result = call.real(hGraphExec, hStream);
  if (first) call.runtimes.current().set_graph_memory(call.recorder.graph_memory_bytes(true));
  return result;
}

// Forgotten before the real call (the handle may be reused at once; a destroy that fails leaves
// an executable graph memtool no longer knows: opaque, safe). A launch still pending was told
// its buffers when it was issued, and runs to its end whatever happens to the handle.
CUresult handle_cuGraphExecDestroy(const Call<fn::cuGraphExecDestroy>& call, CUgraphExec hGraphExec) noexcept {
  call.recorder.on_graph_exec_destroy(u64(hGraphExec));
  return call.real(hGraphExec);
}

}  // namespace memtool::interpose
