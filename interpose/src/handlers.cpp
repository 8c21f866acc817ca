// The handlers of the hook table (see handlers.hpp). Each one: the real call, in the right
// order relative to the recorder, and the driver's result unchanged.
#include "memtool/interpose/handlers.hpp"
#include "memtool/interpose/ipc_bridge.hpp"
#include "handler_support.hpp"

#include <optional>
#include <type_traits>

namespace memtool::interpose {
namespace {

using trace::CopyKind;
using trace::MemoryKind;
using trace::SyncKind;

std::uint64_t u64(CUdeviceptr p) { return static_cast<std::uint64_t>(p); }
std::uint64_t u64(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

using detail::captured;
using detail::kCapturedCopy;
using detail::kCapturedGraphLaunch;
using detail::kCapturedLaunch;
using detail::kCapturedMemset;
using detail::order;
using detail::stream_of;

template <class F>
std::uint64_t default_stream_of(const Call<F>& call) {
  return recorded_stream(nullptr, call.variant);
}

// After a copy from host memory succeeded: what it wrote may be a pointer table.
void uploaded(Recorder& recorder, CUresult result, std::uint64_t dst, const void* src, std::uint64_t bytes,
              bool dst_on_device, bool readable = true) {
  if (result == CUDA_SUCCESS) recorder.on_upload(dst, src, bytes, dst_on_device, readable);
}

// An allocation the engine does not serve (pitched, managed, VMM): the real call, then recorded
// for the context's runtime.
template <class F, class... Args>
CUresult allocate(const Call<F>& call, CUdeviceptr* dptr, std::uint64_t size, MemoryKind kind, std::uint64_t stream,
                  Args... args) {
  const CUresult result = call.real(dptr, args...);
  if (result == CUDA_SUCCESS && dptr != nullptr) {
    call.recorder.on_alloc(u64(*dptr), size, kind, stream, call.runtimes.current().id());
  }
  return result;
}

template <class F, class... Args>
CUresult allocate_host(const Call<F>& call, void** pp, std::uint64_t size, Args... args) {
  const CUresult result = call.real(pp, args...);
  if (result == CUDA_SUCCESS && pp != nullptr) call.recorder.on_alloc(u64(*pp), size, MemoryKind::pinned_host, 0);
  return result;
}

// A device allocation: the strategy of the current context serves it; the recorder sees what
// the program asked for and the address it got.
template <class F>
CUresult allocate_device(const Call<F>& call, CUdeviceptr* dptr, const engine::AllocationRequest& request) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;  // what the driver says
  engine::Runtime& runtime = call.runtimes.current();
  engine::DevicePtr ptr = 0;
  const auto result = static_cast<CUresult>(runtime.allocate(request, &ptr));
  if (result == CUDA_SUCCESS) {
    *dptr = static_cast<CUdeviceptr>(ptr);
    call.recorder.on_alloc(ptr, request.size, request.kind, request.stream, runtime.id());
  }
  return result;
}

// A free: recorded first (the address may be reused at once), then the runtime that made the
// buffer frees it (a pooled buffer goes back to its pool; anything else reaches the real free).
template <class F>
CUresult free_device(const Call<F>& call, CUdeviceptr dptr, MemoryKind kind, std::uint64_t stream) {
  const std::uint32_t owner = dptr != 0 ? call.recorder.on_free(u64(dptr), kind, stream) : 0;
  if (IpcBridge* bridge = call.runtimes.ipc_bridge(); bridge != nullptr && dptr != 0) bridge->buffer_freed(dptr);
  return static_cast<CUresult>(call.runtimes.deallocate(owner, u64(dptr), kind, stream));
}

// An allocation on a capturing stream is graph memory (a mem-alloc node: the driver fixes its
// address for the graph's life): the driver's alone, never served by a strategy.
template <class F, class... Args>
CUresult allocate_graph_memory(const Call<F>& call, CUdeviceptr* dptr, std::uint64_t size, std::uint64_t stream,
                               Args... args) {
  const CUresult result = call.real(args...);
  if (result == CUDA_SUCCESS && dptr != nullptr) call.recorder.on_graph_alloc(u64(*dptr), size, stream);
  return result;
}

// A free on a capturing stream (a mem-free node: the driver refuses anything but graph memory,
// which memtool then passes on unchanged), or of graph memory outside a capture: the driver's.
// Nullopt: an ordinary free, for free_device.
template <class F, class... Args>
std::optional<CUresult> free_graph_memory(const Call<F>& call, CUdeviceptr dptr, std::uint64_t stream, Args... args) {
  const bool in_capture = captured(call, stream);
  if (!in_capture && !call.recorder.has_graph_memory()) return std::nullopt;
  const bool graph_memory = dptr != 0 && call.recorder.on_graph_free(u64(dptr), stream, in_capture);
  if (!in_capture && !graph_memory) return std::nullopt;
  return call.real(args...);
}

// A copy or memset: recorded, and its stream ordered after earlier users of the memory it
// touches — before the real call queues it.
template <class F>
void record_copy(const Call<F>& call, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyKind kind,
                 std::uint64_t stream, bool async) {
  if (captured(call, stream)) return call.recorder.on_captured_work(kCapturedCopy, stream);
  order(call, call.recorder.on_copy(dst, src, bytes, kind, stream, async), stream);
}

template <class F>
void record_memset(const Call<F>& call, std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream, bool async) {
  if (captured(call, stream)) return call.recorder.on_captured_work(kCapturedMemset, stream);
  order(call, call.recorder.on_memset(dst, bytes, stream, async), stream);
}

// The source and destination of a 2D/3D copy, whatever memory type each side is.
template <class Copy>
std::uint64_t copy_src(const Copy& c) {
  return c.srcMemoryType == CU_MEMORYTYPE_HOST ? u64(c.srcHost) : u64(c.srcDevice);
}
template <class Copy>
std::uint64_t copy_dst(const Copy& c) {
  return c.dstMemoryType == CU_MEMORYTYPE_HOST ? u64(c.dstHost) : u64(c.dstDevice);
}
template <class Copy>
CopyKind copy_kind(const Copy& c) {
  // CU_MEMORYTYPE_UNIFIED: left to the recorder's classification from its index.
  auto side = [](CUmemorytype type) -> int {
    if (type == CU_MEMORYTYPE_HOST) return 0;
    if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY) return 1;
    return -1;
  };
  const int s = side(c.srcMemoryType);
  const int d = side(c.dstMemoryType);
  if (s < 0 || d < 0) return CopyKind::unknown;
  if (s == 0) return d == 0 ? CopyKind::h2h : CopyKind::h2d;
  return d == 0 ? CopyKind::d2h : CopyKind::d2d;
}

// A pitched copy from host memory: its bytes are not read for pointers (pitches, arrays).
template <class Copy>
void pitched_upload(Recorder& recorder, CUresult result, const Copy* p) {
  if (p != nullptr && p->srcMemoryType == CU_MEMORYTYPE_HOST) {
    uploaded(recorder, result, copy_dst(*p), p->srcHost, 0, p->dstMemoryType == CU_MEMORYTYPE_DEVICE, false);
  }
}

std::uint64_t pitched_bytes(const CUDA_MEMCPY2D& c) { return std::uint64_t{c.WidthInBytes} * c.Height; }
std::uint64_t pitched_bytes(const CUDA_MEMCPY3D& c) { return std::uint64_t{c.WidthInBytes} * c.Height * c.Depth; }

// cuMemcpy2D and cuMemcpy3D, synchronous (the real function takes no stream) or async.
template <class F, class Copy>
CUresult pitched_copy(const Call<F>& call, const Copy* p, CUstream stream, bool async) {
  if (p != nullptr) {
    record_copy(call, copy_dst(*p), copy_src(*p), pitched_bytes(*p), copy_kind(*p), stream_of(call, stream), async);
  }
  CUresult result;
  if constexpr (std::is_invocable_v<F, const Copy*>) {
    result = call.real(p);
  } else {
    result = call.real(p, stream);
  }
  pitched_upload(call.recorder, result, p);
  return result;
}

// A launch as the recorder saw it, told to the strategies before the real launch: the stream
// order of every buffer its arguments touch. If recording failed, which buffers launches touch
// is no longer known: strategies that reuse memory across streams must stop.
template <class F>
void launched(const Call<F>& call, const LaunchSeen& seen, std::uint64_t stream) {
  if (!call.runtimes.wants_accesses()) return;
  if (!call.recorder.active()) {
    call.runtimes.fail_all("recording failed: the buffers launches touch are no longer known");
    return;
  }
  order(call, seen, stream);
}

}  // namespace

