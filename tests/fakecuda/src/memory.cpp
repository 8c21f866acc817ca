// Device memory emulation: address space, capacity accounting, managed residency, pinned host
// ranges and VMM. Placement is page-granular so freed memory can be decommitted (PROT_NONE) and a
// stale access faults; charges are 512-byte granular like the driver's allocator.
#include "memory.hpp"

#include "driver.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace fakecuda {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

bool overflows(std::uintptr_t p, std::size_t n) { return p + n < p; }

void update_peak(Stats& s, std::size_t used) {
  std::uint64_t peak = s.peak_bytes_in_use.load(std::memory_order_relaxed);
  while (used > peak && !s.peak_bytes_in_use.compare_exchange_weak(peak, used)) {
  }
}

void* as_pointer(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

// Back to reserved-only: contents dropped, any access faults.
void decommit(std::uintptr_t p, std::size_t span) {
  madvise(as_pointer(p), span, MADV_DONTNEED);
  mprotect(as_pointer(p), span, PROT_NONE);
}

}  // namespace

// ---- AddressSpace --------------------------------------------------------------------------

void AddressSpace::reset(std::uintptr_t base, std::size_t size) {
  base_ = base;
  size_ = size;
  by_address_.clear();
  by_size_.clear();
  insert(base, size);
}

void AddressSpace::insert(std::uintptr_t address, std::size_t size) {
  by_address_.emplace(address, size);
  by_size_.emplace(size, address);
}

void AddressSpace::erase(std::map<std::uintptr_t, std::size_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_address_.erase(it);
}

bool AddressSpace::take(std::size_t size, std::size_t alignment, std::uintptr_t& out) {
  for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end(); ++it) {
    const auto [block_size, block] = *it;
    const std::uintptr_t start = (block + alignment - 1) / alignment * alignment;
    if (start - block + size <= block_size) {
      by_size_.erase(it);
      by_address_.erase(block);
      if (start > block) {
        insert(block, start - block);
      }
      if (start + size < block + block_size) {
        insert(start + size, block + block_size - (start + size));
      }
      out = start;
      return true;
    }
  }
  return false;
}

bool AddressSpace::take_at(std::uintptr_t address, std::size_t size) {
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) {
    return false;
  }
  --it;
  const std::uintptr_t block = it->first;
  const std::size_t block_size = it->second;
  if (address + size > block + block_size) {
    return false;
  }
  erase(it);
  if (address > block) {
    insert(block, address - block);
  }
  if (address + size < block + block_size) {
    insert(address + size, block + block_size - (address + size));
  }
  return true;
}

void AddressSpace::give(std::uintptr_t address, std::size_t size) {
  auto next = by_address_.lower_bound(address);
  if (next != by_address_.end() && address + size == next->first) {
    size += next->second;
    erase(next);
  }
  auto prev = by_address_.lower_bound(address);
  if (prev != by_address_.begin()) {
    --prev;
    if (prev->first + prev->second == address) {
      address = prev->first;
      size += prev->second;
      erase(prev);
    }
  }
  insert(address, size);
}

// ---- Memory: setup and lookup -------------------------------------------------------------

Memory& memory() noexcept {
  static auto* m = new Memory;  // leaked: stream workers may outlive static destruction
  return *m;
}

bool Memory::init(std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity;
  // The span holds VMM reservations too, which may exceed capacity (they cost no memory).
  const std::size_t span = std::clamp<std::size_t>(capacity * 16, std::size_t{64} << 30, std::size_t{1} << 40);
  void* p = mmap(nullptr, span + kVmmGranularity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return false;
  }
  const auto raw = reinterpret_cast<std::uintptr_t>(p);
  range_base_ = round_up(raw, kVmmGranularity);
  range_size_ = span;
  space_.reset(range_base_, range_size_);
  return true;
}

Memory::AllocMap::iterator Memory::find_containing(std::uintptr_t p) {
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) {
    return allocations_.end();
  }
  --it;
  return p - it->first < it->second.size ? it : allocations_.end();
}

Memory::AllocMap::const_iterator Memory::find_containing(std::uintptr_t p) const {
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) {
    return allocations_.end();
  }
  --it;
  return p - it->first < it->second.size ? it : allocations_.end();
}

