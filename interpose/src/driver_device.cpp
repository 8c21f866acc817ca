// DriverDevice: the engine's Device over the real driver (see driver_device.hpp).
#include "memtool/interpose/driver_device.hpp"

#include <cstdint>

#include "memtool/interpose/per_thread_streams.hpp"

namespace memtool::interpose {
namespace {

using engine::kNotSupported;
using engine::Status;

// The calling thread's name for a stream of the engine's: the handle 2 for its own per-thread
// stream, CU_STREAM_LEGACY for another thread's (route() and stream_wait_event() say why).
CUstream as_stream(engine::StreamId stream) { return stream_handle(stream); }
CUevent as_event(engine::EventId event) { return reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(event)); }
Status status(CUresult result) { return static_cast<Status>(result); }

using InternalCall = CaptureTracker::InternalCall;

// An event created with `flags`; `out` set only when the driver made one.
Status new_event(const DriverFunctions& f, unsigned int flags, engine::EventId* out) {
  CUevent event = nullptr;
  const CUresult result = f.event_create(&event, flags);
  if (result == CUDA_SUCCESS) *out = reinterpret_cast<std::uintptr_t>(event);
  return status(result);
}

}  // namespace

// --- capture safety -----------------------------------------------------------------------------

bool DriverDevice::capturing(engine::StreamId stream) const {
  return captures_ != nullptr && captures_->any() && captures_->stream_state(stream) != StreamCapture::none;
}

Status DriverDevice::detour_stream(CUstream* out) {
  std::lock_guard lock(detour_mutex_);
  if (detour_ == nullptr) {
    if (f_.stream_create == nullptr || f_.event_create == nullptr) return kNotSupported;
    CUstream stream = nullptr;
    CUevent done = nullptr;
    CUresult result = f_.stream_create(&stream, CU_STREAM_NON_BLOCKING);
    if (result != CUDA_SUCCESS) return status(result);
    result = f_.event_create(&done, CU_EVENT_DISABLE_TIMING);
    if (result != CUDA_SUCCESS) {
      if (f_.stream_destroy != nullptr) (void)f_.stream_destroy(stream);
      return status(result);
    }
    detour_ = stream;
    detour_done_ = done;
  }
  *out = detour_;
  return engine::kSuccess;
}

Status DriverDevice::route(engine::StreamId stream, Route* out) {
  if (is_foreign_per_thread_stream(stream)) {
    // Another thread's per-thread stream cannot be named here. The legacy stream stands in for
    // it: work queued there runs after all earlier work of every blocking stream (that one
    // included) and before their later work, so an event recorded there completes after what
    // that thread queued so far, and a copy there is ordered both ways. While a blocking stream
    // captures, the legacy stream is off limits and there is nothing to order after: refused
    // (the pool then keeps the range; a device-side wait becomes a host wait below).
    if (capturing(stream)) return kNotSupported;
    *out = Route{CU_STREAM_LEGACY, false};
    return engine::kSuccess;
  }
  if (!capturing(stream)) {
    *out = Route{as_stream(stream), false};
    return engine::kSuccess;
  }
  // The gate the caller's InternalCall holds keeps the marker and the capture as they are.
  const std::optional<CUevent> marker = captures_->marker(stream);
  if (!marker || f_.stream_wait_event == nullptr) return kNotSupported;  // nothing to order after
  CUstream detour = nullptr;
  if (const Status s = detour_stream(&detour); s != engine::kSuccess) return s;
  if (const CUresult r = f_.stream_wait_event(detour, *marker, 0); r != CUDA_SUCCESS) return status(r);
  detours_.fetch_add(1, std::memory_order_relaxed);
  *out = Route{detour, true};
  return engine::kSuccess;
}

