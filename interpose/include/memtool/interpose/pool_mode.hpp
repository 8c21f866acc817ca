// Pool mode inside libmemtool.so (MEMTOOL_STRATEGY=pool): the PoolEngine (pool/) driven by the
// hooks, with a DeviceOps made of the REAL driver functions — the hook table's real pointers and
// the event functions looked up from the driver, never our own wrappers, so the engine's calls
// are neither recorded nor re-entered.
//
// PoolMode is the hooks' only door to the engine and the place of fail-open (DESIGN.md §2,
// invariant 4): every member is noexcept; the first internal failure (an exception out of the
// engine) stops pool mode for NEW allocations (engine.shutdown()), is logged once, and from then
// on allocations go straight to the driver. Frees still go through the engine, so pooled buffers
// that are live at that moment are returned to their pool (never handed to cuMemFree).
//
// Pointer attribute queries (cuPointerGetAttribute and friends) are not hooked: a pooled buffer
// lies inside the pool's one driver allocation, so the driver answers for the pool's range (its
// RANGE_START_ADDR / RANGE_SIZE are the pool's; memory type, device and context are right).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "memtool/interpose/cuda_api.hpp"
#include "memtool/pool/device_ops.hpp"
#include "memtool/pool/engine.hpp"
#include "memtool/pool/summary.hpp"

namespace memtool::interpose {

// The real driver entry points pool mode calls. In libmemtool.so they come from the hook
// table's real slots and the driver; unit tests pass fakes.
struct DriverFunctions {
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;                // cuMemAlloc_v2
  CUresult (*mem_free)(CUdeviceptr) = nullptr;                          // cuMemFree_v2
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, CUstream) = nullptr;  // cuMemAllocAsync
  CUresult (*mem_free_async)(CUdeviceptr, CUstream) = nullptr;          // cuMemFreeAsync
  CUresult (*event_create)(CUevent*, unsigned int) = nullptr;           // cuEventCreate
  CUresult (*event_record)(CUevent, CUstream) = nullptr;                // cuEventRecord
  CUresult (*event_query)(CUevent) = nullptr;                           // cuEventQuery
  CUresult (*event_destroy)(CUevent) = nullptr;                         // cuEventDestroy_v2
  CUresult (*stream_wait_event)(CUstream, CUevent, unsigned int) = nullptr;  // cuStreamWaitEvent

  // True when every function pool mode needs is there (the async pair may be missing on old
  // drivers: async requests then pass through untouched).
  [[nodiscard]] bool complete() const {
    return mem_alloc != nullptr && mem_free != nullptr && event_create != nullptr && event_record != nullptr &&
           event_query != nullptr && event_destroy != nullptr && stream_wait_event != nullptr;
  }
};

// DeviceOps over the real driver functions.
class DriverDeviceOps final : public pool::DeviceOps {
 public:
  explicit DriverDeviceOps(const DriverFunctions& functions) : f_(functions) {}
  pool::DriverStatus allocate(std::uint64_t size, pool::MemoryKind kind, pool::StreamId stream,
                              pool::DevicePtr* out) override;
  pool::DriverStatus free(pool::DevicePtr ptr, pool::MemoryKind kind, pool::StreamId stream) override;
  pool::DriverStatus create_event(pool::EventId* out) override;
  pool::DriverStatus record_event(pool::EventId event, pool::StreamId stream) override;
  pool::DriverStatus stream_wait_event(pool::StreamId stream, pool::EventId event) override;
  bool event_completed(pool::EventId event) override;
  void destroy_event(pool::EventId event) override;
  [[nodiscard]] const DriverFunctions& functions() const { return f_; }

 private:
  DriverFunctions f_;
};

struct PoolModeSettings {
  bool synchronous_planning = false;
  pool::PoolOptions engine;  // its `log` is replaced by memtool's log (info)
};

class PoolMode {
 public:
  PoolMode(const DriverFunctions& functions, PoolModeSettings settings);
  ~PoolMode();
  PoolMode(const PoolMode&) = delete;
  PoolMode& operator=(const PoolMode&) = delete;

  // cuMemAlloc_v2 (kind device) / cuMemAllocAsync (kind async, on `stream`). The driver's
  // status, or CUDA_SUCCESS for a pooled hand-out.
  CUresult allocate(CUdeviceptr* out, std::uint64_t size, pool::MemoryKind kind, pool::StreamId stream) noexcept;
  // cuMemFree_v2 / cuMemFreeAsync: a pooled buffer goes back to its pool; anything else reaches
  // the real free with the same arguments.
  CUresult release(CUdeviceptr ptr, pool::MemoryKind kind, pool::StreamId stream) noexcept;
  // Work on `stream` is about to touch the buffer containing `address`.
  void touch(std::uint64_t address, pool::StreamId stream) noexcept;
  void mark_iteration() noexcept;
  // cuMemGetInfo's free bytes as the program would see them without the pool.
  [[nodiscard]] std::uint64_t program_free(std::uint64_t driver_free) const noexcept;

  // Exit: stop serving new allocations, join the planner, return the summary. Calls no driver
  // function: by the time exit handlers run, the calling thread's thread_local objects are gone
  // (glibc destroys them first), and with them, in fakecuda at least, its current context — a
  // cuMemFree there fails or worse. Pools not released at a context teardown (the hooks on
  // cuCtxDestroy / cuDevicePrimaryCtxRelease / Reset) go with the process.
  pool::Summary finish() noexcept;
  [[nodiscard]] pool::Summary summary() const noexcept;
  [[nodiscard]] bool serving() const noexcept { return !failed_.load(std::memory_order_relaxed); }
  // The program is destroying or releasing its context: stop serving, free the idle pools now
  // (pools with live buffers die with the context), log it at info level.
  void end_with_context(std::string_view why) noexcept;
  // Fail-open (also used by the preload when the recorder fails: touches are then unknown).
  void disable(std::string_view reason) noexcept;

 private:
  DriverDeviceOps ops_;
  std::unique_ptr<pool::PoolEngine> engine_;
  std::atomic<bool> failed_{false};
};

}  // namespace memtool::interpose