// --- allocation family ---------------------------------------------------------------------------

CUresult handle_cuMemAlloc_v2(const Call<fn::cuMemAlloc_v2>& call, CUdeviceptr* dptr, size_t bytesize) noexcept {
  return allocate_device(call, dptr, {bytesize, MemoryKind::device, 0, 0});
}

CUresult handle_cuMemAllocPitch_v2(const Call<fn::cuMemAllocPitch_v2>& call, CUdeviceptr* dptr, size_t* pPitch,
                                   size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes) noexcept {
  const CUresult result = call.real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (result == CUDA_SUCCESS && dptr != nullptr && pPitch != nullptr) {
    call.recorder.on_alloc(u64(*dptr), std::uint64_t{*pPitch} * Height, MemoryKind::device, 0);
  }
  return result;
}

CUresult handle_cuMemAllocManaged(const Call<fn::cuMemAllocManaged>& call, CUdeviceptr* dptr, size_t bytesize,
                                  unsigned int flags) noexcept {
  return allocate(call, dptr, bytesize, MemoryKind::managed, 0, bytesize, flags);
}

// The pool cuMemAllocAsync on the current device draws from, when its requests must stay there
// (ContextRuntimes::keeps_program_pool: the program shared it with peers); 0 otherwise.
template <class F>
std::uint64_t program_pool_for(const Call<F>& call) {
  CUdevice device = 0;
  const DriverFunctions* driver = call.runtimes.driver_functions();
  if (driver == nullptr || driver->current_mem_pool == nullptr || !call.runtimes.device_of(nullptr, &device) ||
      !call.runtimes.keeps_program_pool(device)) {
    return 0;
  }
  CUmemoryPool pool = nullptr;
  if (driver->current_mem_pool(&pool, device) != CUDA_SUCCESS) return 0;
  return reinterpret_cast<std::uintptr_t>(pool);
}