Status DriverDevice::finish_detour() {
  if (f_.event_synchronize == nullptr) return kNotSupported;
  std::lock_guard lock(detour_mutex_);
  const CUresult recorded = f_.event_record(detour_done_, detour_);
  if (recorded != CUDA_SUCCESS) return status(recorded);
  return status(f_.event_synchronize(detour_done_));
}

// --- the Device ---------------------------------------------------------------------------------

CUdevice DriverDevice::device() const {
  CUdevice device = 0;
  if (f_.ctx_get_device != nullptr) (void)f_.ctx_get_device(&device);
  return device;
}

Status DriverDevice::allocate(std::uint64_t size, engine::MemoryKind kind, engine::StreamId stream,
                              engine::DevicePtr* out) {
  const InternalCall internal(captures_);
  CUdeviceptr ptr = 0;
  CUresult result = CUDA_ERROR_NOT_SUPPORTED;
  Route on;
  if (kind == engine::MemoryKind::async) {
    if (const Status s = route(stream, &on); s != engine::kSuccess) return s;
    if (f_.mem_alloc_async != nullptr) result = f_.mem_alloc_async(&ptr, size, on.stream);
    // Later work on the capturing stream is ordered after this only through the host.
    if (result == CUDA_SUCCESS && on.detoured && finish_detour() != engine::kSuccess) {
      if (f_.mem_free_async != nullptr) (void)f_.mem_free_async(ptr, on.stream);
      return kNotSupported;
    }
  } else if (f_.mem_alloc != nullptr) {
    result = f_.mem_alloc(&ptr, size);
  }
  if (result == CUDA_SUCCESS) *out = static_cast<engine::DevicePtr>(ptr);
  return status(result);
}

Status DriverDevice::allocate_from_pool(std::uint64_t size, std::uint64_t pool, engine::StreamId stream,
                                        engine::DevicePtr* out) {
  const InternalCall internal(captures_);
  if (f_.mem_alloc_from_pool == nullptr) return kNotSupported;
  Route on;
  if (const Status s = route(stream, &on); s != engine::kSuccess) return s;
  CUdeviceptr ptr = 0;
  const CUresult result =
      f_.mem_alloc_from_pool(&ptr, size, reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(pool)), on.stream);
  if (result == CUDA_SUCCESS && on.detoured && finish_detour() != engine::kSuccess) {
    if (f_.mem_free_async != nullptr) (void)f_.mem_free_async(ptr, on.stream);
    return kNotSupported;
  }
  if (result == CUDA_SUCCESS) *out = static_cast<engine::DevicePtr>(ptr);
  return status(result);
}

Status DriverDevice::free(engine::DevicePtr ptr, engine::MemoryKind kind, engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (kind == engine::MemoryKind::async) {
    if (f_.mem_free_async == nullptr) return kNotSupported;
    Route on;
    if (const Status s = route(stream, &on); s != engine::kSuccess) return s;
    return status(f_.mem_free_async(static_cast<CUdeviceptr>(ptr), on.stream));
  }
  if (f_.mem_free == nullptr) return kNotSupported;
  return status(f_.mem_free(static_cast<CUdeviceptr>(ptr)));
}

// --- stream-ordered pools ------------------------------------------------------------------------

std::uint64_t DriverDevice::pool_of(engine::DevicePtr ptr) {
  const InternalCall internal(captures_);
  if (f_.pointer_get_attribute == nullptr) return 0;
  CUmemoryPool pool = nullptr;
  if (f_.pointer_get_attribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, static_cast<CUdeviceptr>(ptr)) !=
      CUDA_SUCCESS) {
    return 0;
  }
  return reinterpret_cast<std::uintptr_t>(pool);
}

