// The pool core's only door to a real device. Everything the engine does to memory or streams
// (allocate the pool, fall back to the real allocator, record and wait on events) goes through
// DeviceOps: libmemtool.so implements it with the real driver entry points, the unit tests
// with a simulated device that models asynchronous streams, the benchmark with no-ops.
//
// Statuses are the driver's own codes (CUresult values as integers), so a hook can return
// what the real allocator said unchanged (invariant 3, transparency).
#pragma once

#include <cstdint>

#include "memtool/trace/event.hpp"

namespace memtool::pool {

using DevicePtr = std::uint64_t;  // CUdeviceptr
using StreamId = std::uint64_t;   // CUstream as an opaque handle; 0 is the legacy default stream
using EventId = std::uint64_t;    // CUevent as an opaque handle
using DriverStatus = int;         // CUresult
using trace::MemoryKind;

inline constexpr DriverStatus kSuccess = 0;       // CUDA_SUCCESS
inline constexpr DriverStatus kOutOfMemory = 2;   // CUDA_ERROR_OUT_OF_MEMORY
inline constexpr DriverStatus kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // The real allocator: cuMemAlloc (kind device, stream ignored) or cuMemAllocAsync (kind
  // async, ordered on `stream`). Writes *out only on success.
  virtual DriverStatus allocate(std::uint64_t size, MemoryKind kind, StreamId stream,
                                DevicePtr* out) = 0;
  // cuMemFree, or cuMemFreeAsync on `stream` for kind async.
  virtual DriverStatus free(DevicePtr ptr, MemoryKind kind, StreamId stream) = 0;

  // Events order reuse of pool memory across streams without synchronising the host.
  virtual DriverStatus create_event(EventId* out) = 0;  // cuEventCreate(DISABLE_TIMING)
  virtual DriverStatus record_event(EventId event, StreamId stream) = 0;       // cuEventRecord
  virtual DriverStatus stream_wait_event(StreamId stream, EventId event) = 0;  // cuStreamWaitEvent
  // cuEventQuery == CUDA_SUCCESS: the work before the record has finished on the device.
  virtual bool event_completed(EventId event) = 0;
  virtual void destroy_event(EventId event) = 0;  // cuEventDestroy
};

}  // namespace memtool::pool
