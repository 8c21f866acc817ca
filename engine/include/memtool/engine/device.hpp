// The engine's only door to a real device. Everything a strategy does to memory, streams or
// copies goes through Device: libmemtool.so implements it with the real driver entry points
// (never its own hooks, so the engine's calls are neither recorded nor re-entered), the tests
// and `memtool simulate` with SimDevice (sim_device.hpp).
//
// Statuses are the driver's own codes (CUresult values as integers), so a hook can return what
// the real allocator said unchanged (DESIGN.md invariant 3, transparency). Every function but
// the allocation pair and the event functions has a default that answers kNotSupported: a
// device says what it can do, and a strategy that needs more falls back to passing through.
#pragma once

#include <cstdint>

#include "memtool/trace/event.hpp"

namespace memtool::engine {

using DevicePtr = std::uint64_t;  // CUdeviceptr
using StreamId = std::uint64_t;   // CUstream as an opaque handle; 0 is the legacy default stream
using EventId = std::uint64_t;    // CUevent as an opaque handle
using Status = int;               // CUresult
using trace::MemoryKind;

inline constexpr Status kSuccess = 0;         // CUDA_SUCCESS
inline constexpr Status kInvalidValue = 1;    // CUDA_ERROR_INVALID_VALUE
inline constexpr Status kOutOfMemory = 2;     // CUDA_ERROR_OUT_OF_MEMORY
inline constexpr Status kNotReady = 600;      // CUDA_ERROR_NOT_READY
inline constexpr Status kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: the call would depend on the legacy stream while a blocking
// stream captures. record_event answers it for a stream that exists but cannot be named now
// (another thread's per-thread default stream): refused for now, not gone; try again later.
inline constexpr Status kCaptureImplicit = 906;

// Where managed memory should live (cuMemAdvise's location advice, reduced to what swapping needs).
enum class Residence : std::uint8_t { device, host };

class Device {
 public:
  virtual ~Device() = default;

  // --- memory ---
  // cuMemAlloc (kind device; stream ignored) or cuMemAllocAsync (kind async, ordered on
  // `stream`). Writes *out only on success.
  virtual Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) = 0;
  // cuMemAllocFromPoolAsync from the program's memory pool `pool` (a CUmemoryPool).
  virtual Status allocate_from_pool(std::uint64_t size, std::uint64_t pool, StreamId stream, DevicePtr* out) {
    (void)size, (void)pool, (void)stream, (void)out;
    return kNotSupported;
  }
  // cuMemFree, or cuMemFreeAsync on `stream` for kind async.
  virtual Status free(DevicePtr ptr, MemoryKind kind, StreamId stream) = 0;

  // --- stream-ordered pools: what the driver's pool keeps after cuMemFreeAsync ---
  // The pool a stream-ordered allocation came from (cuPointerGetAttribute's MEMPOOL_HANDLE); 0
  // when the device cannot say.
  virtual std::uint64_t pool_of(DevicePtr ptr) {
    (void)ptr;
    return 0;
  }
  // cuMemPoolGetAttribute: the bytes `pool` holds (RESERVED_MEM_CURRENT), those its live
  // allocations use (USED_MEM_CURRENT) and its RELEASE_THRESHOLD.
  struct PoolFigures {
    std::uint64_t reserved = 0;
    std::uint64_t used = 0;
    std::uint64_t release_threshold = 0;
  };
  virtual Status pool_figures(std::uint64_t pool, PoolFigures* out) {
    (void)pool, (void)out;
    return kNotSupported;
  }
  // cuMemPoolTrimTo(pool, keep): the pool gives back what it holds unused beyond `keep` bytes.
  // It releases only memory whose frees were reached, waits for nothing and touches no stream;
  // refused (kNotSupported) while a stream capture runs.
  virtual Status trim_pool(std::uint64_t pool, std::uint64_t keep) {
    (void)pool, (void)keep;
    return kNotSupported;
  }
  // cuMemGetInfo.
  virtual Status memory_info(std::uint64_t* free_bytes, std::uint64_t* total_bytes) {
    (void)free_bytes;
    (void)total_bytes;
    return kNotSupported;
  }

  // --- events: order work across streams without synchronising the host ---
  virtual Status create_event(EventId* out) = 0;                         // cuEventCreate(DISABLE_TIMING)
  virtual Status record_event(EventId event, StreamId stream) = 0;       // cuEventRecord (kCaptureImplicit: above)
  virtual Status stream_wait_event(StreamId stream, EventId event) = 0;  // cuStreamWaitEvent
  virtual bool event_completed(EventId event) = 0;                       // cuEventQuery == SUCCESS
  virtual void destroy_event(EventId event) = 0;                         // cuEventDestroy
  virtual Status synchronize_event(EventId event) {                      // cuEventSynchronize
    (void)event;
    return kNotSupported;
  }
  // Events that keep a timestamp (cuEventCreate without DISABLE_TIMING), and the GPU time from
  // one's completion to another's (cuEventElapsedTime): kNotReady until both have completed.
  virtual Status create_timing_event(EventId* out) {
    (void)out;
    return kNotSupported;
  }
  virtual Status elapsed_ns(EventId start, EventId end, double* out) {
    (void)start;
    (void)end;
    (void)out;
    return kNotSupported;
  }