Status DriverDevice::pool_figures(std::uint64_t pool, PoolFigures* out) {
  const InternalCall internal(captures_);
  if (f_.mem_pool_get_attribute == nullptr) return kNotSupported;
  const auto handle = reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(pool));
  cuuint64_t reserved = 0;
  cuuint64_t used = 0;
  cuuint64_t threshold = 0;
  CUresult result = f_.mem_pool_get_attribute(handle, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  if (result == CUDA_SUCCESS) result = f_.mem_pool_get_attribute(handle, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  if (result == CUDA_SUCCESS) {
    result = f_.mem_pool_get_attribute(handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  }
  if (result != CUDA_SUCCESS) return status(result);
  *out = PoolFigures{reserved, used, threshold};
  return engine::kSuccess;
}

// Not while a stream captures: the driver documents no capture rules for trimming, so memtool
// does not find out (the pool's memory then stays counted, and room is made by swapping).
Status DriverDevice::trim_pool(std::uint64_t pool, std::uint64_t keep) {
  if (f_.mem_pool_trim_to == nullptr || (captures_ != nullptr && captures_->any())) return kNotSupported;
  const InternalCall internal(captures_);
  return status(f_.mem_pool_trim_to(reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(pool)), keep));
}

Status DriverDevice::memory_info(std::uint64_t* free_bytes, std::uint64_t* total_bytes) {
  const InternalCall internal(captures_);
  if (f_.mem_get_info == nullptr) return kNotSupported;
  size_t f = 0;
  size_t t = 0;
  const CUresult result = f_.mem_get_info(&f, &t);
  if (result == CUDA_SUCCESS) {
    if (free_bytes != nullptr) *free_bytes = f;
    if (total_bytes != nullptr) *total_bytes = t;
  }
  return status(result);
}

Status DriverDevice::create_event(engine::EventId* out) {
  const InternalCall internal(captures_);
  return new_event(f_, CU_EVENT_DISABLE_TIMING, out);
}

Status DriverDevice::record_event(engine::EventId event, engine::StreamId stream) {
  const InternalCall internal(captures_);
  // Another thread's per-thread stream while a blocking stream captures: it exists, but cannot
  // be named until the capture ends (route); said apart from a destroyed stream's error.
  if (is_foreign_per_thread_stream(stream) && capturing(stream)) return engine::kCaptureImplicit;
  Route on;
  if (const Status s = route(stream, &on); s != engine::kSuccess) return s;
  return status(f_.event_record(as_event(event), on.stream));
}

Status DriverDevice::stream_wait_event(engine::StreamId stream, engine::EventId event) {
  const InternalCall internal(captures_);
  if (capturing(stream)) {
    // A wait would pull memtool's event into the capture (or be refused): the host waits for it
    // instead, and the stream's later work, which runs no sooner than now, is ordered after it.
    if (f_.event_synchronize == nullptr) return kNotSupported;
    detours_.fetch_add(1, std::memory_order_relaxed);
    return status(f_.event_synchronize(as_event(event)));
  }
  // Another thread's per-thread stream (not capturing: the legacy stream is usable) waits
  // through the legacy stream, whose wait its later work is ordered after.
  return status(f_.stream_wait_event(as_stream(stream), as_event(event), 0));
}

bool DriverDevice::event_completed(engine::EventId event) {
  const InternalCall internal(captures_);
  return f_.event_query(as_event(event)) == CUDA_SUCCESS;
}

void DriverDevice::destroy_event(engine::EventId event) {
  const InternalCall internal(captures_);
  (void)f_.event_destroy(as_event(event));
}

Status DriverDevice::synchronize_event(engine::EventId event) {
  const InternalCall internal(captures_);
  if (f_.event_synchronize == nullptr) return kNotSupported;
  return status(f_.event_synchronize(as_event(event)));
}

Status DriverDevice::create_timing_event(engine::EventId* out) {
  const InternalCall internal(captures_);
  return new_event(f_, CU_EVENT_DEFAULT, out);
}

// cuEventElapsedTime_v2 (CUDA 12.8 on); older drivers have only the first version, which memtool
// does not resolve: their op times come from the host.
Status DriverDevice::elapsed_ns(engine::EventId start, engine::EventId end, double* out) {
  const InternalCall internal(captures_);
  if (f_.event_elapsed_time == nullptr) return kNotSupported;
  float ms = 0;
  const CUresult result = f_.event_elapsed_time(&ms, as_event(start), as_event(end));
  if (result == CUDA_SUCCESS) *out = static_cast<double>(ms) * 1e6;
  return status(result);
}

Status DriverDevice::create_stream(engine::StreamId* out) {
  const InternalCall internal(captures_);
  if (f_.stream_create == nullptr) return kNotSupported;
  CUstream stream = nullptr;
  const CUresult result = f_.stream_create(&stream, CU_STREAM_NON_BLOCKING);
  if (result == CUDA_SUCCESS) *out = reinterpret_cast<std::uintptr_t>(stream);
  return status(result);
}

Status DriverDevice::destroy_stream(engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (f_.stream_destroy == nullptr) return kNotSupported;
  return status(f_.stream_destroy(as_stream(stream)));
}

// Work ordered on a stream: on the detour when the stream captures, the host then waiting for it.
template <class Enqueue>
Status DriverDevice::ordered_work(engine::StreamId stream, Enqueue enqueue) {
  Route on;
  if (const Status s = route(stream, &on); s != engine::kSuccess) return s;
  const CUresult result = enqueue(on.stream);
  if (result != CUDA_SUCCESS || !on.detoured) return status(result);
  return finish_detour();
}

Status DriverDevice::copy_to_host(void* dst, engine::DevicePtr src, std::uint64_t bytes, engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (f_.memcpy_dtoh_async == nullptr) return kNotSupported;
  return ordered_work(stream,
                      [&](CUstream on) { return f_.memcpy_dtoh_async(dst, static_cast<CUdeviceptr>(src), bytes, on); });
}

Status DriverDevice::copy_to_device(engine::DevicePtr dst, const void* src, std::uint64_t bytes,
                                    engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (f_.memcpy_htod_async == nullptr) return kNotSupported;
  return ordered_work(stream,
                      [&](CUstream on) { return f_.memcpy_htod_async(static_cast<CUdeviceptr>(dst), src, bytes, on); });
}

Status DriverDevice::copy_device(engine::DevicePtr dst, engine::DevicePtr src, std::uint64_t bytes,
                                 engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (f_.memcpy_dtod_async == nullptr) return kNotSupported;
  return ordered_work(stream, [&](CUstream on) {
    return f_.memcpy_dtod_async(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes, on);
  });
}

Status DriverDevice::allocate_host(std::uint64_t bytes, void** out) {
  const InternalCall internal(captures_);
  if (f_.mem_host_alloc == nullptr) return kNotSupported;
  return status(f_.mem_host_alloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE));
}