bool Memory::lookup(CUdeviceptr p, PointerInfo& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it != allocations_.end() && !it->second.dying) {
    const Allocation& a = it->second;
    out = PointerInfo{a.kind, it->first, a.size, a.id, a.context, a.access, a.async};
    if (a.kind == MemKind::vmm) out.host_located = physical_.at(a.handle).host_located;
    return true;
  }
  auto h = host_.upper_bound(p);
  if (h != host_.begin()) {
    --h;
    if (p - h->first < h->second.size) {
      out = PointerInfo{MemKind::host, h->first, h->second.size, h->second.id, nullptr,
                        CU_MEM_ACCESS_FLAGS_PROT_READWRITE, false};
      return true;
    }
  }
  return false;
}

bool Memory::is_host_located(CUdeviceptr p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  return it != allocations_.end() && it->second.kind == MemKind::vmm && physical_.at(it->second.handle).host_located;
}

bool Memory::device_range_ok(CUdeviceptr p, std::size_t bytes, bool writable, bool include_dying) const {
  if (bytes == 0 || overflows(p, bytes)) {
    return bytes == 0;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::uintptr_t at = p;
  const std::uintptr_t end = p + bytes;
  // VMM mappings that are adjacent in the address space form one contiguous range, as on a GPU.
  while (at < end) {
    const auto it = find_containing(at);
    if (it == allocations_.end()) {
      break;
    }
    const Allocation& a = it->second;
    if (a.dying && !include_dying) {
      return false;
    }
    // A graph allocation is a valid address whenever work is issued (the launch that maps it may
    // be ahead in stream order); when the work runs it must be mapped.
    if (a.graph && include_dying && !a.graph_live) {
      return false;
    }
    if (a.kind == MemKind::vmm) {
      const unsigned need = writable ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_READ;
      if ((a.access & need) != need) {
        return false;
      }
    }
    const std::uintptr_t stop = it->first + a.size;
    if (end <= stop) {
      return true;
    }
    if (a.kind != MemKind::vmm) {
      return false;
    }
    at = stop;
  }
  if (at != p) {
    return false;
  }
  auto h = host_.upper_bound(p);
  if (h == host_.begin()) {
    return false;
  }
  --h;
  return p - h->first < h->second.size && end - h->first <= h->second.size;
}

bool Memory::is_pinned_host(const void* ptr, std::size_t bytes) const {
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto h = host_.upper_bound(p);
  if (h == host_.begin()) {
    return false;
  }
  --h;
  return p - h->first < h->second.size && p + bytes - h->first <= h->second.size;
}

bool Memory::has_pending_frees() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_frees_ > 0;
}

// ---- capacity ----------------------------------------------------------------------------

bool Memory::charge(std::size_t bytes, const Allocation* keep_resident) {
  if (bytes > capacity_) {
    return false;
  }
  if (used_ + bytes > capacity_) {
    // Device memory first: managed pages resident on the device are evicted to the host, as the
    // driver does under oversubscription.
    evict_managed(used_ + bytes - capacity_, keep_resident);
    if (used_ + bytes > capacity_) {
      return false;
    }
  }
  used_ += bytes;
  Stats& s = stats();
  s.bytes_in_use.store(used_, std::memory_order_relaxed);
  update_peak(s, used_);
  return true;
}

void Memory::uncharge(std::size_t bytes) {
  used_ -= bytes;
  stats().bytes_in_use.store(used_, std::memory_order_relaxed);
}

