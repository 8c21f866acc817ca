// A deliberately odd libcuda.so.1 for resolver tests: its cuGetProcAddress answers some names
// with errors, a NULL pointer on success, a "future" ABI at CUDA 14.0, and it counts which of
// its functions were called. Whatever it answers, a program under libmemtool.so must get the
// same status, the same symbolStatus and, except for hooked symbols, the same pointer.
// Like a driver's own sources: every ABI version under its own name (no renaming macros).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstring>

#define STUB_EXPORT extern "C" __attribute__((visibility("default")))

// Bit i set when function i below ran (the client reads it through dlsym).
extern "C" {
__attribute__((visibility("default"))) unsigned stub_calls = 0;
}
enum : unsigned {
  kMemAllocV1 = 1u << 0,
  kMemAllocV2 = 1u << 1,
  kLaunch = 1u << 2,
  kLaunchPtsz = 1u << 3,
  kSyncV2 = 1u << 4,
  kSyncFuture = 1u << 5,
  kInit = 1u << 6,
  kMemset = 1u << 7,
};

STUB_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t) {
  stub_calls |= kMemset;
  return CUDA_SUCCESS;
}

STUB_EXPORT CUresult cuInit(unsigned int) {
  stub_calls |= kInit;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int) {  // the 32-bit ABI of CUDA < 3.2
  stub_calls |= kMemAllocV1;
  *dptr = 0x1000;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t) {
  stub_calls |= kMemAllocV2;
  *dptr = 0x7000000;
  // A driver calling its own exported entry point: through the PLT this reaches libmemtool's
  // wrapper, which must pass it straight back here (not record it, not recurse).
  return cuMemsetD8_v2(*dptr, 0, 1);
}
STUB_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**) {
  stub_calls |= kLaunch;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, CUstream, void**, void**) {
  stub_calls |= kLaunchPtsz;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuCtxSynchronize_v2(CUcontext) {
  stub_calls |= kSyncV2;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult stub_future_cuCtxSynchronize(CUcontext, int) {
  stub_calls |= kSyncFuture;
  return CUDA_SUCCESS;
}

STUB_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  auto answer = [&](void* function, CUresult result, CUdriverProcAddressQueryResult query) {
    if (status != nullptr) *status = query;
    if (result == CUDA_SUCCESS || function == nullptr) *pfn = function;
    return result;
  };
  if (std::strcmp(symbol, "cuInit") == 0)
    return answer(reinterpret_cast<void*>(&cuInit), CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
  if (std::strcmp(symbol, "cuMemAlloc") == 0) {
    void* f = version >= 3020 ? reinterpret_cast<void*>(&cuMemAlloc_v2) : reinterpret_cast<void*>(&cuMemAlloc);
    return answer(f, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
  }
  if (std::strcmp(symbol, "cuLaunchKernel") == 0) {
    void* f = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0
                  ? reinterpret_cast<void*>(&cuLaunchKernel_ptsz)
                  : reinterpret_cast<void*>(&cuLaunchKernel);
    return answer(f, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
  }
  if (std::strcmp(symbol, "cuCtxSynchronize") == 0 && version >= 13000) {
    void* f = version >= 14000 ? reinterpret_cast<void*>(&stub_future_cuCtxSynchronize)
                               : reinterpret_cast<void*>(&cuCtxSynchronize_v2);
    return answer(f, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
  }
  // Success with a NULL pointer: odd, and exactly what the program must see.
  if (std::strcmp(symbol, "cuMemFree") == 0) return answer(nullptr, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  if (std::strcmp(symbol, "cuMemAllocAsync") == 0) {
    return answer(nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  }
  // An error that leaves *pfn alone.
  if (std::strcmp(symbol, "cuMemGetInfo") == 0) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    return answer(reinterpret_cast<void*>(&cuGetProcAddress_v2), CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
  }
  return answer(nullptr, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}
