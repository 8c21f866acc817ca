// DriverDevice: the engine's Device (memtool/engine/device.hpp) over the REAL driver entry
// points — the hook table's real slots for hooked functions and the driver's own symbols for the
// rest, never our wrappers, so what the engine does (allocate a pool, record an event, copy a
// buffer out) is neither recorded nor re-entered. Unit tests fill DriverFunctions with fakes.
//
// Capture-safe (issue 32), given the process's CaptureTracker: every call runs inside an
// InternalCall (relaxed capture mode while captures run), and a program stream that is capturing
// is never touched. What the engine asks of such a stream S is done on memtool's own detour
// stream instead, after S's marker (the work S was given before its capture: all S runs before
// the capture ends): record_event(e, S) records e there; stream_wait_event(S, e) waits on the
// host for e (memtool's own event, never a captured one), so whatever S is given later is
// ordered after it anyway; an allocation, copy or prefetch ordered on S runs there and the host
// waits for it; a free ordered on S is queued there.
//
// Per-thread default streams come as ids (per_thread_streams.hpp): the calling thread's is the
// handle CU_STREAM_PER_THREAD; another thread's is reached through the legacy stream, ordered
// with every blocking stream, and refused while a blocking stream captures (a wait on it is
// then the host's).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "memtool/engine/device.hpp"
#include "memtool/interpose/capture_tracker.hpp"
#include "memtool/interpose/cuda_api.hpp"

namespace memtool::interpose {

// X(field, symbol, route): every driver function the engine may call, with cuda.h's type; route
// `hook` for a function libmemtool.so hooks (its real pointer is the hook table's real slot),
// `driver` for the others (the driver's own symbol).
#define MEMTOOL_DRIVER_FUNCTIONS(X)                                  \
  X(mem_alloc, cuMemAlloc_v2, hook)                                  \
  X(mem_free, cuMemFree_v2, hook)                                    \
  X(mem_alloc_async, cuMemAllocAsync, hook)                          \
  X(mem_alloc_from_pool, cuMemAllocFromPoolAsync, hook)              \
  X(mem_free_async, cuMemFreeAsync, hook)                            \
  X(mem_get_info, cuMemGetInfo_v2, hook)                             \
  X(event_create, cuEventCreate, driver)                             \
  X(event_record, cuEventRecord, driver)                             \
  X(event_query, cuEventQuery, driver)                               \
  X(event_synchronize, cuEventSynchronize, hook)                     \
  X(event_destroy, cuEventDestroy_v2, driver)                        \
  X(event_elapsed_time, cuEventElapsedTime_v2, driver)               \
  X(stream_wait_event, cuStreamWaitEvent, hook)                      \
  X(stream_create, cuStreamCreate, hook)                             \
  X(stream_destroy, cuStreamDestroy_v2, driver)                      \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync_v2, hook)                   \
  X(memcpy_htod_async, cuMemcpyHtoDAsync_v2, hook)                   \
  X(memcpy_dtod_async, cuMemcpyDtoDAsync_v2, hook)                   \
  X(mem_host_alloc, cuMemHostAlloc, hook)                            \
  X(mem_free_host, cuMemFreeHost, hook)                              \
  X(mem_alloc_managed, cuMemAllocManaged, hook)                      \
  X(mem_advise, cuMemAdvise_v2, driver)                              \
  X(mem_prefetch, cuMemPrefetchAsync_v2, driver)                     \
  X(ctx_get_device, cuCtxGetDevice, driver)                          \
  X(address_reserve, cuMemAddressReserve, driver)                    \
  X(address_free, cuMemAddressFree, driver)                          \
  X(mem_create, cuMemCreate, hook)                                   \
  X(mem_release, cuMemRelease, hook)                                 \
  X(mem_map, cuMemMap, hook)                                         \
  X(mem_set_access, cuMemSetAccess, driver)                          \
  X(mem_unmap, cuMemUnmap, hook)                                     \
  X(allocation_granularity, cuMemGetAllocationGranularity, driver)   \
  X(mem_get_address_range, cuMemGetAddressRange_v2, hook)            \
  X(ipc_get_mem_handle, cuIpcGetMemHandle, hook)                     \
  X(ipc_open_mem_handle, cuIpcOpenMemHandle_v2, hook)                \
  X(ipc_close_mem_handle, cuIpcCloseMemHandle, hook)                 \
  X(mem_retain_allocation_handle, cuMemRetainAllocationHandle, hook) \
  X(mem_export_to_shareable, cuMemExportToShareableHandle, driver)   \
  X(pointer_get_attribute, cuPointerGetAttribute, hook)              \
  X(memset_d32_async, cuMemsetD32Async, hook)                        \
  X(launch_host_func, cuLaunchHostFunc, driver)                      \
  X(device_count, cuDeviceGetCount, driver)                          \
  X(default_mem_pool, cuDeviceGetDefaultMemPool, driver)             \
  X(current_mem_pool, cuDeviceGetMemPool, driver)                    \
  X(mem_pool_get_attribute, cuMemPoolGetAttribute, driver)           \
  X(mem_pool_trim_to, cuMemPoolTrimTo, driver)                       \
  X(mem_import_from_shareable, cuMemImportFromShareableHandle, driver)

