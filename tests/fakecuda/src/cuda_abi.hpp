/* The exact driver ABI fakecuda implements, in one place.
 *
 * cuda.h #defines many API names to their newest versioned symbol (cuMemAlloc -> cuMemAlloc_v2,
 * cuMemAdvise -> cuMemAdvise_v2, cuLaunchKernel -> cuLaunchKernel_ptsz under per-thread default
 * stream). The real libcuda exports every generation side by side, and so do we. To define each
 * one under its own ABI name we include cuda.h for types and the newest prototypes, then drop the
 * renaming macros, and declare here the older generations and the _ptsz/_ptds twins cuda.h only
 * shows the driver itself. Every fakecuda source writes exported names exactly as exported.
 */
#ifndef FAKECUDA_CUDA_ABI_HPP
#define FAKECUDA_CUDA_ABI_HPP

#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) || defined(__CUDA_API_VERSION_INTERNAL)
#error "fakecuda defines both stream flavours explicitly; build it without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

// Deprecated entry points are still exported by the driver, so by us.
#ifndef CUDA_ENABLE_DEPRECATED
#define CUDA_ENABLE_DEPRECATED
#endif
#include <cuda.h>

#undef cuArray3DCreate
#undef cuArray3DGetDescriptor
#undef cuArrayCreate
#undef cuArrayGetDescriptor
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceTotalMem
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuEventRecord
#undef cuEventRecordWithFlags
#undef cuGetProcAddress
#undef cuGraphAddDependencies
#undef cuGraphAddKernelNode
#undef cuGraphAddNode
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphExecUpdate
#undef cuGraphGetEdges
#undef cuGraphInstantiate
#undef cuGraphInstantiateWithParams
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphLaunch
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphRemoveDependencies
#undef cuGraphUpload
#undef cuGraphicsMapResources
#undef cuGraphicsResourceGetMappedPointer
#undef cuGraphicsResourceSetMapFlags
#undef cuGraphicsUnmapResources
#undef cuIpcOpenMemHandle
#undef cuLaunchCooperativeKernel
#undef cuLaunchHostFunc
#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLinkAddData
#undef cuLinkAddFile
#undef cuLinkCreate
#undef cuMemAdvise
#undef cuMemAlloc
#undef cuMemAllocAsync
#undef cuMemAllocFromPoolAsync
#undef cuMemAllocHost
#undef cuMemAllocPitch
#undef cuMemBatchDecompressAsync
#undef cuMemDiscardAndPrefetchBatchAsync
#undef cuMemDiscardBatchAsync
#undef cuMemFree
#undef cuMemFreeAsync
#undef cuMemGetAddressRange
#undef cuMemGetInfo
#undef cuMemHostGetDevicePointer
#undef cuMemHostRegister
#undef cuMemMapArrayAsync
#undef cuMemPrefetchAsync
#undef cuMemPrefetchBatchAsync
#undef cuMemcpy
#undef cuMemcpy2D
#undef cuMemcpy2DAsync
#undef cuMemcpy2DUnaligned
#undef cuMemcpy3D
#undef cuMemcpy3DAsync
#undef cuMemcpy3DBatchAsync
#undef cuMemcpy3DPeer
#undef cuMemcpy3DPeerAsync
#undef cuMemcpyAsync
#undef cuMemcpyAtoA
#undef cuMemcpyAtoD
#undef cuMemcpyAtoH
#undef cuMemcpyAtoHAsync
#undef cuMemcpyBatchAsync
#undef cuMemcpyDtoA
#undef cuMemcpyDtoD
#undef cuMemcpyDtoDAsync
#undef cuMemcpyDtoH
#undef cuMemcpyDtoHAsync
#undef cuMemcpyHtoA
#undef cuMemcpyHtoAAsync
#undef cuMemcpyHtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyPeer
#undef cuMemcpyPeerAsync
#undef cuMemsetD16
#undef cuMemsetD16Async
#undef cuMemsetD2D16
#undef cuMemsetD2D16Async
#undef cuMemsetD2D32
#undef cuMemsetD2D32Async
#undef cuMemsetD2D8
#undef cuMemsetD2D8Async
#undef cuMemsetD32
#undef cuMemsetD32Async
#undef cuMemsetD8
#undef cuMemsetD8Async
#undef cuModuleGetGlobal
#undef cuSignalExternalSemaphoresAsync
#undef cuStreamAddCallback
#undef cuStreamAttachMemAsync
#undef cuStreamBatchMemOp
#undef cuStreamBeginCapture
#undef cuStreamBeginCaptureToGraph
#undef cuStreamCopyAttributes
#undef cuStreamDestroy
#undef cuStreamEndCapture
#undef cuStreamGetAttribute
#undef cuStreamGetCaptureInfo
#undef cuStreamGetCtx
#undef cuStreamGetCtx_v2
#undef cuStreamGetDevice
#undef cuStreamGetFlags
#undef cuStreamGetId
#undef cuStreamGetPriority
#undef cuStreamIsCapturing
#undef cuStreamQuery
#undef cuStreamSetAttribute
#undef cuStreamSynchronize
#undef cuStreamUpdateCaptureDependencies
#undef cuStreamWaitEvent
#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuTexRefGetAddress
#undef cuTexRefSetAddress
#undef cuTexRefSetAddress2D
#undef cuWaitExternalSemaphoresAsync