CUresult handle_cuMemAllocAsync(const Call<fn::cuMemAllocAsync>& call, CUdeviceptr* dptr, size_t bytesize,
                                CUstream hStream) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) return allocate_graph_memory(call, dptr, bytesize, stream, dptr, bytesize, hStream);
  return allocate_device(call, dptr, {bytesize, MemoryKind::async, stream, program_pool_for(call)});
}

// Stream-ordered memory from a pool of the program's: served like cuMemAllocAsync; what the
// strategy passes through comes from the program's pool.
CUresult handle_cuMemAllocFromPoolAsync(const Call<fn::cuMemAllocFromPoolAsync>& call, CUdeviceptr* dptr,
                                        size_t bytesize, CUmemoryPool pool, CUstream hStream) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) return allocate_graph_memory(call, dptr, bytesize, stream, dptr, bytesize, pool, hStream);
  return allocate_device(call, dptr, {bytesize, MemoryKind::async, stream, reinterpret_cast<std::uintptr_t>(pool)});
}

CUresult handle_cuMemFree_v2(const Call<fn::cuMemFree_v2>& call, CUdeviceptr dptr) noexcept {
  if (call.recorder.has_graph_memory() && dptr != 0 && call.recorder.on_graph_free(u64(dptr), 0, false)) {
    return call.real(dptr);
  }
  return free_device(call, dptr, MemoryKind::device, 0);
}

CUresult handle_cuMemFreeAsync(const Call<fn::cuMemFreeAsync>& call, CUdeviceptr dptr, CUstream hStream) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (const std::optional<CUresult> result = free_graph_memory(call, dptr, stream, dptr, hStream)) return *result;
  return free_device(call, dptr, MemoryKind::async, stream);
}

CUresult handle_cuMemAllocHost_v2(const Call<fn::cuMemAllocHost_v2>& call, void** pp, size_t bytesize) noexcept {
  return allocate_host(call, pp, bytesize, bytesize);
}

CUresult handle_cuMemHostAlloc(const Call<fn::cuMemHostAlloc>& call, void** pp, size_t bytesize,
                               unsigned int Flags) noexcept {
  return allocate_host(call, pp, bytesize, bytesize, Flags);
}

CUresult handle_cuMemFreeHost(const Call<fn::cuMemFreeHost>& call, void* p) noexcept {
  if (p != nullptr) call.recorder.on_free(u64(p), MemoryKind::pinned_host, 0);
  return call.real(p);
}

