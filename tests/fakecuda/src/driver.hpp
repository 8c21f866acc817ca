// The driver's process-wide state: initialisation, configuration, contexts and the calling
// thread's context stack. Memory, streams and modules live in their own files; this one answers
// "may this call run at all, and in which context" the way the real driver does.
#pragma once

#include "cuda_abi.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fakecuda {

class Stream;

// A context owns its streams. Its submit_mutex orders every enqueue in the context so the legacy
// default stream's implicit synchronisation with blocking streams can be decided atomically.
struct Context {
  bool primary = false;
  CUdevice device = 0;
  unsigned flags = 0;
  std::atomic<bool> alive{true};
  std::uint64_t id = 0;
  std::mutex submit_mutex;
  std::vector<std::shared_ptr<Stream>> streams;  // every stream but the legacy one (submit_mutex)
  std::shared_ptr<Stream> legacy;                // the NULL stream (submit_mutex)
  std::atomic<int> sticky_error{CUDA_SUCCESS};   // a fault seen by a worker, reported from then on
  std::mutex peer_mutex;
  std::vector<Context*> peers;  // contexts whose allocations this one may access (cuCtxEnablePeerAccess)
};

// Whether `ctx` has peer access to the allocations of `owner` (peer_mutex taken).
bool has_peer_access(Context& ctx, const Context* owner);

struct Config {
  std::size_t capacity_bytes = std::size_t{4} << 30;  // all devices together (devices.hpp has each)
  const char* stats_path = nullptr;
};

constexpr CUdevice kDevice = 0;  // the first device, where an API needs a default
constexpr int kDriverVersion = 13000;

const Config& config() noexcept;

// CUDA_ERROR_NOT_INITIALIZED before cuInit (and in a forked child, as the real driver refuses).
CUresult check_init() noexcept;
CUresult check_device(CUdevice dev) noexcept;

// The calling thread's current context; CUDA_ERROR_INVALID_CONTEXT when there is none.
CUresult current_context(Context*& out) noexcept;
Context* current_context_or_null() noexcept;
Context& primary_context(CUdevice dev = kDevice) noexcept;
bool is_live_context(Context* ctx) noexcept;
std::vector<Context*> live_contexts();

// Context stack of the calling thread (cuCtxPush/Pop/SetCurrent).
void set_current(Context* ctx) noexcept;
void push_current(Context* ctx);
Context* pop_current() noexcept;

CUresult init_driver(unsigned flags) noexcept;
bool is_forked_child() noexcept;
Context* create_context(unsigned flags, CUdevice dev = kDevice);
CUresult destroy_context(Context* ctx);
int primary_retain(CUdevice dev = kDevice) noexcept;
int primary_release(CUdevice dev = kDevice) noexcept;
int primary_refcount(CUdevice dev = kDevice) noexcept;
unsigned& primary_flags(CUdevice dev = kDevice) noexcept;

// Whether `pool` is a device's default pool (mem_pool.hpp has every pool).
bool is_default_pool(CUmemoryPool pool) noexcept;

// Runs an entry point body, turning a C++ exception into the driver's status (never unwinds
// into C callers).
template <class F>
CUresult guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace fakecuda

#define FC_TRY(expr)                    \
  do {                                  \
    const CUresult fc_status_ = (expr); \
    if (fc_status_ != CUDA_SUCCESS) {   \
      return fc_status_;                \
    }                                   \
  } while (0)