Status DriverDevice::free_host(void* ptr) {
  const InternalCall internal(captures_);
  if (f_.mem_free_host == nullptr) return kNotSupported;
  return status(f_.mem_free_host(ptr));
}

Status DriverDevice::allocate_managed(std::uint64_t bytes, engine::DevicePtr* out) {
  const InternalCall internal(captures_);
  if (f_.mem_alloc_managed == nullptr) return kNotSupported;
  CUdeviceptr ptr = 0;
  const CUresult result = f_.mem_alloc_managed(&ptr, bytes, CU_MEM_ATTACH_GLOBAL);
  if (result == CUDA_SUCCESS) *out = static_cast<engine::DevicePtr>(ptr);
  return status(result);
}

namespace {
CUmemLocation location_of(engine::Residence where, CUdevice device) {
  CUmemLocation location{};
  location.type = where == engine::Residence::host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = where == engine::Residence::host ? 0 : device;
  return location;
}
}  // namespace

Status DriverDevice::advise(engine::DevicePtr ptr, std::uint64_t bytes, engine::Residence preferred) {
  const InternalCall internal(captures_);
  if (f_.mem_advise == nullptr) return kNotSupported;
  return status(f_.mem_advise(static_cast<CUdeviceptr>(ptr), bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                              location_of(preferred, device())));
}