// VMM: physical handles have no address; the address range becomes live at cuMemMap and dies
// at cuMemUnmap, so those are the allocation and the free.
CUresult handle_cuMemCreate(const Call<fn::cuMemCreate>& call, CUmemGenericAllocationHandle* handle, size_t size,
                            const CUmemAllocationProp* prop, unsigned long long flags) noexcept {
  return call.real(handle, size, prop, flags);
}

CUresult handle_cuMemMap(const Call<fn::cuMemMap>& call, CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags) noexcept {
  const CUresult result = call.real(ptr, size, offset, handle, flags);
  if (result == CUDA_SUCCESS) call.recorder.on_alloc(u64(ptr), size, MemoryKind::vmm, 0);
  return result;
}

CUresult handle_cuMemUnmap(const Call<fn::cuMemUnmap>& call, CUdeviceptr ptr, size_t size) noexcept {
  call.recorder.on_unmap(u64(ptr), size);
  return call.real(ptr, size);
}

CUresult handle_cuMemRelease(const Call<fn::cuMemRelease>& call, CUmemGenericAllocationHandle handle) noexcept {
  return call.real(handle);
}

CUresult handle_cuMemGetInfo_v2(const Call<fn::cuMemGetInfo_v2>& call, size_t* free, size_t* total) noexcept {
  const CUresult result = call.real(free, total);
  // What the strategy holds and no buffer of the program uses is free memory as far as the
  // program is concerned (invariant 3): an allocation that needs it gets it.
  // What it keeps of the program's off the device (swapped out) is device memory as far as the
  // program is concerned too: the total grows by it, so free + what the program holds never
  // passes the total (PyTorch's cudaMallocAsync backend asserts it), however much it holds.
  if (result != CUDA_SUCCESS) return result;
  engine::Runtime& runtime = call.runtimes.current();
  std::uint64_t shown_total = 0;
  if (total != nullptr) {
    shown_total = runtime.program_total(*total);
    *total = static_cast<size_t>(shown_total);
  }
  if (free != nullptr) {
    std::uint64_t adjusted = runtime.program_free(*free);
    if (total != nullptr && adjusted > shown_total) adjusted = shown_total;
    *free = static_cast<size_t>(adjusted);
  }
  return result;
}

// --- launch family -------------------------------------------------------------------------------

CUresult handle_cuLaunchKernel(const Call<fn::cuLaunchKernel>& call, CUfunction f, unsigned int gridDimX,
                               unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
                               CUstream hStream, void** kernelParams, void** extra) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) {
    call.recorder.on_captured_work(kCapturedLaunch, stream);
  } else {
    launched(call, call.recorder.on_launch(f, stream, LaunchArgs{kernelParams, extra}), stream);
  }
  return call.real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                   kernelParams, extra);
}

CUresult handle_cuLaunchKernelEx(const Call<fn::cuLaunchKernelEx>& call, const CUlaunchConfig* config, CUfunction f,
                                 void** kernelParams, void** extra) noexcept {
  const std::uint64_t stream = stream_of(call, config != nullptr ? config->hStream : nullptr);
  if (captured(call, stream)) {
    call.recorder.on_captured_work(kCapturedLaunch, stream);
  } else {
    launched(call, call.recorder.on_launch(f, stream, LaunchArgs{kernelParams, extra}), stream);
  }
  return call.real(config, f, kernelParams, extra);
}

CUresult handle_cuLaunchCooperativeKernel(const Call<fn::cuLaunchCooperativeKernel>& call, CUfunction f,
                                          unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                          unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) {
    call.recorder.on_captured_work(kCapturedLaunch, stream);
  } else {
    launched(call, call.recorder.on_launch(f, stream, LaunchArgs{kernelParams, nullptr}), stream);
  }
  return call.real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                   kernelParams);
}

// One work item: the buffers its graph's nodes name (graph_catalog.hpp), ordered and made
// resident by the strategies like a launch's. Launched into a capture, it becomes a child graph
// node: captured, not run.
// The first launch of an executable graph makes the driver take its graph memory: the figure the
// strategies count against a budget is asked anew after it.
CUresult handle_cuGraphLaunch(const Call<fn::cuGraphLaunch>& call, CUgraphExec hGraphExec, CUstream hStream) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) {
    call.recorder.on_captured_work(kCapturedGraphLaunch, stream);
    return call.real(hGraphExec, hStream);
  }
  const LaunchSeen seen = call.recorder.on_graph_launch(u64(hGraphExec), stream);
  const bool first = seen.first_graph_launch;
  launched(call, seen, stream);
  const CUresult result = call.real(hGraphExec, hStream);
  if (first) call.runtimes.current().set_graph_memory(call.recorder.graph_memory_bytes(true));
  return result;
}