  // --- streams ---
  virtual Status create_stream(StreamId* out) {  // cuStreamCreate(NON_BLOCKING)
    (void)out;
    return kNotSupported;
  }
  virtual Status destroy_stream(StreamId stream) {
    (void)stream;
    return kNotSupported;
  }

  // --- copies between device memory and pinned host memory, ordered on a stream ---
  virtual Status copy_to_host(void* dst, DevicePtr src, std::uint64_t bytes, StreamId stream) {
    (void)dst, (void)src, (void)bytes, (void)stream;
    return kNotSupported;
  }
  virtual Status copy_to_device(DevicePtr dst, const void* src, std::uint64_t bytes, StreamId stream) {
    (void)dst, (void)src, (void)bytes, (void)stream;
    return kNotSupported;
  }
  // Between two device addresses (either may map host-located memory: then it crosses the link).
  virtual Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamId stream) {
    (void)dst, (void)src, (void)bytes, (void)stream;
    return kNotSupported;
  }

  // --- pinned host memory (cuMemHostAlloc / cuMemFreeHost) ---
  virtual Status allocate_host(std::uint64_t bytes, void** out) {
    (void)bytes, (void)out;
    return kNotSupported;
  }
  virtual Status free_host(void* ptr) {
    (void)ptr;
    return kNotSupported;
  }

  // --- managed memory (cuMemAllocManaged, cuMemAdvise, cuMemPrefetchAsync) ---
  virtual Status allocate_managed(std::uint64_t bytes, DevicePtr* out) {
    (void)bytes, (void)out;
    return kNotSupported;
  }
  virtual Status advise(DevicePtr ptr, std::uint64_t bytes, Residence preferred) {
    (void)ptr, (void)bytes, (void)preferred;
    return kNotSupported;
  }
  virtual Status prefetch(DevicePtr ptr, std::uint64_t bytes, Residence to, StreamId stream) {
    (void)ptr, (void)bytes, (void)to, (void)stream;
    return kNotSupported;
  }

  // --- virtual memory: reserve an address range, back parts of it with physical memory ---
  using PhysicalHandle = std::uint64_t;  // CUmemGenericAllocationHandle
  virtual Status vmm_granularity(std::uint64_t* bytes) {
    (void)bytes;
    return kNotSupported;
  }
  virtual Status reserve(std::uint64_t bytes, DevicePtr* out) {
    (void)bytes, (void)out;
    return kNotSupported;
  }
  virtual Status unreserve(DevicePtr ptr, std::uint64_t bytes) {
    (void)ptr, (void)bytes;
    return kNotSupported;
  }
  virtual Status create_physical(std::uint64_t bytes, PhysicalHandle* out) {
    (void)bytes, (void)out;
    return kNotSupported;
  }
  // Pinned host memory as a physical allocation (CU_MEM_LOCATION_TYPE_HOST): mapped into the
  // device's address space, the device reaches it across the link.
  virtual Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) {
    (void)bytes, (void)out;
    return kNotSupported;
  }
  virtual Status host_vmm_granularity(std::uint64_t* bytes) {
    (void)bytes;
    return kNotSupported;
  }
  virtual Status release_physical(PhysicalHandle handle) {
    (void)handle;
    return kNotSupported;
  }
  // Maps `handle` at [ptr, ptr + bytes) with read-write access for the device.
  virtual Status map(DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) {
    (void)ptr, (void)bytes, (void)handle;
    return kNotSupported;
  }
  virtual Status unmap(DevicePtr ptr, std::uint64_t bytes) {
    (void)ptr, (void)bytes;
    return kNotSupported;
  }
  // The program made memory on device `owner` reachable from device `accessor` (peer access):
  // what map() maps there from now on, and what it mapped before, gets that access too.
  virtual void grant_peer_access(int owner, int accessor) { (void)owner, (void)accessor; }
  // Whether a host wait for work queued now may never end: a stream waits for a value
  // (cuStreamWaitValue*) that work the program has not issued yet may write, and the program's
  // thread would be the one waiting. Strategies then do not wait on the host (they go over a
  // budget instead, and leave alone what only a host wait would make safe to move).
  virtual bool host_wait_may_block() { return false; }
};

}  // namespace memtool::engine
