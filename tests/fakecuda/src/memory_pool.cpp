// Stream-ordered pools in the memory manager: allocation with reuse of freed blocks, the return of
// a block when its stream reaches the free, and releasing what a pool holds beyond its threshold
// (at synchronisation points) or what cuMemPoolTrimTo asks for.
//
// Reuse follows the documented reuse attributes. Every idle block here is a completed free (a
// block joins the pool only when its stream reaches the cuMemFreeAsync), so a block freed on
// another stream is always safe to hand out: ALLOW_OPPORTUNISTIC allows it outright, and
// ALLOW_INTERNAL_DEPENDENCIES allows it because the dependency the driver would insert is already
// satisfied. With both off only the allocating stream's own frees are reused (stream order makes
// them safe); FOLLOW_EVENT_DEPENDENCIES cannot add to that here, because fakecuda does not track
// which frees an event wait ordered the stream after. A pending free (issued, not reached) is
// never reused: an allocation that needs its memory waits for the streams instead.
#include "memory.hpp"

#include "devices.hpp"
#include "driver.hpp"
#include "stats.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace fakecuda {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void* as_pointer(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

// A reused block serves a request up to twice its size: more would waste what a fresh allocation
// could keep for a larger request (a caching allocator's usual bound).
constexpr std::size_t kReuseWasteFactor = 2;

void note_highs(MemPool& pool) {
  pool.used_high = std::max(pool.used_high, pool.used);
  pool.reserved_high = std::max(pool.reserved_high, pool.reserved);
}

}  // namespace

CUresult Memory::allocate_in_pool(MemPool& pool, std::size_t bytes, std::uint64_t stream_id, Context* ctx,
                                  CUdeviceptr& out) {
  const int device = pool.device;
  Arena& arena = arenas_.at(static_cast<std::size_t>(device));
  if (bytes > arena.capacity * 64 || bytes > (~std::size_t{0} >> 2)) {
    count(stats().oom_errors);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const std::size_t charged = round_up(bytes, kAllocationGranule);
  const std::size_t span = round_up(bytes, kPageSize);
  std::unique_lock<std::mutex> lock(mutex_);

  const bool any_stream =
      pool.reuse_allow_opportunistic.load() != 0 || pool.reuse_allow_internal_dependencies.load() != 0;
  std::uintptr_t p = 0;
  std::size_t taken_span = span;
  std::size_t taken_charge = charged;
  bool reused = false;
  for (auto it = pool.idle.lower_bound(span); it != pool.idle.end() && it->first <= span * kReuseWasteFactor; ++it) {
    const IdleBlock& block = it->second;
    if (!any_stream && block.freed_on_stream != stream_id) {
      continue;
    }
    // The block keeps what it holds; a request charged more than that takes the difference.
    const std::size_t extra = charged > block.charged ? charged - block.charged : 0;
    if (extra > 0 && !charge(device, extra, nullptr)) {
      continue;
    }
    p = block.address;
    taken_span = block.span;
    taken_charge = block.charged + extra;
    pool.reserved += extra;
    pool.idle.erase(it);
    reused = true;
    break;
  }
  if (!reused) {
    if (pool.max_size != 0 && pool.reserved + charged > pool.max_size) {
      trim_locked(pool, 0);
      if (pool.reserved + charged > pool.max_size) {
        count(stats().oom_errors);
        return CUDA_ERROR_OUT_OF_MEMORY;  // the pool may not grow past maxSize
      }
    }
    FC_TRY(charge_or_wait(lock, device, charged));
    if (!arena.space.take(span, kPageSize, p)) {
      uncharge(device, charged);
      count(stats().oom_errors);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pool.reserved += charged;
  }
  if (mprotect(as_pointer(p), taken_span, PROT_READ | PROT_WRITE) != 0) {
    give_back_locked(device, p, taken_span);
    uncharge(device, taken_charge);
    pool.reserved -= taken_charge;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.size = bytes;
  a.charged = taken_charge;
  a.span = taken_span;
  a.kind = MemKind::device;
  a.async = true;
  a.device = device;
  a.id = next_id_++;
  a.context = ctx;
  a.pool = &pool;
  allocations_.emplace(p, std::move(a));
  pool.used += taken_charge;
  note_highs(pool);
  count(stats().allocations);
  count(stats().async_allocations);
  out = p;
  return CUDA_SUCCESS;
}

void Memory::return_to_pool_locked(AllocMap::iterator it) {
  Allocation& a = it->second;
  MemPool& pool = *a.pool;
  --pending_frees_;
  // The pages stay (the pool holds them) but nothing may touch them until they are handed out again.
  mprotect(as_pointer(it->first), a.span, PROT_NONE);
  IdleBlock block{it->first, a.span, a.charged, a.freeing_stream};
  pool.used -= a.charged;
  pool.idle.emplace(a.span, block);
  allocations_.erase(it);
}

void Memory::release_idle_locked(MemPool& pool, std::multimap<std::size_t, IdleBlock>::iterator it) {
  const IdleBlock block = it->second;
  pool.idle.erase(it);
  pool.reserved -= block.charged;
  uncharge(pool.device, block.charged);
  give_back_locked(pool.device, block.address, block.span);
}

void Memory::trim_locked(MemPool& pool, std::size_t keep) {
  // Largest blocks first; a block goes only if the pool still keeps `keep` bytes without it.
  for (auto it = pool.idle.end(); it != pool.idle.begin();) {
    --it;
    if (pool.reserved <= keep) {
      break;
    }
    if (pool.reserved - it->second.charged >= keep) {
      it = std::next(it);
      release_idle_locked(pool, std::prev(it));
    }
  }
}

void Memory::trim_pool(MemPool& pool, std::size_t keep) {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked(pool, keep);
}

void Memory::release_pools_to_threshold(int device) {
  if (device < 0 || static_cast<std::size_t>(device) >= arenas_.size()) {
    return;
  }
  const std::vector<MemPool*> pools = pools_of_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  for (MemPool* pool : pools) {
    if (!pool->idle.empty()) {
      trim_locked(*pool, static_cast<std::size_t>(pool->release_threshold.load()));
    }
  }
}

std::size_t Memory::pool_figure(const MemPool& pool, CUmemPool_attribute attribute) const {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (attribute) {
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      return pool.reserved;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      return pool.reserved_high;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      return pool.used;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      return pool.used_high;
    default:
      return 0;
  }
}

void Memory::reset_pool_high(MemPool& pool, CUmemPool_attribute attribute) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
    pool.reserved_high = pool.reserved;
  } else if (attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
    pool.used_high = pool.used;
  }
}

}  // namespace fakecuda
