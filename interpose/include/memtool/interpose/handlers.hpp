// What each hook does around the real driver call, one handler per line of cuda_hooks.def:
// handle_<symbol>(call, args...) calls call.real exactly once and reports to the recorder
// (a free before the real call, an allocation after it succeeded). The exported wrappers in
// libmemtool.so are generated around these; unit tests call them with fake real functions.
//
// Whatever the strategy, device allocations and frees (cuMemAlloc, cuMemAllocAsync,
// cuMemAllocFromPoolAsync and their frees) go to the engine's runtime of the current context
// (memtool/engine/runtime.hpp), whose strategy stack calls the real allocator itself when it does
// not serve from elsewhere; every launch, copy and memset first tells the runtimes which buffers
// it touches on which stream, so that reused memory is ordered after its previous users
// (invariant 2) before the work is queued. The handlers never know which strategy runs.
#pragma once

#include "memtool/interpose/hook_table.hpp"
#include "memtool/interpose/context_runtimes.hpp"
#include "memtool/interpose/per_thread_streams.hpp"
#include "memtool/interpose/recorder.hpp"

namespace memtool::interpose {

template <class RealFunction>
struct Call {
  RealFunction real;
  Variant variant = Variant::plain;
  Recorder& recorder;
  ContextRuntimes& runtimes;
};

#define MEMTOOL_HOOK(api, symbol, since, per_thread, params, args) \
  CUresult handle_##symbol(MEMTOOL_PREPEND(const Call<fn::symbol>& call, params)) noexcept;
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK

// The stream a call runs on as recorded: CU_STREAM_PER_THREAD, and a per-thread twin's stream
// 0, are the calling thread's per-thread default stream, recorded under that thread's own id
// (per_thread_streams.hpp); the plain entry points' stream 0 is the legacy stream.
[[nodiscard]] inline std::uint64_t recorded_stream(CUstream stream, Variant variant) {
  return recorded_stream_of(stream, variant != Variant::plain);
}

}  // namespace memtool::interpose
