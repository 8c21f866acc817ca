// Initialisation, configuration from the environment, contexts and the per-thread context stack.
#include "driver.hpp"

#include "devices.hpp"
#include "link.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <pthread.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fakecuda {
namespace {

struct DriverState {
  std::mutex mutex;
  std::atomic<bool> initialized{false};
  std::atomic<bool> forked{false};
  Config config;
  Context primary[kMaxDevices];  // one per device; live from cuInit on
  int primary_refs[kMaxDevices] = {};
  unsigned primary_flags[kMaxDevices] = {};
  std::vector<Context*> contexts;  // every live context, primaries first (mutex)
  std::uint64_t next_context_id = kMaxDevices + 1;
};

// Leaked on purpose: stream workers may still run while static destructors do.
DriverState& state() {
  static DriverState* s = [] {
    auto* d = new DriverState;
    for (int dev = 0; dev < kMaxDevices; ++dev) {
      d->primary[dev].primary = true;
      d->primary[dev].device = dev;
      d->primary[dev].id = static_cast<std::uint64_t>(dev) + 1;
    }
    d->contexts.push_back(&d->primary[0]);  // device 0 exists before cuInit settles the count
    return d;
  }();
  return *s;
}

// The calling thread's context stack. The pointer is trivially destructible, so driver calls
// made from exit-time handlers (after thread_local destructors ran, e.g. a preloaded library
// freeing its pool in an atexit handler) see an empty stack instead of a destroyed vector.
thread_local std::vector<Context*>* tls_context_stack_ptr = nullptr;
struct ContextStackReleaser {
  ContextStackReleaser() = default;
  ContextStackReleaser(const ContextStackReleaser&) = delete;
  ContextStackReleaser& operator=(const ContextStackReleaser&) = delete;
  ~ContextStackReleaser() {
    delete tls_context_stack_ptr;
    tls_context_stack_ptr = nullptr;
  }
};
thread_local ContextStackReleaser tls_context_stack_releaser;

std::vector<Context*>& context_stack() {
  if (tls_context_stack_ptr == nullptr) {
    static_cast<void>(&tls_context_stack_releaser);  // registers the release at thread exit
    tls_context_stack_ptr = new std::vector<Context*>();
  }
  return *tls_context_stack_ptr;
}

void mark_forked() { state().forked.store(true); }

}  // namespace

const Config& config() noexcept { return state().config; }

CUresult check_init() noexcept {
  const DriverState& s = state();
  if (!s.initialized.load(std::memory_order_acquire) || s.forked.load(std::memory_order_relaxed)) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  return CUDA_SUCCESS;
}

CUresult check_device(CUdevice dev) noexcept {
  return (dev >= 0 && dev < device_count()) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult init_driver(unsigned flags) noexcept {
  DriverState& s = state();
  if (flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (s.forked.load()) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized.load()) {
    return CUDA_SUCCESS;
  }
  DeviceConfig devices;
  std::string error;
  if (!parse_device_config(std::getenv("FAKECUDA_DEVICES"), std::getenv("FAKECUDA_MEMORY_BYTES"), devices, error)) {
    std::fprintf(stderr, "fakecuda: %s\n", error.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  set_device_config(devices);
  s.config.capacity_bytes = total_capacity();
  load_link_config_from_env();
  if (!memory().init(devices.capacity)) {
    std::fprintf(stderr, "fakecuda: cannot reserve the device address range\n");
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (int dev = 1; dev < devices.count; ++dev) {
    s.contexts.insert(s.contexts.begin() + dev, &s.primary[dev]);
  }
  static bool atfork_registered = false;
  if (!atfork_registered) {
    pthread_atfork(nullptr, nullptr, mark_forked);
    atfork_registered = true;
  }
  s.initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

bool is_forked_child() noexcept { return state().forked.load(); }

CUresult current_context(Context*& out) noexcept {
  out = current_context_or_null();
  if (out == nullptr || !out->alive.load(std::memory_order_relaxed)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

Context* current_context_or_null() noexcept {
  const auto* stack = tls_context_stack_ptr;
  return stack == nullptr || stack->empty() ? nullptr : stack->back();
}

Context& primary_context(CUdevice dev) noexcept { return state().primary[dev]; }

bool has_peer_access(Context& ctx, const Context* owner) {
  std::lock_guard<std::mutex> lock(ctx.peer_mutex);
  for (const Context* p : ctx.peers) {
    if (p == owner) {
      return true;
    }
  }
  return false;
}

bool is_live_context(Context* ctx) noexcept {
  DriverState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (Context* c : s.contexts) {
    if (c == ctx) {
      return true;
    }
  }
  return false;
}

std::vector<Context*> live_contexts() {
  DriverState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.contexts;
}

void set_current(Context* ctx) noexcept {
  auto& stack = context_stack();
  if (stack.empty()) {
    if (ctx != nullptr) {
      stack.push_back(ctx);
    }
  } else if (ctx == nullptr) {
    stack.pop_back();
  } else {
    stack.back() = ctx;
  }
}

void push_current(Context* ctx) { context_stack().push_back(ctx); }

Context* pop_current() noexcept {
  auto& stack = context_stack();
  if (stack.empty()) {
    return nullptr;
  }
  Context* top = stack.back();
  stack.pop_back();
  return top;
}

Context* create_context(unsigned flags, CUdevice dev) {
  DriverState& s = state();
  auto* ctx = new Context;
  ctx->flags = flags;
  ctx->device = dev;
  std::lock_guard<std::mutex> lock(s.mutex);
  ctx->id = s.next_context_id++;
  s.contexts.push_back(ctx);
  return ctx;
}

CUresult destroy_context(Context* ctx) {
  DriverState& s = state();
  if (ctx->primary) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    bool found = false;
    for (auto it = s.contexts.begin(); it != s.contexts.end(); ++it) {
      if (*it == ctx) {
        s.contexts.erase(it);
        found = true;
        break;
      }
    }
    if (!found) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  synchronize_context(*ctx);
  destroy_context_streams(*ctx);
  ctx->alive.store(false);
  // Peer access granted to the destroyed context's allocations goes with it.
  for (Context* other : live_contexts()) {
    std::lock_guard<std::mutex> lock(other->peer_mutex);
    other->peers.erase(std::remove(other->peers.begin(), other->peers.end(), ctx), other->peers.end());
  }
  // Remove it from this thread's stack; other threads that still hold it see alive == false.
  // The object itself is kept: a stale handle must read as invalid, not as freed memory.
  auto& stack = context_stack();
  for (auto it = stack.begin(); it != stack.end();) {
    it = (*it == ctx) ? stack.erase(it) : it + 1;
  }
  return CUDA_SUCCESS;
}

int primary_retain(CUdevice dev) noexcept {
  std::lock_guard<std::mutex> lock(state().mutex);
  return ++state().primary_refs[dev];
}

int primary_release(CUdevice dev) noexcept {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().primary_refs[dev] == 0) {
    return -1;
  }
  return --state().primary_refs[dev];
}

int primary_refcount(CUdevice dev) noexcept {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().primary_refs[dev];
}

unsigned& primary_flags(CUdevice dev) noexcept { return state().primary_flags[dev]; }

}  // namespace fakecuda