Status DriverDevice::prefetch(engine::DevicePtr ptr, std::uint64_t bytes, engine::Residence to,
                              engine::StreamId stream) {
  const InternalCall internal(captures_);
  if (f_.mem_prefetch == nullptr) return kNotSupported;
  const CUmemLocation location = location_of(to, device());
  return ordered_work(
      stream, [&](CUstream on) { return f_.mem_prefetch(static_cast<CUdeviceptr>(ptr), bytes, location, 0, on); });
}

namespace {
CUmemAllocationProp device_allocation(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Pinned host memory not bound to a NUMA node (CU_MEM_LOCATION_TYPE_HOST, CUDA 12.2 on).
CUmemAllocationProp host_allocation() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  prop.location.id = 0;
  return prop;
}
}  // namespace

Status DriverDevice::granularity_of(const CUmemAllocationProp& prop, std::uint64_t* bytes) {
  const InternalCall internal(captures_);
  if (f_.allocation_granularity == nullptr) return kNotSupported;
  size_t granularity = 0;
  const CUresult result = f_.allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (result == CUDA_SUCCESS) *bytes = granularity;
  return status(result);
}

Status DriverDevice::vmm_granularity(std::uint64_t* bytes) {
  return granularity_of(device_allocation(device()), bytes);
}

Status DriverDevice::host_vmm_granularity(std::uint64_t* bytes) { return granularity_of(host_allocation(), bytes); }

Status DriverDevice::reserve(std::uint64_t bytes, engine::DevicePtr* out) {
  const InternalCall internal(captures_);
  if (f_.address_reserve == nullptr) return kNotSupported;
  CUdeviceptr ptr = 0;
  const CUresult result = f_.address_reserve(&ptr, bytes, 0, 0, 0);
  if (result == CUDA_SUCCESS) *out = static_cast<engine::DevicePtr>(ptr);
  return status(result);
}

Status DriverDevice::unreserve(engine::DevicePtr ptr, std::uint64_t bytes) {
  const InternalCall internal(captures_);
  if (f_.address_free == nullptr) return kNotSupported;
  return status(f_.address_free(static_cast<CUdeviceptr>(ptr), bytes));
}

Status DriverDevice::create_with(const CUmemAllocationProp& prop, std::uint64_t bytes, PhysicalHandle* out) {
  const InternalCall internal(captures_);
  if (f_.mem_create == nullptr) return kNotSupported;
  CUmemGenericAllocationHandle handle = 0;
  const CUresult result = f_.mem_create(&handle, bytes, &prop, 0);
  if (result == CUDA_SUCCESS) *out = handle;
  return status(result);
}

// Exportable as a POSIX file descriptor (an exported buffer's memory is shared that way,
// ipc_bridge.hpp); a driver that cannot make such memory gets the plain kind.
Status DriverDevice::create_physical(std::uint64_t bytes, PhysicalHandle* out) {
  CUmemAllocationProp prop = device_allocation(device());
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  const Status status = create_with(prop, bytes, out);
  if (status == engine::kSuccess || status == engine::kOutOfMemory) return status;
  return create_with(device_allocation(device()), bytes, out);
}

Status DriverDevice::create_host_physical(std::uint64_t bytes, PhysicalHandle* out) {
  return create_with(host_allocation(), bytes, out);
}

Status DriverDevice::release_physical(PhysicalHandle handle) {
  const InternalCall internal(captures_);
  if (f_.mem_release == nullptr) return kNotSupported;
  return status(f_.mem_release(handle));
}

