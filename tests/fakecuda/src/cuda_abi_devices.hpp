/* Exported generations of the multi-device, IPC, batch-copy and stream memory operation entry
 * points that cuda.h does not declare under their ABI names (it renames the API to the newest
 * one: cuStreamWriteValue32 is cuStreamWriteValue32_v2, cuMemcpyBatchAsync is
 * cuMemcpyBatchAsync_v2), declared here with the prototypes cudaTypedefs.h gives them. See
 * cuda_abi.hpp for the scheme.
 */
#ifndef FAKECUDA_CUDA_ABI_DEVICES_HPP
#define FAKECUDA_CUDA_ABI_DEVICES_HPP

#include "cuda_abi.hpp"

FAKECUDA_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device);
FAKECUDA_API CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);

// CUDA 12.8 batch copies report the failing copy in failIdx; CUDA 13's _v2 dropped it.
FAKECUDA_API CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                         CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                         CUstream hStream);
FAKECUDA_API CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                              CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                              size_t* failIdx, CUstream hStream);
FAKECUDA_API CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                                 CUstream hStream);
FAKECUDA_API CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                           unsigned long long flags, CUstream hStream);
FAKECUDA_API CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                                unsigned long long flags, CUstream hStream);
FAKECUDA_API CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                   unsigned long long flags, CUstream hStream);

// Stream memory operations: the CUDA 8/9 generation, its _ptsz twin, and the _v2 twin.
FAKECUDA_API CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                         unsigned int flags);
FAKECUDA_API CUresult cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamWaitValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                unsigned int flags);
FAKECUDA_API CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                              unsigned int flags);
FAKECUDA_API CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                  unsigned int flags);
FAKECUDA_API CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                  unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                   unsigned int flags);
FAKECUDA_API CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                   unsigned int flags);
FAKECUDA_API CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                                 CUstreamBatchMemOpParams* paramArray, unsigned int flags);

#endif
