/* The stream capture and graph entry points cuda.h shows only under their newest names (see
 * cuda_abi.hpp): older generations (cuStreamBeginCapture without a mode, cuStreamGetCaptureInfo
 * and _v2, the graph calls before CUgraphEdgeData and CUDA_KERNEL_NODE_PARAMS_v2, the
 * five-argument cuGraphInstantiate) and the per-thread-stream (_ptsz) twins, declared here with
 * their exact ABI. cudaTypedefs.h's PFN_*_v<version> typedefs give the versions in proc_table.def.
 */
#ifndef FAKECUDA_GRAPH_ABI_HPP
#define FAKECUDA_GRAPH_ABI_HPP

#include "cuda_abi.hpp"

FAKECUDA_API CUresult cuStreamBeginCapture(CUstream hStream);
FAKECUDA_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
FAKECUDA_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
FAKECUDA_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                       const CUgraphNode* dependencies,
                                                       const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                       CUstreamCaptureMode mode);
FAKECUDA_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
FAKECUDA_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);
FAKECUDA_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                             cuuint64_t* id_out);
FAKECUDA_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                  cuuint64_t* id_out);
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                cuuint64_t* id_out, CUgraph* graph_out,
                                                const CUgraphNode** dependencies_out, size_t* numDependencies_out);
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out, size_t* numDependencies_out);
FAKECUDA_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out);
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                                        size_t numDependencies, unsigned int flags);
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                             size_t numDependencies, unsigned int flags);
FAKECUDA_API CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                                const CUgraphEdgeData* dependencyData,
                                                                size_t numDependencies, unsigned int flags);

FAKECUDA_API CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
FAKECUDA_API CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
FAKECUDA_API CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
FAKECUDA_API CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
FAKECUDA_API CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                         char* logBuffer, size_t bufferSize);
FAKECUDA_API CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                            char* logBuffer, size_t bufferSize);
FAKECUDA_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
FAKECUDA_API CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                                        CUgraphExecUpdateResult* updateResult_out);
FAKECUDA_API CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges);
FAKECUDA_API CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies);
FAKECUDA_API CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                   size_t* numDependentNodes);
FAKECUDA_API CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                             size_t numDependencies);
FAKECUDA_API CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                size_t numDependencies);
FAKECUDA_API CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies, CUgraphNodeParams* nodeParams);
FAKECUDA_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);

#endif