// --- copies -----------------------------------------------------------------------------------------
// Recorded before the call: the event is the request, and a failed copy still shows the intent.

CUresult handle_cuMemcpy(const Call<fn::cuMemcpy>& call, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) noexcept {
  record_copy(call, u64(dst), u64(src), ByteCount, CopyKind::unknown, default_stream_of(call), false);
  const CUresult result = call.real(dst, src, ByteCount);
  uploaded(call.recorder, result, u64(dst), reinterpret_cast<const void*>(src), ByteCount, false);
  return result;
}

CUresult handle_cuMemcpyAsync(const Call<fn::cuMemcpyAsync>& call, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                              CUstream hStream) noexcept {
  record_copy(call, u64(dst), u64(src), ByteCount, CopyKind::unknown, stream_of(call, hStream), true);
  const CUresult result = call.real(dst, src, ByteCount, hStream);
  uploaded(call.recorder, result, u64(dst), reinterpret_cast<const void*>(src), ByteCount, false);
  return result;
}

CUresult handle_cuMemcpyPeer(const Call<fn::cuMemcpyPeer>& call, CUdeviceptr dstDevice, CUcontext dstContext,
                             CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount) noexcept {
  record_copy(call, u64(dstDevice), u64(srcDevice), ByteCount, CopyKind::d2d, default_stream_of(call), false);
  return call.real(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult handle_cuMemcpyPeerAsync(const Call<fn::cuMemcpyPeerAsync>& call, CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                  CUstream hStream) noexcept {
  record_copy(call, u64(dstDevice), u64(srcDevice), ByteCount, CopyKind::d2d, stream_of(call, hStream), true);
  return call.real(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
}

CUresult handle_cuMemcpyHtoD_v2(const Call<fn::cuMemcpyHtoD_v2>& call, CUdeviceptr dstDevice, const void* srcHost,
                                size_t ByteCount) noexcept {
  record_copy(call, u64(dstDevice), u64(srcHost), ByteCount, CopyKind::h2d, default_stream_of(call), false);
  const CUresult result = call.real(dstDevice, srcHost, ByteCount);
  uploaded(call.recorder, result, u64(dstDevice), srcHost, ByteCount, true);
  return result;
}

CUresult handle_cuMemcpyDtoH_v2(const Call<fn::cuMemcpyDtoH_v2>& call, void* dstHost, CUdeviceptr srcDevice,
                                size_t ByteCount) noexcept {
  record_copy(call, u64(dstHost), u64(srcDevice), ByteCount, CopyKind::d2h, default_stream_of(call), false);
  return call.real(dstHost, srcDevice, ByteCount);
}

CUresult handle_cuMemcpyDtoD_v2(const Call<fn::cuMemcpyDtoD_v2>& call, CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                size_t ByteCount) noexcept {
  record_copy(call, u64(dstDevice), u64(srcDevice), ByteCount, CopyKind::d2d, default_stream_of(call), false);
  return call.real(dstDevice, srcDevice, ByteCount);
}

CUresult handle_cuMemcpyHtoDAsync_v2(const Call<fn::cuMemcpyHtoDAsync_v2>& call, CUdeviceptr dstDevice,
                                     const void* srcHost, size_t ByteCount, CUstream hStream) noexcept {
  record_copy(call, u64(dstDevice), u64(srcHost), ByteCount, CopyKind::h2d, stream_of(call, hStream), true);
  const CUresult result = call.real(dstDevice, srcHost, ByteCount, hStream);
  uploaded(call.recorder, result, u64(dstDevice), srcHost, ByteCount, true);
  return result;
}

CUresult handle_cuMemcpyDtoHAsync_v2(const Call<fn::cuMemcpyDtoHAsync_v2>& call, void* dstHost, CUdeviceptr srcDevice,
                                     size_t ByteCount, CUstream hStream) noexcept {
  record_copy(call, u64(dstHost), u64(srcDevice), ByteCount, CopyKind::d2h, stream_of(call, hStream), true);
  return call.real(dstHost, srcDevice, ByteCount, hStream);
}

CUresult handle_cuMemcpyDtoDAsync_v2(const Call<fn::cuMemcpyDtoDAsync_v2>& call, CUdeviceptr dstDevice,
                                     CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) noexcept {
  record_copy(call, u64(dstDevice), u64(srcDevice), ByteCount, CopyKind::d2d, stream_of(call, hStream), true);
  return call.real(dstDevice, srcDevice, ByteCount, hStream);
}

CUresult handle_cuMemcpy2D_v2(const Call<fn::cuMemcpy2D_v2>& call, const CUDA_MEMCPY2D* pCopy) noexcept {
  return pitched_copy(call, pCopy, nullptr, false);
}

CUresult handle_cuMemcpy2DUnaligned_v2(const Call<fn::cuMemcpy2DUnaligned_v2>& call,
                                       const CUDA_MEMCPY2D* pCopy) noexcept {
  return pitched_copy(call, pCopy, nullptr, false);
}

CUresult handle_cuMemcpy2DAsync_v2(const Call<fn::cuMemcpy2DAsync_v2>& call, const CUDA_MEMCPY2D* pCopy,
                                   CUstream hStream) noexcept {
  return pitched_copy(call, pCopy, hStream, true);
}

CUresult handle_cuMemcpy3D_v2(const Call<fn::cuMemcpy3D_v2>& call, const CUDA_MEMCPY3D* pCopy) noexcept {
  return pitched_copy(call, pCopy, nullptr, false);
}

CUresult handle_cuMemcpy3DAsync_v2(const Call<fn::cuMemcpy3DAsync_v2>& call, const CUDA_MEMCPY3D* pCopy,
                                   CUstream hStream) noexcept {
  return pitched_copy(call, pCopy, hStream, true);
}

// --- memsets ----------------------------------------------------------------------------------------

#define MEMTOOL_MEMSET_1D(symbol, value_type, element_bytes)                                                           \
  CUresult handle_##symbol(const Call<fn::symbol>& call, CUdeviceptr dstDevice, value_type value, size_t N) noexcept { \
    record_memset(call, u64(dstDevice), std::uint64_t{N} * (element_bytes), default_stream_of(call), false);           \
    return call.real(dstDevice, value, N);                                                                             \
  }
#define MEMTOOL_MEMSET_1D_ASYNC(symbol, value_type, element_bytes)                                           \
  CUresult handle_##symbol(const Call<fn::symbol>& call, CUdeviceptr dstDevice, value_type value, size_t N,  \
                           CUstream hStream) noexcept {                                                      \
    record_memset(call, u64(dstDevice), std::uint64_t{N} * (element_bytes), stream_of(call, hStream), true); \
    return call.real(dstDevice, value, N, hStream);                                                          \
  }
#define MEMTOOL_MEMSET_2D(symbol, value_type, element_bytes)                                                       \
  CUresult handle_##symbol(const Call<fn::symbol>& call, CUdeviceptr dstDevice, size_t dstPitch, value_type value, \
                           size_t Width, size_t Height) noexcept {                                                 \
    record_memset(call, u64(dstDevice), std::uint64_t{Width} * (element_bytes)*Height, default_stream_of(call),    \
                  false);                                                                                          \
    return call.real(dstDevice, dstPitch, value, Width, Height);                                                   \
  }