struct DriverFunctions {
#define MEMTOOL_DRIVER_FIELD(field, symbol, route) decltype(&::symbol) field = nullptr;
  MEMTOOL_DRIVER_FUNCTIONS(MEMTOOL_DRIVER_FIELD)
#undef MEMTOOL_DRIVER_FIELD

  // What every strategy needs: allocation and the events of stream-ordered reuse (the async
  // pair and the rest may be missing on old drivers: what needs them then passes through).
  [[nodiscard]] bool complete() const {
    return mem_alloc != nullptr && mem_free != nullptr && event_create != nullptr && event_record != nullptr &&
           event_query != nullptr && event_destroy != nullptr && stream_wait_event != nullptr;
  }
};

class DriverDevice final : public engine::Device {
 public:
  // `captures` may be null (no capture tracking: unit tests of other parts).
  explicit DriverDevice(const DriverFunctions& functions, CaptureTracker* captures = nullptr)
      : f_(functions), captures_(captures) {}
  [[nodiscard]] const DriverFunctions& functions() const { return f_; }
  // Calls that went to the detour stream because their stream was capturing.
  [[nodiscard]] std::uint64_t detours() const { return detours_.load(std::memory_order_relaxed); }

  engine::Status allocate(std::uint64_t size, engine::MemoryKind kind, engine::StreamId stream,
                          engine::DevicePtr* out) override;
  engine::Status allocate_from_pool(std::uint64_t size, std::uint64_t pool, engine::StreamId stream,
                                    engine::DevicePtr* out) override;
  engine::Status free(engine::DevicePtr ptr, engine::MemoryKind kind, engine::StreamId stream) override;
  std::uint64_t pool_of(engine::DevicePtr ptr) override;
  engine::Status pool_figures(std::uint64_t pool, PoolFigures* out) override;
  engine::Status trim_pool(std::uint64_t pool, std::uint64_t keep) override;
  engine::Status memory_info(std::uint64_t* free_bytes, std::uint64_t* total_bytes) override;
  engine::Status create_event(engine::EventId* out) override;
  engine::Status record_event(engine::EventId event, engine::StreamId stream) override;
  engine::Status stream_wait_event(engine::StreamId stream, engine::EventId event) override;
  bool event_completed(engine::EventId event) override;
  void destroy_event(engine::EventId event) override;
  engine::Status synchronize_event(engine::EventId event) override;
  engine::Status create_timing_event(engine::EventId* out) override;
  engine::Status elapsed_ns(engine::EventId start, engine::EventId end, double* out) override;
  engine::Status create_stream(engine::StreamId* out) override;
  engine::Status destroy_stream(engine::StreamId stream) override;
  engine::Status copy_to_host(void* dst, engine::DevicePtr src, std::uint64_t bytes, engine::StreamId stream) override;
  engine::Status copy_to_device(engine::DevicePtr dst, const void* src, std::uint64_t bytes,
                                engine::StreamId stream) override;
  engine::Status allocate_host(std::uint64_t bytes, void** out) override;
  engine::Status free_host(void* ptr) override;
  engine::Status allocate_managed(std::uint64_t bytes, engine::DevicePtr* out) override;
  engine::Status advise(engine::DevicePtr ptr, std::uint64_t bytes, engine::Residence preferred) override;
  engine::Status prefetch(engine::DevicePtr ptr, std::uint64_t bytes, engine::Residence to,
                          engine::StreamId stream) override;
  engine::Status vmm_granularity(std::uint64_t* bytes) override;
  engine::Status host_vmm_granularity(std::uint64_t* bytes) override;
  engine::Status create_host_physical(std::uint64_t bytes, PhysicalHandle* out) override;
  engine::Status copy_device(engine::DevicePtr dst, engine::DevicePtr src, std::uint64_t bytes,
                             engine::StreamId stream) override;
  engine::Status reserve(std::uint64_t bytes, engine::DevicePtr* out) override;
  engine::Status unreserve(engine::DevicePtr ptr, std::uint64_t bytes) override;
  engine::Status create_physical(std::uint64_t bytes, PhysicalHandle* out) override;
  engine::Status release_physical(PhysicalHandle handle) override;
  engine::Status map(engine::DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) override;
  engine::Status unmap(engine::DevicePtr ptr, std::uint64_t bytes) override;
  void grant_peer_access(int owner, int accessor) override;
  // A stream of the program now waits for a value (cuStreamWaitValue*, a batch's waits, or
  // memtool's stand-in for one): until an event recorded after it there has completed, a host
  // wait for work queued after it may never end (its writer may not be issued yet).
  void value_wait_issued(CUstream stream);
  bool host_wait_may_block() override;

