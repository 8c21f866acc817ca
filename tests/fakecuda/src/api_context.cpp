// Entry points: initialisation, version, the devices, primary and created contexts, memory info.
// FAKECUDA_DEVICES emulated devices (default one), each like a Hopper-class GPU.
#include "capture.hpp"
#include "devices.hpp"
#include "driver.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <cstring>

using namespace fakecuda;

namespace {

constexpr int kStreamPriorityLeast = 0;
constexpr int kStreamPriorityGreatest = -5;

int device_attribute(CUdevice_attribute attr, CUdevice dev) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return 232448;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      return 233472;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return 1755000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 52428800;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
      return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      return 2;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return dev + 1;  // as pci_bus_id() spells it
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
    // What the multi-device, pool, IPC and stream memory operation emulation offers.
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
      return attr == CU_DEVICE_ATTRIBUTE_ECC_ENABLED || attr == CU_DEVICE_ATTRIBUTE_TCC_DRIVER ? 0 : 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
      return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
      return dev;
    default:
      return 0;  // features the emulation does not have
  }
}

CUresult need_context_for(CUdevice dev) {
  FC_TRY(check_init());
  return check_device(dev);
}

}  // namespace

FAKECUDA_API CUresult cuInit(unsigned int Flags) { return init_driver(Flags); }

FAKECUDA_API CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable == nullptr || pExportTableId == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;  // cudart's private tables cannot be emulated
}

// ---- device ---------------------------------------------------------------------------

