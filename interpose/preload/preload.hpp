// What the pieces of libmemtool.so share: the wrappers' addresses, the real resolver entry
// points, the process-wide recorder and the per-thread recursion guard.
#pragma once

#include "memtool/interpose/hook_table.hpp"
#include "memtool/interpose/context_runtimes.hpp"
#include "memtool/interpose/recorder.hpp"

// A symbol libmemtool.so exports (the version script, libmemtool.map.in, lists which): the
// hooked driver entry points, dlsym and cuGetProcAddress, the memtool_* C API.
#define MEMTOOL_EXPORTED extern "C" __attribute__((visibility("default")))

namespace memtool::cupti {
class GpuTimeStore;
}  // namespace memtool::cupti

namespace memtool::interpose::preload {

// Our exported wrapper of each hook (exports.cpp), indexed by HookId.
extern void* const kWrappers[kHookCount];

// --- resolver.cpp ---
using DlsymFunction = void* (*)(void*, const char*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
// glibc's dlsym, found through dlvsym (never our own).
DlsymFunction real_dlsym() noexcept;
// The real driver function `name`, by whatever route works (the program's libcuda handle,
// the next object after us, the driver's resolver). nullptr when there is no driver.
void* driver_symbol(const char* name) noexcept;
// The real function behind a wrapper, resolved on first use when no resolver filled it.
void* resolve_real_slow(HookId id) noexcept;

inline void* real_function(HookId id) noexcept {
  void* real = real_slot(id);
  return real != nullptr ? real : resolve_real_slow(id);
}

// --- runtime.cpp ---
// recording: a strategy that holds no memory of its own (record): once the recorder stops, calls
// pass straight through. serving: one that does (pool): the handlers keep running even after
// the recorder stopped (at exit, or fail-open), since frees of its buffers must reach it.
enum class State : int { uninitialised = 0, recording = 1, pass_through = 2, serving = 3 };
extern std::atomic<State> g_state;
extern Recorder* g_recorder;         // set once before g_state leaves uninitialised; never deleted
extern ContextRuntimes* g_runtimes;  // likewise

// True while this thread runs inside one of our hooks or our own initialisation: nested driver
// calls (the driver calling its own exports, our lazy init) pass straight through.
inline thread_local bool t_in_hook __attribute__((tls_model("initial-exec"))) = false;

Recorder* initialise() noexcept;  // the slow path of active_recorder()

// GPU times CUPTI measured (MEMTOOL_CUPTI), for the engine: set once when the tracer starts,
// never deleted; nullptr without a tracer. Keyed by event seq (cupti_tracer/README.md).
extern cupti::GpuTimeStore* g_gpu_times;

// --- trace_flush.cpp ---
// Flushes `recorder`'s trace about once a second from a thread of ours, and on SIGTERM, SIGINT
// and SIGHUP before their previous handler (or default action) runs. Never deleted.
void start_trace_flushing(Recorder* recorder) noexcept;
void trace_flushing_after_fork_in_child() noexcept;

// The recorder if this call should be handled, else nullptr. The common case is one load
// and one compare.
inline Recorder* active_recorder() noexcept {
  if (t_in_hook) return nullptr;
  const State state = g_state.load(std::memory_order_acquire);
  if (state == State::recording) return g_recorder->active() ? g_recorder : nullptr;
  if (state == State::serving) return g_recorder;
  if (state == State::pass_through) return nullptr;
  return initialise();
}

class HookScope {
 public:
  HookScope() noexcept { t_in_hook = true; }
  ~HookScope() { t_in_hook = false; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
};

// No driver behind a wrapper: logged once; the program gets the error a missing driver gives.
CUresult missing_driver(HookId id) noexcept;

}  // namespace memtool::interpose::preload