CUresult DriverDevice::set_access(engine::DevicePtr ptr, std::uint64_t bytes, CUdevice owner) {
  CUmemAccessDesc access[kMaxDevices + 1] = {};
  std::size_t n = 0;
  access[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[n].location.id = owner;
  access[n++].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const std::uint64_t peers = owner >= 0 && owner < kMaxDevices ? accessors_[owner].load(std::memory_order_acquire) : 0;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (d == owner || (peers & (std::uint64_t{1} << d)) == 0) continue;
    access[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[n].location.id = d;
    access[n++].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return f_.mem_set_access(static_cast<CUdeviceptr>(ptr), bytes, access, n);
}

// Mapped with the access the program's own memory on that device has: its device, and every peer
// the program enabled (DESIGN.md §9, several devices).
Status DriverDevice::map(engine::DevicePtr ptr, std::uint64_t bytes, PhysicalHandle handle) {
  const InternalCall internal(captures_);
  if (f_.mem_map == nullptr || f_.mem_set_access == nullptr) return kNotSupported;
  CUresult result = f_.mem_map(static_cast<CUdeviceptr>(ptr), bytes, 0, handle, 0);
  if (result != CUDA_SUCCESS) return status(result);
  const CUdevice owner = device();
  std::lock_guard lock(mappings_mutex_);
  result = set_access(ptr, bytes, owner);
  if (result != CUDA_SUCCESS) {
    (void)f_.mem_unmap(static_cast<CUdeviceptr>(ptr), bytes);
    return status(result);
  }
  mappings_[ptr] = {bytes, owner};
  return engine::kSuccess;
}

Status DriverDevice::unmap(engine::DevicePtr ptr, std::uint64_t bytes) {
  const InternalCall internal(captures_);
  if (f_.mem_unmap == nullptr) return kNotSupported;
  {
    std::lock_guard lock(mappings_mutex_);
    mappings_.erase(ptr);
  }
  return status(f_.mem_unmap(static_cast<CUdeviceptr>(ptr), bytes));
}

// Remembered for later mappings, and replayed on the ranges mapped on `owner` now.
namespace {
// Drops the events of waits that are over; what remains may still block.
void prune_value_waits(std::vector<CUevent>& waits, const DriverFunctions& f) {
  std::erase_if(waits, [&](CUevent e) {
    if (f.event_query(e) == CUDA_ERROR_NOT_READY) return false;
    (void)f.event_destroy(e);
    return true;
  });
}
}  // namespace

void DriverDevice::value_wait_issued(CUstream stream) {
  if (f_.event_create == nullptr || f_.event_record == nullptr || f_.event_query == nullptr ||
      f_.event_destroy == nullptr) {
    return;
  }
  const InternalCall internal(captures_);
  std::lock_guard lock(value_waits_mutex_);
  prune_value_waits(value_waits_, f_);
  CUevent event = nullptr;
  if (f_.event_create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return;
  if (f_.event_record(event, stream) != CUDA_SUCCESS) {
    (void)f_.event_destroy(event);
    return;
  }
  value_waits_.push_back(event);
  any_value_wait_.store(true, std::memory_order_release);
}

bool DriverDevice::host_wait_may_block() {
  if (!any_value_wait_.load(std::memory_order_acquire)) return false;  // the program never waited for a value
  const InternalCall internal(captures_);
  std::lock_guard lock(value_waits_mutex_);
  prune_value_waits(value_waits_, f_);
  return !value_waits_.empty();
}

void DriverDevice::grant_peer_access(int owner, int accessor) {
  if (owner < 0 || owner >= kMaxDevices || accessor < 0 || accessor >= kMaxDevices || owner == accessor) return;
  const InternalCall internal(captures_);
  std::lock_guard lock(mappings_mutex_);
  accessors_[owner].fetch_or(std::uint64_t{1} << accessor, std::memory_order_acq_rel);
  if (f_.mem_set_access == nullptr) return;
  for (const auto& [ptr, mapping] : mappings_) {
    if (mapping.second == owner) (void)set_access(ptr, mapping.first, owner);
  }
}

}  // namespace memtool::interpose
