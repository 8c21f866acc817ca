// The pool registry: default pools per device, created and imported pools, current pools.
#include "mem_pool.hpp"

#include "devices.hpp"

#include <mutex>
#include <random>

namespace fakecuda {
namespace {

struct Registry {
  std::mutex mutex;
  MemPool defaults[kMaxDevices];
  MemPool* current[kMaxDevices] = {};
  std::vector<MemPool*> pools;  // created and imported, live
  std::uint64_t next_uid = 0;
};

std::uint64_t random_uid() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // leaked: allocations name their pool until the very end
    reg->next_uid = random_uid();
    for (int d = 0; d < kMaxDevices; ++d) {
      reg->defaults[d].device = d;
      reg->defaults[d].is_default = true;
      reg->defaults[d].uid = reg->next_uid++;
      reg->current[d] = &reg->defaults[d];
    }
    return reg;
  }();
  return *r;
}

}  // namespace

MemPool& default_pool(int device) noexcept { return registry().defaults[device]; }

CUmemoryPool pool_handle(const MemPool& pool) noexcept {
  return reinterpret_cast<CUmemoryPool>(const_cast<MemPool*>(&pool));
}

MemPool* find_pool(CUmemoryPool handle) {
  Registry& r = registry();
  auto* p = reinterpret_cast<MemPool*>(handle);
  for (int d = 0; d < device_count(); ++d) {
    if (p == &r.defaults[d]) {
      return p;
    }
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  for (MemPool* pool : r.pools) {
    if (pool == p) {
      return pool;
    }
  }
  return nullptr;
}

MemPool& current_pool(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return *r.current[device];
}

void set_current_pool(int device, MemPool& pool) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.current[device] = &pool;
}

MemPool& register_pool(MemPool* pool) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (pool->uid == 0) {
    pool->uid = r.next_uid++;
  }
  r.pools.push_back(pool);
  return *pool;
}

void unregister_pool(MemPool& pool) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  pool.destroyed.store(true);
  for (auto it = r.pools.begin(); it != r.pools.end(); ++it) {
    if (*it == &pool) {
      r.pools.erase(it);
      break;
    }
  }
  for (MemPool*& current : r.current) {
    if (current == &pool) {
      current = &r.defaults[pool.device];
    }
  }
}

std::vector<MemPool*> pools_of_device(int device) {
  Registry& r = registry();
  std::vector<MemPool*> out{&r.defaults[device]};
  std::lock_guard<std::mutex> lock(r.mutex);
  for (MemPool* pool : r.pools) {
    if (pool->device == device && !pool->imported) {
      out.push_back(pool);
    }
  }
  return out;
}

}  // namespace fakecuda