CUresult Memory::charge_or_wait(std::unique_lock<std::mutex>& lock, std::size_t bytes) {
  if (charge(bytes, nullptr)) {
    return CUDA_SUCCESS;
  }
  // Memory freed in stream order comes back once the streams reach the frees; the driver's pool
  // waits for that rather than failing.
  if (pending_frees_ > 0) {
    lock.unlock();
    synchronize_device();
    lock.lock();
    if (charge(bytes, nullptr)) {
      return CUDA_SUCCESS;
    }
  }
  count(stats().oom_errors);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

// ---- device and managed allocations ------------------------------------------------------

CUresult Memory::allocate(std::size_t bytes, MemKind kind, bool async, Context* ctx, CUdeviceptr& out) {
  if (bytes > capacity_ * 64 || overflows(bytes, kVmmGranularity)) {
    count(stats().oom_errors);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t charged = kind == MemKind::managed ? 0 : round_up(bytes, kAllocationGranule);
  const std::size_t span = round_up(bytes, kPageSize);
  std::unique_lock<std::mutex> lock(mutex_);
  if (charged > 0) {
    FC_TRY(charge_or_wait(lock, charged));
  }
  std::uintptr_t p = 0;
  if (!space_.take(span, kPageSize, p)) {
    uncharge(charged);
    count(stats().oom_errors);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (mprotect(as_pointer(p), span, PROT_READ | PROT_WRITE) != 0) {
    space_.give(p, span);
    uncharge(charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = bytes;
  a.charged = charged;
  a.span = span;
  a.kind = kind;
  a.async = async;
  a.id = next_id_++;
  a.context = ctx;
  if (kind == MemKind::managed) {
    a.managed = std::make_unique<Managed>();
    a.managed->on_device.assign((bytes + kResidencyChunk - 1) / kResidencyChunk, 0);
    managed_count_.fetch_add(1);
    count(stats().managed_bytes, bytes);
    count(stats().managed_allocations);
  }
  allocations_.emplace(p, std::move(a));
  count(stats().allocations);
  if (async) {
    count(stats().async_allocations);
  }
  out = p;
  return CUDA_SUCCESS;
}

void Memory::release_locked(AllocMap::iterator it) {
  Allocation& a = it->second;
  std::size_t give_back = a.charged;
  if (a.managed) {
    give_back += a.managed->device_bytes;
    stats().managed_device_bytes.fetch_sub(a.managed->device_bytes);
    stats().managed_bytes.fetch_sub(a.size);
    managed_count_.fetch_sub(1);
  }
  if (a.dying) {
    --pending_frees_;
  }
  uncharge(give_back);
  decommit(it->first, a.span);
  space_.give(it->first, a.span);
  allocations_.erase(it);
}

CUresult Memory::free_now(CUdeviceptr base) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end() || it->second.kind == MemKind::vmm || it->second.dying) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (it->second.graph) {
    // cuMemFree of a graph allocation a launch left allocated (documented at cuGraphAddMemAllocNode).
    if (!it->second.graph_issued || !it->second.graph_live) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    it->second.graph_issued = false;
    graph_release_locked(it);
    count(stats().frees);
    return CUDA_SUCCESS;
  }
  release_locked(it);
  count(stats().frees);
  return CUDA_SUCCESS;
}

CUresult Memory::begin_async_free(CUdeviceptr base) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end() || it->second.kind == MemKind::vmm || it->second.dying) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (it->second.graph) {
    // cuMemFreeAsync of a graph allocation outside its graph: allowed once a launch allocated it;
    // it is unmapped when the stream reaches the free (release_pending).
    if (!it->second.graph_issued) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    it->second.graph_issued = false;
    count(stats().frees);
    count(stats().async_frees);
    return CUDA_SUCCESS;
  }
  it->second.dying = true;
  ++pending_frees_;
  count(stats().frees);
  count(stats().async_frees);
  return CUDA_SUCCESS;
}

void Memory::release_pending(CUdeviceptr base) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it != allocations_.end() && it->second.graph) {
    graph_release_locked(it);
  } else if (it != allocations_.end() && it->second.dying) {
    release_locked(it);
  }
}

// ---- pinned host memory -----------------------------------------------------------------