#define FAKECUDA_API extern "C" __attribute__((visibility("default")))

// Older generations, exported for programs and resolvers that ask for them.
FAKECUDA_API CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
FAKECUDA_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
FAKECUDA_API CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                     unsigned int flags, CUdevice dev);
FAKECUDA_API CUresult cuCtxDestroy(CUcontext ctx);
FAKECUDA_API CUresult cuCtxPopCurrent(CUcontext* pctx);
FAKECUDA_API CUresult cuCtxPushCurrent(CUcontext ctx);
FAKECUDA_API CUresult cuStreamDestroy(CUstream hStream);
FAKECUDA_API CUresult cuEventDestroy(CUevent hEvent);
FAKECUDA_API CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd);
FAKECUDA_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
FAKECUDA_API CUresult cuDevicePrimaryCtxReset(CUdevice dev);
FAKECUDA_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
FAKECUDA_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);
FAKECUDA_API CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);
FAKECUDA_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
FAKECUDA_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
FAKECUDA_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

// Per-thread default stream twins (_ptds: synchronous calls, _ptsz: stream calls).
FAKECUDA_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
FAKECUDA_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
FAKECUDA_API CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
FAKECUDA_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
FAKECUDA_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
FAKECUDA_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N);
FAKECUDA_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
FAKECUDA_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                CUstream hStream);
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                                CUstream hStream);
FAKECUDA_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                                CUstream hStream);
FAKECUDA_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
FAKECUDA_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
FAKECUDA_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
FAKECUDA_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority);
FAKECUDA_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags);
FAKECUDA_API CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId);
FAKECUDA_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx);
FAKECUDA_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
FAKECUDA_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                               unsigned int flags);
FAKECUDA_API CUresult cuStreamQuery_ptsz(CUstream hStream);
FAKECUDA_API CUresult cuStreamSynchronize_ptsz(CUstream hStream);
FAKECUDA_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
FAKECUDA_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);
FAKECUDA_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                          void** kernelParams, void** extra);
FAKECUDA_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                            void** extra);
FAKECUDA_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                     unsigned int gridDimZ, unsigned int blockDimX,
                                                     unsigned int blockDimY, unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void** kernelParams);
FAKECUDA_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);
FAKECUDA_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
FAKECUDA_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
FAKECUDA_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream);
FAKECUDA_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
FAKECUDA_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                 unsigned int flags, CUstream hStream);
FAKECUDA_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                           size_t Height);
FAKECUDA_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                            size_t Height);
FAKECUDA_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                            size_t Height);
FAKECUDA_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                             size_t Height, CUstream hStream);
FAKECUDA_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                              size_t Height, CUstream hStream);
FAKECUDA_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                              size_t Height, CUstream hStream);
FAKECUDA_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy);
FAKECUDA_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy);
FAKECUDA_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream);
FAKECUDA_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy);
FAKECUDA_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream);
FAKECUDA_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                        CUcontext srcContext, size_t ByteCount);
FAKECUDA_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                             CUcontext srcContext, size_t ByteCount, CUstream hStream);
FAKECUDA_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

#endif