#define MEMTOOL_MEMSET_2D_ASYNC(symbol, value_type, element_bytes)                                                 \
  CUresult handle_##symbol(const Call<fn::symbol>& call, CUdeviceptr dstDevice, size_t dstPitch, value_type value, \
                           size_t Width, size_t Height, CUstream hStream) noexcept {                               \
    record_memset(call, u64(dstDevice), std::uint64_t{Width} * (element_bytes)*Height, stream_of(call, hStream),   \
                  true);                                                                                           \
    return call.real(dstDevice, dstPitch, value, Width, Height, hStream);                                          \
  }

MEMTOOL_MEMSET_1D(cuMemsetD8_v2, unsigned char, 1)
MEMTOOL_MEMSET_1D(cuMemsetD16_v2, unsigned short, 2)
MEMTOOL_MEMSET_1D(cuMemsetD32_v2, unsigned int, 4)
MEMTOOL_MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1)
MEMTOOL_MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2)
MEMTOOL_MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4)
MEMTOOL_MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1)
MEMTOOL_MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2)
MEMTOOL_MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4)
MEMTOOL_MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1)
MEMTOOL_MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2)
MEMTOOL_MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4)

// --- synchronisation and streams ---------------------------------------------------------------------
// Recorded after the call returns: the host waited until then; the strategies hear how long
// (detail::synchronise).