FAKECUDA_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FC_TRY(check_init());
  if (device == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_device(ordinal));
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetCount(int* count) {
  FC_TRY(check_init());
  if (count == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *count = device_count();
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (name == nullptr || len <= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  static const char kName[] = "fakecuda CPU emulated GPU";
  std::strncpy(name, kName, static_cast<std::size_t>(len));
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (pi == nullptr || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pi = device_attribute(attrib, dev);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (bytes == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *bytes = device_capacity(dev);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (uuid == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  static const char kUuid[16] = {'f', 'a', 'k', 'e', 'c', 'u', 'd', 'a', '-', 'd', 'e', 'v', 'i', 'c', 'e', '0'};
  std::memcpy(uuid->bytes, kUuid, sizeof kUuid);
  uuid->bytes[15] = static_cast<char>('0' + dev);  // one per device, device 0's as it always was
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

FAKECUDA_API CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (major == nullptr || minor == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}

// ---- primary context --------------------------------------------------------------------

FAKECUDA_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (pctx == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  primary_retain(dev);
  *pctx = reinterpret_cast<CUcontext>(&primary_context(dev));
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (primary_release(dev) < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;  // released more often than retained
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

FAKECUDA_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FC_TRY(need_context_for(dev));
  if (flags == nullptr || active == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *flags = primary_flags(dev);
  *active = primary_refcount(dev) > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  FC_TRY(need_context_for(dev));
  if ((flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  primary_flags(dev) = flags;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

FAKECUDA_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  FC_TRY(need_context_for(dev));
  return synchronize_context(primary_context(dev));
}

FAKECUDA_API CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

// ---- created contexts and the context stack ---------------------------------------------

namespace {

CUresult create_context_common(CUcontext* pctx, unsigned flags, CUdevice dev) {
  FC_TRY(need_context_for(dev));
  if (pctx == nullptr || (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    Context* ctx = create_context(flags, dev);
    push_current(ctx);  // a created context becomes current, as on the driver
    *pctx = reinterpret_cast<CUcontext>(ctx);
    return CUDA_SUCCESS;
  });
}

Context* as_context(CUcontext ctx) { return reinterpret_cast<Context*>(ctx); }

// A context argument where NULL names the current context; any other must still be live.
CUresult given_or_current(CUcontext ctx, Context*& out) {
  out = as_context(ctx);
  if (out == nullptr) {
    return current_context(out);
  }
  return is_live_context(out) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace

FAKECUDA_API CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  (void)params;  // execution affinity and CIG parameters have no meaning on the CPU
  return create_context_common(pctx, flags, dev);
}

FAKECUDA_API CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                     unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return create_context_common(pctx, flags, dev);
}

FAKECUDA_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_context_common(pctx, flags, dev);
}

FAKECUDA_API CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_context_common(pctx, flags, dev);
}

FAKECUDA_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  FC_TRY(check_init());
  if (ctx == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] { return destroy_context(as_context(ctx)); });
}

FAKECUDA_API CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

FAKECUDA_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  FC_TRY(check_init());
  if (pctx == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pctx = reinterpret_cast<CUcontext>(current_context_or_null());
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  FC_TRY(check_init());
  if (ctx != nullptr && !is_live_context(as_context(ctx))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return guarded([&] {
    set_current(as_context(ctx));
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  FC_TRY(check_init());
  if (ctx == nullptr || !is_live_context(as_context(ctx))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return guarded([&] {
    push_current(as_context(ctx));
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

FAKECUDA_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  FC_TRY(check_init());
  Context* top = pop_current();
  if (top == nullptr) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (pctx != nullptr) {
    *pctx = reinterpret_cast<CUcontext>(top);
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }

FAKECUDA_API CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  FC_TRY(check_init());
  Context* c = nullptr;
  FC_TRY(given_or_current(ctx, c));
  if (device == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *device = c->device;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetDevice(CUdevice* device) { return cuCtxGetDevice_v2(device, nullptr); }

FAKECUDA_API CUresult cuCtxGetFlags(unsigned int* flags) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (flags == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *flags = ctx->primary ? primary_flags(ctx->device) : ctx->flags;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  FC_TRY(check_init());
  Context* c = nullptr;
  FC_TRY(given_or_current(ctx, c));
  if (ctxId == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *ctxId = c->id;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  FC_TRY(check_init());
  Context* c = nullptr;
  FC_TRY(given_or_current(ctx, c));
  if (version == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *version = 3020;  // what the driver reports for every context created through the v2+ API
  return CUDA_SUCCESS;
}

// CUDA 13: synchronise a given context (NULL: the current one).
FAKECUDA_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  FC_TRY(check_init());
  Context* c = nullptr;
  FC_TRY(given_or_current(ctx, c));
  FC_TRY(capture_check_context_sync(*c));  // a context with a capturing stream, or an unsafe call
  count(stats().synchronizations);
  return guarded([&] { return synchronize_context(*c); });
}

FAKECUDA_API CUresult cuCtxSynchronize(void) { return cuCtxSynchronize_v2(nullptr); }

FAKECUDA_API CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (leastPriority != nullptr) {
    *leastPriority = kStreamPriorityLeast;
  }
  if (greatestPriority != nullptr) {
    *greatestPriority = kStreamPriorityGreatest;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (pvalue == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (limit) {
    case CU_LIMIT_STACK_SIZE:
      *pvalue = 1024;
      return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE:
      *pvalue = std::size_t{1} << 20;
      return CUDA_SUCCESS;
    case CU_LIMIT_MALLOC_HEAP_SIZE:
      *pvalue = std::size_t{8} << 20;
      return CUDA_SUCCESS;
    case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
      *pvalue = 2;
      return CUDA_SUCCESS;
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
      *pvalue = 2048;
      return CUDA_SUCCESS;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
      *pvalue = 64;
      return CUDA_SUCCESS;
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
      *pvalue = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
}

FAKECUDA_API CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  size_t current = 0;
  FC_TRY(cuCtxGetLimit(&current, limit));
  (void)value;  // accepted; nothing on the CPU depends on it
  return CUDA_SUCCESS;
}

// ---- memory info -------------------------------------------------------------------------

// The current context's device: its capacity, and what is in use on it (pool reserves included).
FAKECUDA_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (free == nullptr || total == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t used = memory().used(ctx->device);
  *total = memory().capacity(ctx->device);
  *free = used >= *total ? 0 : *total - used;
  return CUDA_SUCCESS;
}
