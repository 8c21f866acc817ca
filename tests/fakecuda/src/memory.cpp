// Device memory emulation: the devices' arenas, capacity accounting, managed residency, pinned
// host ranges and VMM. Placement is page-granular so freed memory can be decommitted (its pages
// dropped, PROT_NONE) and a stale access faults; charges are 512-byte granular like the driver's
// allocator. Stream-ordered pools are in memory_pool.cpp, inter-process sharing in memory_ipc.cpp.
#include "memory.hpp"

#include "devices.hpp"
#include "driver.hpp"
#include "shareable.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace fakecuda {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

bool overflows(std::uintptr_t p, std::size_t n) { return p + n < p; }

void update_peak(std::atomic<std::uint64_t>& peak_gauge, std::size_t used) {
  std::uint64_t peak = peak_gauge.load(std::memory_order_relaxed);
  while (used > peak && !peak_gauge.compare_exchange_weak(peak, used)) {}
}

void* as_pointer(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

// An arena's address range spans its capacity many times over (allocations are placed page by
// page and freed ranges fragment it) but costs no memory until committed.
std::size_t arena_span(std::size_t capacity) {
  return round_up(std::clamp<std::size_t>(capacity * 16, std::size_t{64} << 30, std::size_t{1} << 40), kVmmGranularity);
}

// Unmapped space between arenas: an end pointer of one device's last allocation never lands in
// the next device's range.
constexpr std::size_t kArenaGuard = kVmmGranularity;

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

bool Memory::init(const std::vector<std::size_t>& capacities) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total_capacity = 0;
  std::size_t total_span = 0;
  for (const std::size_t c : capacities) {
    total_capacity += c;
    total_span += arena_span(c) + kArenaGuard;
  }
  // The VMM range holds reservations, which may exceed capacity (they cost no memory).
  const std::size_t vmm_span = arena_span(total_capacity);
  void* p = mmap(nullptr, total_span + vmm_span + kVmmGranularity, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return false;
  }
  nonce_ = random_nonce();
  std::uintptr_t at = round_up(reinterpret_cast<std::uintptr_t>(p), kVmmGranularity);
  lowest_ = at;
  arenas_.resize(capacities.size());
  for (std::size_t d = 0; d < capacities.size(); ++d) {
    Arena& a = arenas_[d];
    a.capacity = capacities[d];
    a.base = at;
    a.size = arena_span(a.capacity);
    a.space.reset(a.base, a.size);
    // The device's memory is a shared file mapped over its range, so that another process can map
    // the same pages (cuIpcOpenMemHandle, cuMemPoolImportPointer). The file is sparse: pages exist
    // only where memory is committed. Where the process may not have a file that large (a small
    // RLIMIT_FSIZE), the range stays private memory and nothing of the device can be shared.
    a.fd = share_arena(a, static_cast<int>(d));
    if (a.fd < 0) {
      std::fprintf(stderr,
                   "fakecuda: device %zu's memory cannot be backed by a shared file (file size limit?): "
                   "it works, but cannot be exported to another process\n",
                   d);
    }
    // A forked child cannot use the parent's device (it gets CUDA_ERROR_NOT_INITIALIZED), nor its
    // memory: the pages stay the parent's alone, as a GPU's would.
    madvise(as_pointer(a.base), a.size, MADV_DONTFORK);
    device_gauges(static_cast<int>(d)).bytes_in_use.store(0);
    device_gauges(static_cast<int>(d)).peak_bytes_in_use.store(0);
    at += a.size + kArenaGuard;
  }
  vmm_base_ = at;
  vmm_size_ = vmm_span;
  vmm_space_.reset(vmm_base_, vmm_size_);
  highest_ = vmm_base_ + vmm_size_;
  return true;
}