CUresult handle_cuCtxSynchronize(const Call<fn::cuCtxSynchronize>& call) noexcept {
  const CUresult result = detail::synchronise(call, 0, [&] { return call.real(); });
  call.recorder.on_sync(SyncKind::context, 0);
  return result;
}

CUresult handle_cuCtxSynchronize_v2(const Call<fn::cuCtxSynchronize_v2>& call, CUcontext ctx) noexcept {
  const CUresult result = detail::synchronise(call, 0, [&] { return call.real(ctx); });
  call.recorder.on_sync(SyncKind::context, 0);
  return result;
}

CUresult handle_cuStreamSynchronize(const Call<fn::cuStreamSynchronize>& call, CUstream hStream) noexcept {
  const std::uint64_t stream = stream_of(call, hStream);
  const CUresult result = detail::synchronise(call, stream, [&] { return call.real(hStream); });
  call.recorder.on_sync(SyncKind::stream, stream);
  return result;
}

CUresult handle_cuEventSynchronize(const Call<fn::cuEventSynchronize>& call, CUevent hEvent) noexcept {
  const CUresult result = detail::synchronise(call, 0, [&] { return call.real(hEvent); });
  call.recorder.on_sync(SyncKind::event, 0);
  return result;
}

// While captures run, a wait may join its stream to one (a wait on an event recorded in a
// capture): the stream gets its marker first, with the tracker's gate held (capture_tracker.hpp).
CUresult handle_cuStreamWaitEvent(const Call<fn::cuStreamWaitEvent>& call, CUstream hStream, CUevent hEvent,
                                  unsigned int Flags) noexcept {
  CaptureTracker* captures = call.recorder.captures();
  CUresult result = CUDA_SUCCESS;
  if (captures != nullptr && captures->any()) {
    captures->before_wait(stream_of(call, hStream));
    result = call.real(hStream, hEvent, Flags);
    captures->after_wait();
  } else {
    result = call.real(hStream, hEvent, Flags);
  }
  call.recorder.on_sync(SyncKind::stream_wait_event, stream_of(call, hStream));
  return result;
}

CUresult handle_cuStreamCreate(const Call<fn::cuStreamCreate>& call, CUstream* phStream, unsigned int Flags) noexcept {
  const CUresult result = call.real(phStream, Flags);
  if (result == CUDA_SUCCESS && phStream != nullptr) call.recorder.on_stream_create(u64(*phStream), Flags, 0);
  return result;
}

CUresult handle_cuStreamCreateWithPriority(const Call<fn::cuStreamCreateWithPriority>& call, CUstream* phStream,
                                           unsigned int flags, int priority) noexcept {
  const CUresult result = call.real(phStream, flags, priority);
  if (result == CUDA_SUCCESS && phStream != nullptr) call.recorder.on_stream_create(u64(*phStream), flags, priority);
  return result;
}

// --- context teardown -------------------------------------------------------------------------------
// A context's strategy ends before the context goes: idle pools are freed while the context can
// still free them, and nothing new is handed out from memory the driver is about to reclaim. A
// primary context's release ends every runtime (which context it was is not known from the
// device alone; conservative): a context made current again afterwards gets a fresh one.

CUresult handle_cuCtxDestroy_v2(const Call<fn::cuCtxDestroy_v2>& call, CUcontext ctx) noexcept {
  call.runtimes.end_context(ctx, "cuCtxDestroy");
  return call.real(ctx);
}

CUresult handle_cuDevicePrimaryCtxRelease_v2(const Call<fn::cuDevicePrimaryCtxRelease_v2>& call,
                                             CUdevice dev) noexcept {
  call.runtimes.end_all("cuDevicePrimaryCtxRelease");
  return call.real(dev);
}

CUresult handle_cuDevicePrimaryCtxReset_v2(const Call<fn::cuDevicePrimaryCtxReset_v2>& call, CUdevice dev) noexcept {
  call.runtimes.end_all("cuDevicePrimaryCtxReset");
  return call.real(dev);
}

}  // namespace memtool::interpose