  // Devices whose peer-access grants are remembered (a device beyond them gets only its own).
  static constexpr int kMaxDevices = 64;

 private:
  // Read-write access to [ptr, ptr + bytes) for `owner` and every device granted access to it.
  CUresult set_access(engine::DevicePtr ptr, std::uint64_t bytes, CUdevice owner);
  [[nodiscard]] CUdevice device() const;
  engine::Status granularity_of(const CUmemAllocationProp& prop, std::uint64_t* bytes);
  engine::Status create_with(const CUmemAllocationProp& prop, std::uint64_t bytes, PhysicalHandle* out);

  // The stream memtool may use for work ordered on `stream` now: `stream` itself, or (it is
  // capturing) the detour stream made to wait for its marker. Fails when there is no marker.
  struct Route {
    CUstream stream = nullptr;
    bool detoured = false;
  };
  engine::Status route(engine::StreamId stream, Route* out);
  [[nodiscard]] bool capturing(engine::StreamId stream) const;
  engine::Status detour_stream(CUstream* out);
  // The host waits for what was queued on the detour stream so far.
  engine::Status finish_detour();
  template <class Enqueue>
  engine::Status ordered_work(engine::StreamId stream, Enqueue enqueue);

  DriverFunctions f_;
  CaptureTracker* captures_;
  // Peer access (grant_peer_access): per owner device, the devices that reach its memory; and
  // the ranges map() mapped, with their device, so a later grant reaches them too.
  std::atomic<std::uint64_t> accessors_[kMaxDevices] = {};
  std::mutex mappings_mutex_;
  std::map<engine::DevicePtr, std::pair<std::uint64_t, CUdevice>> mappings_;
  std::mutex detour_mutex_;
  CUstream detour_ = nullptr;
  CUevent detour_done_ = nullptr;
  std::atomic<std::uint64_t> detours_{0};
  // Events recorded after the value waits of the program not known to be over (value_wait_issued).
  std::mutex value_waits_mutex_;
  std::vector<CUevent> value_waits_;
  std::atomic<bool> any_value_wait_{false};
};

}  // namespace memtool::interpose