CUresult Memory::host_alloc(std::size_t bytes, unsigned flags, void*& out) {
  constexpr unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (bytes == 0 || (flags & ~known) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = mmap(nullptr, round_up(bytes, kPageSize), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  host_.emplace(reinterpret_cast<std::uintptr_t>(p), HostRange{bytes, true, next_id_++});
  count(stats().host_allocations);
  out = p;
  return CUDA_SUCCESS;
}

CUresult Memory::host_free(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = host_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == host_.end() || !it->second.owned) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  munmap(ptr, round_up(it->second.size, kPageSize));
  host_.erase(it);
  return CUDA_SUCCESS;
}

CUresult Memory::host_register(void* ptr, std::size_t bytes, unsigned flags) {
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  constexpr unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                             CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (ptr == nullptr || bytes == 0 || overflows(p, bytes) || (flags & ~known) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto next = host_.lower_bound(p);
  if (next != host_.end() && next->first < p + bytes) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  if (next != host_.begin()) {
    auto prev = std::prev(next);
    if (p - prev->first < prev->second.size) {
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
  }
  if (find_containing(p) != allocations_.end()) {
    return CUDA_ERROR_INVALID_VALUE;  // device memory is not host memory
  }
  host_.emplace(p, HostRange{bytes, false, next_id_++});
  return CUDA_SUCCESS;
}

CUresult Memory::host_unregister(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = host_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == host_.end() || it->second.owned) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  host_.erase(it);
  return CUDA_SUCCESS;
}

// ---- managed residency ------------------------------------------------------------------

CUresult Memory::check_managed_range(CUdeviceptr p, std::size_t bytes) const {
  if (bytes == 0 || overflows(p, bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || it->second.kind != MemKind::managed || it->second.dying ||
      p + bytes - it->first > it->second.size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

std::size_t Memory::evict_managed(std::size_t wanted, const Allocation* keep) {
  Migration evicted;
  for (auto& [base, a] : allocations_) {
    if (evicted.to_host >= wanted) {
      break;
    }
    if (!a.managed || &a == keep || a.managed->device_bytes == 0) {
      continue;
    }
    migrate_locked(a, base, base, base + a.size, false, evicted);
  }
  return evicted.to_host;
}

void Memory::migrate_locked(Allocation& a, std::uintptr_t base, std::uintptr_t from, std::uintptr_t to,
                            bool to_device, Migration& moved) {
  Managed& m = *a.managed;
  const std::size_t first = (from - base) / kResidencyChunk;
  const std::size_t last = (to - base + kResidencyChunk - 1) / kResidencyChunk;
  std::size_t own = 0;
  Stats& s = stats();
  for (std::size_t c = first; c < last && c < m.on_device.size(); ++c) {
    if ((m.on_device[c] != 0) == to_device) {
      continue;
    }
    const std::size_t chunk = std::min(kResidencyChunk, a.size - c * kResidencyChunk);
    if (to_device) {
      if (used_ + chunk > capacity_) {
        moved.to_host += evict_managed(used_ + chunk - capacity_, &a);
        if (used_ + chunk > capacity_) {
          break;  // the device is full of non-managed memory: the rest stays on the host
        }
      }
      used_ += chunk;
      m.device_bytes += chunk;
      s.managed_device_bytes.fetch_add(chunk);
    } else {
      used_ -= chunk;
      m.device_bytes -= chunk;
      s.managed_device_bytes.fetch_sub(chunk);
    }
    m.on_device[c] = to_device ? 1 : 0;
    own += chunk;
  }
  s.bytes_in_use.store(used_, std::memory_order_relaxed);
  update_peak(s, used_);
  count(to_device ? s.bytes_migrated_to_device : s.bytes_migrated_to_host, own);
  (to_device ? moved.to_device : moved.to_host) += own;
}

Migration Memory::migrate(CUdeviceptr p, std::size_t bytes, bool to_device, int location_for_record) {
  std::lock_guard<std::mutex> lock(mutex_);
  Migration moved;
  const auto it = find_containing(p);
  if (it == allocations_.end() || !it->second.managed) {
    return moved;  // freed before the stream got here (stream-ordered free): nothing to move
  }
  Allocation& a = it->second;
  a.managed->last_prefetch = location_for_record;
  const std::uintptr_t end = std::min<std::uintptr_t>(p + bytes, it->first + a.size);
  migrate_locked(a, it->first, p, end, to_device, moved);
  return moved;
}

Migration Memory::touch_managed(CUdeviceptr word) {
  std::lock_guard<std::mutex> lock(mutex_);
  Migration moved;
  const auto it = find_containing(word);
  if (it == allocations_.end() || !it->second.managed || it->second.dying) {
    return moved;
  }
  Allocation& a = it->second;
  if (a.managed->device_bytes < a.size) {
    migrate_locked(a, it->first, it->first, it->first + a.size, true, moved);
  }
  return moved;
}

CUresult Memory::advise(CUdeviceptr p, std::size_t bytes, CUmem_advise advice, int device) {
  FC_TRY(check_managed_range(p, bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || !it->second.managed) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Managed& m = *it->second.managed;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY: m.read_mostly = true; break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: m.read_mostly = false; break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: m.preferred_location = device; break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: m.preferred_location = CU_DEVICE_INVALID; break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
      (device == CU_DEVICE_CPU ? m.accessed_by_host : m.accessed_by_device) = true;
      break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      (device == CU_DEVICE_CPU ? m.accessed_by_host : m.accessed_by_device) = false;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult Memory::range_attribute(void* data, std::size_t data_size, CUmem_range_attribute attribute, CUdeviceptr p,
                                 std::size_t bytes) const {
  if (data == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_managed_range(p, bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  const Managed& m = *it->second.managed;
  auto put_int = [&](int value) {
    if (data_size != sizeof(int)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
  };
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: return put_int(m.read_mostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: return put_int(m.preferred_location);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: return put_int(m.last_prefetch);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      if (data_size % sizeof(int) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      const std::size_t slots = data_size / sizeof(int);
      std::vector<int> devices(slots, CU_DEVICE_INVALID);
      std::size_t n = 0;
      if (m.accessed_by_device && n < slots) {
        devices[n++] = 0;
      }
      if (m.accessed_by_host && n < slots) {
        devices[n++] = CU_DEVICE_CPU;
      }
      std::memcpy(data, devices.data(), slots * sizeof(int));
      return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// ---- VMM ---------------------------------------------------------------------------------

CUresult Memory::reserve(std::size_t size, std::size_t alignment, CUdeviceptr hint, CUdeviceptr& out) {
  if (size == 0 || size % kVmmGranularity != 0 || (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  alignment = std::max(alignment, kVmmGranularity);
  std::lock_guard<std::mutex> lock(mutex_);
  std::uintptr_t p = 0;
  if (hint != 0 && hint % alignment == 0 && space_.take_at(hint, size)) {
    p = hint;
  } else if (!space_.take(size, alignment, p)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  reservations_.emplace(p, size);
  out = p;
  return CUDA_SUCCESS;
}

CUresult Memory::unreserve(CUdeviceptr p, std::size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = reservations_.find(p);
  if (it == reservations_.end() || it->second != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto mapped = allocations_.lower_bound(p);
  if (mapped != allocations_.end() && mapped->first < p + size) {
    return CUDA_ERROR_INVALID_VALUE;  // still mapped: unmap first
  }
  reservations_.erase(it);
  space_.give(p, size);
  return CUDA_SUCCESS;
}

CUresult Memory::create_physical(std::size_t size, const CUmemAllocationProp& prop,
                                 CUmemGenericAllocationHandle& out) {
  if (size == 0 || size % kVmmGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool host_located = prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!host_located) {
    FC_TRY(charge_or_wait(lock, size));
  }
  int fd = -1;
  if (const auto spare = spare_files_.find(size); spare != spare_files_.end()) {
    fd = spare->second;
    spare_files_.erase(spare);
    spare_file_bytes_ -= size;
  } else {
    fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
  }
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) {
      close(fd);
    }
    if (!host_located) {
      uncharge(size);
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Physical ph;
  ph.size = size;
  ph.fd = fd;
  ph.prop = prop;
  ph.host_located = host_located;
  out = next_handle_++;
  physical_.emplace(out, ph);
  count(stats().vmm_creates);
  count(stats().vmm_physical_bytes, size);
  return CUDA_SUCCESS;
}

void Memory::destroy_physical_locked(std::unordered_map<CUmemGenericAllocationHandle, Physical>::iterator it) {
  const Physical& ph = it->second;
  constexpr std::size_t kSpareFileBytes = std::size_t{1} << 30;
  if (spare_file_bytes_ + ph.size <= kSpareFileBytes) {
    spare_files_.emplace(ph.size, ph.fd);
    spare_file_bytes_ += ph.size;
  } else {
    close(ph.fd);
  }
  if (!ph.host_located) {
    uncharge(ph.size);
  }
  stats().vmm_physical_bytes.fetch_sub(ph.size);
  physical_.erase(it);
}

CUresult Memory::release_physical(CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.user_refs == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Physical& ph = it->second;
  --ph.user_refs;
  count(stats().vmm_releases);
  if (ph.user_refs == 0 && ph.mappings == 0) {
    destroy_physical_locked(it);
  }
  return CUDA_SUCCESS;
}

CUresult Memory::retain_physical(CUdeviceptr address, CUmemGenericAllocationHandle& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(address);
  if (it == allocations_.end() || it->second.kind != MemKind::vmm) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = it->second.handle;
  ++physical_.at(out).user_refs;
  return CUDA_SUCCESS;
}

CUresult Memory::physical_properties(CUmemGenericAllocationHandle handle, CUmemAllocationProp& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.user_refs == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out = it->second.prop;
  return CUDA_SUCCESS;
}

CUresult Memory::map(CUdeviceptr p, std::size_t size, std::size_t offset, CUmemGenericAllocationHandle handle) {
  if (size == 0 || p % kVmmGranularity != 0 || size % kVmmGranularity != 0 || offset % kVmmGranularity != 0 ||
      overflows(p, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto r = reservations_.upper_bound(p);
  if (r == reservations_.begin()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  --r;
  if (p - r->first >= r->second || p + size - r->first > r->second) {
    return CUDA_ERROR_INVALID_VALUE;  // not inside one reservation
  }
  const auto ph = physical_.find(handle);
  if (ph == physical_.end() || ph->second.user_refs == 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (offset > ph->second.size || size > ph->second.size - offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto next = allocations_.lower_bound(p);
  if ((next != allocations_.end() && next->first < p + size) || find_containing(p) != allocations_.end()) {
    return CUDA_ERROR_INVALID_VALUE;  // already mapped
  }
  void* mapped = mmap(as_pointer(p), size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->second.fd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = size;
  a.span = size;
  a.kind = MemKind::vmm;
  a.id = next_id_++;
  a.handle = handle;
  a.handle_offset = offset;
  a.access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  allocations_.emplace(p, std::move(a));
  ++ph->second.mappings;
  count(stats().vmm_maps);
  return CUDA_SUCCESS;
}

CUresult Memory::unmap(CUdeviceptr p, std::size_t size) {
  if (size == 0 || overflows(p, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // The range must consist of whole mappings, with no hole, starting at a mapping.
  auto first = allocations_.find(p);
  if (first == allocations_.end() || first->second.kind != MemKind::vmm) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::uintptr_t at = p;
  auto it = first;
  while (at < p + size) {
    if (it == allocations_.end() || it->first != at || it->second.kind != MemKind::vmm) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    at += it->second.size;
    ++it;
  }
  if (at != p + size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (auto m = first; m != it;) {
    Physical& ph = physical_.at(m->second.handle);
    --ph.mappings;
    if (ph.user_refs == 0 && ph.mappings == 0) {
      destroy_physical_locked(physical_.find(m->second.handle));
    }
    m = allocations_.erase(m);
    count(stats().vmm_unmaps);
  }
  // Back to a reserved hole in our range.
  mmap(as_pointer(p), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return CUDA_SUCCESS;
}

CUresult Memory::set_access(CUdeviceptr p, std::size_t size, unsigned flags) {
  int prot = PROT_NONE;
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_NONE: prot = PROT_NONE; break;
    case CU_MEM_ACCESS_FLAGS_PROT_READ: prot = PROT_READ; break;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: prot = PROT_READ | PROT_WRITE; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  if (size == 0 || overflows(p, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::uintptr_t at = p;
  while (at < p + size) {
    const auto it = find_containing(at);
    if (it == allocations_.end() || it->second.kind != MemKind::vmm) {
      return CUDA_ERROR_INVALID_VALUE;  // every byte of the range must be mapped
    }
    at = it->first + it->second.size;
  }
  at = p;
  while (at < p + size) {
    const auto it = find_containing(at);
    const std::uintptr_t stop = std::min<std::uintptr_t>(it->first + it->second.size, p + size);
    // Access is per mapping on a GPU; partial ranges take the whole mapping.
    mprotect(as_pointer(it->first), it->second.size, prot);
    it->second.access = flags;
    at = stop;
  }
  return CUDA_SUCCESS;
}

CUresult Memory::get_access(CUdeviceptr p, unsigned& flags) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || it->second.kind != MemKind::vmm) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  flags = it->second.access;
  return CUDA_SUCCESS;
}

}  // namespace fakecuda