int Memory::share_arena(const Arena& a, int device) const {
  const std::uint64_t file_bytes = kShareHeaderBytes + a.size;
  if (!file_size_allowed(file_bytes)) {
    return -1;
  }
  char name[48];
  std::snprintf(name, sizeof name, "fakecuda-device-%d", device);
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  ArenaHeader header{};
  std::memcpy(header.magic, kArenaMagic, sizeof header.magic);
  header.nonce = nonce_;
  header.device = device;
  header.pid = static_cast<std::int32_t>(getpid());
  if (ftruncate(fd, static_cast<off_t>(file_bytes)) != 0 || !write_at(fd, &header, sizeof header, 0) ||
      mmap(as_pointer(a.base), a.size, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd,
           static_cast<off_t>(kShareHeaderBytes)) == MAP_FAILED) {
    close(fd);
    return -1;
  }
  return fd;
}

void Memory::unshared_range_locked(const Arena& arena, std::uintptr_t p, std::size_t span) {
  if (arena.fd >= 0) {
    mmap(as_pointer(p), span, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, arena.fd,
         static_cast<off_t>(kShareHeaderBytes + (p - arena.base)));
  } else {
    mmap(as_pointer(p), span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  }
  madvise(as_pointer(p), span, MADV_DONTFORK);
}

std::size_t Memory::capacity() const {
  std::size_t total = 0;
  for (const Arena& a : arenas_) {
    total += a.capacity;
  }
  return total;
}

std::size_t Memory::capacity(int device) const { return arenas_.at(static_cast<std::size_t>(device)).capacity; }

std::size_t Memory::used(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return arenas_.at(static_cast<std::size_t>(device)).used;
}

Memory::Arena* Memory::arena_of(std::uintptr_t p) {
  for (Arena& a : arenas_) {
    if (p - a.base < a.size) {
      return &a;
    }
  }
  return nullptr;
}

const Memory::Arena* Memory::arena_of(std::uintptr_t p) const {
  for (const Arena& a : arenas_) {
    if (p - a.base < a.size) {
      return &a;
    }
  }
  return nullptr;
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

PointerInfo Memory::info_of(std::uintptr_t base, const Allocation& a) const {
  PointerInfo out{a.kind, base, a.size, a.id, a.context, a.access, a.async};
  if (a.kind == MemKind::vmm) out.host_located = physical_.at(a.handle).host_located;
  out.device = a.device;
  out.pool = a.pool;
  out.imported = a.imported;
  return out;
}

bool Memory::lookup(CUdeviceptr p, PointerInfo& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it != allocations_.end() && !it->second.dying) {
    out = info_of(it->first, it->second);
    return true;
  }
  auto h = host_.upper_bound(p);
  if (h != host_.begin()) {
    --h;
    if (p - h->first < h->second.size) {
      out = PointerInfo{
          MemKind::host, h->first, h->second.size, h->second.id, nullptr, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, false};
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

bool Memory::charge(int device, std::size_t bytes, const Allocation* keep_resident) {
  Arena& arena = arenas_[static_cast<std::size_t>(device)];
  if (bytes > arena.capacity) {
    return false;
  }
  if (arena.used + bytes > arena.capacity) {
    // Device memory first: managed pages resident on the device are evicted to the host, as the
    // driver does under oversubscription.
    evict_managed(device, arena.used + bytes - arena.capacity, keep_resident);
    if (arena.used + bytes > arena.capacity) {
      return false;
    }
  }
  arena.used += bytes;
  used_ += bytes;
  Stats& s = stats();
  s.bytes_in_use.store(used_, std::memory_order_relaxed);
  update_peak(s.peak_bytes_in_use, used_);
  DeviceGauges& g = device_gauges(device);
  g.bytes_in_use.store(arena.used, std::memory_order_relaxed);
  update_peak(g.peak_bytes_in_use, arena.used);
  return true;
}

void Memory::uncharge(int device, std::size_t bytes) {
  Arena& arena = arenas_[static_cast<std::size_t>(device)];
  arena.used -= bytes;
  used_ -= bytes;
  stats().bytes_in_use.store(used_, std::memory_order_relaxed);
  device_gauges(device).bytes_in_use.store(arena.used, std::memory_order_relaxed);
}

CUresult Memory::charge_or_wait(std::unique_lock<std::mutex>& lock, int device, std::size_t bytes) {
  if (charge(device, bytes, nullptr)) {
    return CUDA_SUCCESS;
  }
  // Memory the pools hold but nobody uses goes back first, as the driver's allocator releases a
  // pool's unused memory before it fails an allocation.
  for (MemPool* pool : pools_of_device(device)) {
    trim_locked(*pool, 0);
  }
  if (charge(device, bytes, nullptr)) {
    return CUDA_SUCCESS;
  }
  // Memory freed in stream order comes back once the streams reach the frees; the driver's pool
  // waits for that rather than failing.
  if (pending_frees_ > 0) {
    lock.unlock();
    synchronize_device();
    lock.lock();
    for (MemPool* pool : pools_of_device(device)) {
      trim_locked(*pool, 0);
    }
    if (charge(device, bytes, nullptr)) {
      return CUDA_SUCCESS;
    }
  }
  count(stats().oom_errors);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

// ---- device and managed allocations ------------------------------------------------------

CUresult Memory::allocate(std::size_t bytes, MemKind kind, bool async, Context* ctx, CUdeviceptr& out) {
  const int device = ctx != nullptr ? ctx->device : 0;
  Arena& arena = arenas_.at(static_cast<std::size_t>(device));
  if (bytes > arena.capacity * 64 || overflows(bytes, kVmmGranularity)) {
    count(stats().oom_errors);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t charged = kind == MemKind::managed ? 0 : round_up(bytes, kAllocationGranule);
  const std::size_t span = round_up(bytes, kPageSize);
  std::unique_lock<std::mutex> lock(mutex_);
  if (charged > 0) {
    FC_TRY(charge_or_wait(lock, device, charged));
  }
  std::uintptr_t p = 0;
  if (!arena.space.take(span, kPageSize, p)) {
    uncharge(device, charged);
    count(stats().oom_errors);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (mprotect(as_pointer(p), span, PROT_READ | PROT_WRITE) != 0) {
    arena.space.give(p, span);
    uncharge(device, charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = bytes;
  a.charged = charged;
  a.span = span;
  a.kind = kind;
  a.async = async;
  a.device = device;
  a.id = next_id_++;
  a.context = ctx;
  if (kind == MemKind::managed) {
    a.managed = std::make_unique<Managed>();
    a.managed->where.assign((bytes + kResidencyChunk - 1) / kResidencyChunk, kUnpopulated);
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

void Memory::give_back_locked(int device, std::uintptr_t p, std::size_t span) {
  Arena& arena = arenas_[static_cast<std::size_t>(device)];
  // The pages go (the next allocation here starts from zeroes), and any access faults.
  if (arena.fd >= 0) {
    fallocate(arena.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
              static_cast<off_t>(kShareHeaderBytes + (p - arena.base)), static_cast<off_t>(span));
  } else {
    madvise(as_pointer(p), span, MADV_DONTNEED);
  }
  mprotect(as_pointer(p), span, PROT_NONE);
  arena.space.give(p, span);
}

void Memory::release_locked(AllocMap::iterator it) {
  Allocation& a = it->second;
  if (a.dying) {
    --pending_frees_;
  }
  if (a.imported) {
    // Another process's pages: this process's own memory goes back under the range, untouched.
    Arena& arena = arenas_[static_cast<std::size_t>(a.device)];
    unshared_range_locked(arena, it->first, a.span);
    arena.space.give(it->first, a.span);
    for (auto o = opened_.begin(); o != opened_.end();) {
      o = o->second == it->first ? opened_.erase(o) : std::next(o);
    }
    allocations_.erase(it);
    return;
  }
  std::size_t give_back = a.charged;
  if (a.managed) {
    // Managed chunks are charged to the device each sits on.
    for (std::size_t c = 0; c < a.managed->where.size(); ++c) {
      const int on = a.managed->where[c];
      if (on >= 0) {
        uncharge(on, std::min(kResidencyChunk, a.size - c * kResidencyChunk));
      }
    }
    stats().managed_device_bytes.fetch_sub(a.managed->device_bytes);
    stats().managed_bytes.fetch_sub(a.size);
    managed_count_.fetch_sub(1);
  }
  if (a.pool != nullptr) {
    a.pool->used -= a.charged;
    a.pool->reserved -= a.charged;
  }
  uncharge(a.device, give_back);
  give_back_locked(a.device, it->first, a.span);
  allocations_.erase(it);
}

CUresult Memory::free_now(CUdeviceptr base) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end() || it->second.kind == MemKind::vmm || it->second.dying ||
      (it->second.imported && it->second.pool == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;  // IPC-opened memory goes with cuIpcCloseMemHandle
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

CUresult Memory::begin_async_free(CUdeviceptr base, std::uint64_t stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end() || it->second.kind == MemKind::vmm || it->second.dying ||
      (it->second.imported && it->second.pool == nullptr)) {
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
  it->second.freeing_stream = stream_id;
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
    if (it->second.pool != nullptr && !it->second.imported && !it->second.pool->destroyed.load()) {
      return_to_pool_locked(it);
    } else {
      release_locked(it);
    }
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
  constexpr unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                             CU_MEMHOSTREGISTER_READ_ONLY;
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

std::size_t Memory::evict_managed(int device, std::size_t wanted, const Allocation* keep) {
  Migration evicted;
  for (auto& [base, a] : allocations_) {
    if (evicted.to_host >= wanted) {
      break;
    }
    if (!a.managed || &a == keep || a.managed->device_bytes == 0) {
      continue;
    }
    // Only the chunks on this device go; the move runs chunk by chunk below.
    Managed& m = *a.managed;
    for (std::size_t c = 0; c < m.where.size() && evicted.to_host < wanted; ++c) {
      if (m.where[c] == device) {
        const std::uintptr_t from = base + c * kResidencyChunk;
        migrate_locked(a, base, from, from + 1, kOnHost, evicted);
      }
    }
  }
  return evicted.to_host;
}

void Memory::migrate_locked(Allocation& a, std::uintptr_t base, std::uintptr_t from, std::uintptr_t to, int target,
                            Migration& moved) {
  Managed& m = *a.managed;
  const std::size_t first = (from - base) / kResidencyChunk;
  const std::size_t last = (to - base + kResidencyChunk - 1) / kResidencyChunk;
  std::size_t own_to_device = 0;
  std::size_t own_to_host = 0;
  std::size_t own_between = 0;
  Stats& s = stats();
  for (std::size_t c = first; c < last && c < m.where.size(); ++c) {
    const int on = m.where[c];
    if (on == target) {
      continue;
    }
    const std::size_t chunk = std::min(kResidencyChunk, a.size - c * kResidencyChunk);
    if (target != kOnHost) {
      Arena& arena = arenas_[static_cast<std::size_t>(target)];
      if (arena.used + chunk > arena.capacity) {
        moved.to_host += evict_managed(target, arena.used + chunk - arena.capacity, &a);
      }
      if (!charge(target, chunk, &a)) {
        break;  // the device is full of non-managed memory: the rest stays where it is
      }
    }
    if (on >= 0) {
      uncharge(on, chunk);
    }
    if (on == kUnpopulated) {
      // The first touch populates the chunk where it happens: charged there, nothing crosses.
      if (target != kOnHost) {
        m.device_bytes += chunk;
        s.managed_device_bytes.fetch_add(chunk);
      }
    } else if (on == kOnHost) {
      m.device_bytes += chunk;
      s.managed_device_bytes.fetch_add(chunk);
      own_to_device += chunk;
    } else if (target == kOnHost) {
      m.device_bytes -= chunk;
      s.managed_device_bytes.fetch_sub(chunk);
      own_to_host += chunk;
    } else {
      own_between += chunk;
    }
    m.where[c] = static_cast<std::int8_t>(target);
  }
  count(s.bytes_migrated_to_device, own_to_device + own_between);
  count(s.bytes_migrated_to_host, own_to_host);
  moved.to_device += own_to_device;
  moved.to_host += own_to_host;
  moved.between_devices += own_between;
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
  const int target = to_device && location_for_record >= 0 && location_for_record < static_cast<int>(arenas_.size())
                         ? location_for_record
                         : kOnHost;
  migrate_locked(a, it->first, p, end, target, moved);
  return moved;
}

Migration Memory::populate_managed(CUdeviceptr p, std::size_t bytes, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Migration moved;
  const auto it = find_containing(p);
  if (it == allocations_.end() || !it->second.managed || device < 0 || device >= static_cast<int>(arenas_.size())) {
    return moved;
  }
  Allocation& a = it->second;
  const std::uintptr_t end = std::min<std::uintptr_t>(p + bytes, it->first + a.size);
  const std::size_t last = (end - it->first + kResidencyChunk - 1) / kResidencyChunk;
  for (std::size_t c = (p - it->first) / kResidencyChunk; c < last && c < a.managed->where.size(); ++c) {
    if (a.managed->where[c] == kUnpopulated) {
      const std::uintptr_t from = it->first + c * kResidencyChunk;
      migrate_locked(a, it->first, from, from + 1, device, moved);
    }
  }
  return moved;
}

Migration Memory::touch_managed(CUdeviceptr word, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Migration moved;
  const auto it = find_containing(word);
  if (it == allocations_.end() || !it->second.managed || it->second.dying) {
    return moved;
  }
  Allocation& a = it->second;
  const Managed& m = *a.managed;
  if (std::any_of(m.where.begin(), m.where.end(), [device](std::int8_t on) { return on != device; })) {
    migrate_locked(a, it->first, it->first, it->first + a.size, device, moved);
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
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
      m.read_mostly = true;
      break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      m.read_mostly = false;
      break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      m.preferred_location = device;
      break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      m.preferred_location = CU_DEVICE_INVALID;
      break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
      if (device == CU_DEVICE_CPU) {
        m.accessed_by_host = true;
      } else {
        m.accessed_by_devices |= device_bit(device);
      }
      break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      if (device == CU_DEVICE_CPU) {
        m.accessed_by_host = false;
      } else {
        m.accessed_by_devices &= ~device_bit(device);
      }
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
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
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      return put_int(m.read_mostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return put_int(m.preferred_location);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return put_int(m.last_prefetch);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      if (data_size % sizeof(int) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      const std::size_t slots = data_size / sizeof(int);
      std::vector<int> devices(slots, CU_DEVICE_INVALID);
      std::size_t n = 0;
      for (int d = 0; d < kMaxDevices && n < slots; ++d) {
        if ((m.accessed_by_devices & device_bit(d)) != 0) {
          devices[n++] = d;
        }
      }
      if (m.accessed_by_host && n < slots) {
        devices[n++] = CU_DEVICE_CPU;
      }
      std::memcpy(data, devices.data(), slots * sizeof(int));
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
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
  if (hint != 0 && hint % alignment == 0 && vmm_space_.take_at(hint, size)) {
    p = hint;
  } else if (!vmm_space_.take(size, alignment, p)) {
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
  vmm_space_.give(p, size);
  return CUDA_SUCCESS;
}

CUresult Memory::create_physical(std::size_t size, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle& out) {
  if (size == 0 || size % kVmmGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool host_located = prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  const int device = host_located ? 0 : prop.location.id;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!host_located) {
    FC_TRY(charge_or_wait(lock, device, size));
  }
  int fd = -1;
  if (const auto spare = spare_files_.find(size); spare != spare_files_.end()) {
    fd = spare->second;
    spare_files_.erase(spare);
    spare_file_bytes_ -= size;
  } else {
    fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
  }
  // The memory, then a trailer that describes it to a process that imports the file.
  if (fd >= 0 && !file_size_allowed(size + kShareHeaderBytes)) {
    close(fd);
    fd = -1;  // past the file size limit: no memory rather than SIGXFSZ
  }
  PhysicalTrailer trailer{};
  std::memcpy(trailer.magic, kPhysicalMagic, sizeof trailer.magic);
  trailer.size = size;
  trailer.nonce = random_nonce();
  trailer.prop = prop;
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size + kShareHeaderBytes)) != 0 ||
      !write_at(fd, &trailer, sizeof trailer, size)) {
    if (fd >= 0) {
      close(fd);
    }
    if (!host_located) {
      uncharge(device, size);
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Physical ph;
  ph.size = size;
  ph.fd = fd;
  ph.prop = prop;
  ph.host_located = host_located;
  ph.device = device;
  out = next_handle_++;
  physical_.emplace(out, ph);
  count(stats().vmm_creates);
  count(stats().vmm_physical_bytes, size);
  return CUDA_SUCCESS;
}

void Memory::destroy_physical_locked(std::unordered_map<CUmemGenericAllocationHandle, Physical>::iterator it) {
  const Physical& ph = it->second;
  constexpr std::size_t kSpareFileBytes = std::size_t{1} << 30;
  // A file another process may hold (exported, or imported from one) is never handed out again.
  if (!ph.shared && spare_file_bytes_ + ph.size <= kSpareFileBytes) {
    spare_files_.emplace(ph.size, ph.fd);
    spare_file_bytes_ += ph.size;
  } else {
    close(ph.fd);
  }
  if (ph.imported) {
    physical_.erase(it);
    return;  // its creator holds the memory
  }
  if (!ph.host_located) {
    uncharge(ph.device, ph.size);
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
  void* mapped =
      mmap(as_pointer(p), size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->second.fd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = size;
  a.span = size;
  a.kind = MemKind::vmm;
  a.device = ph->second.device;
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
  return set_access(p, size, std::vector<std::pair<int, unsigned>>{{0, flags}});
}

CUresult Memory::set_access(CUdeviceptr p, std::size_t size, const std::vector<std::pair<int, unsigned>>& per_device) {
  for (const auto& [device, flags] : per_device) {
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (device < 0 || device >= kMaxDevices) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
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
    Allocation& a = it->second;
    const std::uintptr_t stop = std::min<std::uintptr_t>(it->first + a.size, p + size);
    // Access is per mapping on a GPU; partial ranges take the whole mapping.
    for (const auto& [device, flags] : per_device) {
      const std::uint32_t bit = device_bit(device);
      a.readable_by = (flags & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0 ? a.readable_by | bit : a.readable_by & ~bit;
      a.writable_by = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? a.writable_by | bit : a.writable_by & ~bit;
    }
    // Every device's kernels run on this CPU: the pages allow what any device may do, and the
    // per-device rule is enforced when a kernel is handed a pointer (kernel_may_access).
    a.access = a.writable_by != 0   ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
               : a.readable_by != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                    : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    const int prot = a.access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
                     : a.access == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                                    : PROT_NONE;
    mprotect(as_pointer(it->first), a.size, prot);
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

CUresult Memory::get_access(CUdeviceptr p, int device, unsigned& flags) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = find_containing(p);
  if (it == allocations_.end() || it->second.kind != MemKind::vmm) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Allocation& a = it->second;
  const std::uint32_t bit = device_bit(device);
  flags = (a.writable_by & bit) != 0   ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
          : (a.readable_by & bit) != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                       : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

// ---- device access of kernels --------------------------------------------------------------

bool Memory::kernel_may_access(CUdeviceptr word, Context& ctx) const {
  if (word < lowest_ || word >= highest_) {
    return true;  // not device memory of ours (host memory, a scalar, a pinned host pointer)
  }
  const int device = ctx.device;
  const std::uint32_t bit = device_bit(device);
  const Context* owner = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = find_containing(word);
    if (it == allocations_.end() || it->second.dying) {
      return true;  // not inside an allocation (an end pointer), or a use-after-free a copy catches
    }
    const Allocation& a = it->second;
    switch (a.kind) {
      case MemKind::managed:
      case MemKind::host:
        return true;  // every device reaches managed and pinned memory
      case MemKind::vmm:
        return (a.readable_by & bit) != 0;
      case MemKind::device:
        break;
    }
    if (a.device == device || (a.readable_by & bit) != 0) {
      return true;  // its own device, or the device an IPC handle was opened on
    }
    if (a.pool != nullptr) {
      // Stream-ordered memory: only the pool's access list counts, not context peer access.
      return (a.pool->readable_by.load(std::memory_order_relaxed) & bit) != 0;
    }
    owner = a.context;
  }
  return owner != nullptr && has_peer_access(ctx, owner);
}

}  // namespace fakecuda
