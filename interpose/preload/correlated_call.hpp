// The real driver call of a launch, copy or memset as CUPTI must see it: inside an external
// correlation id (the seq of the event the recorder just wrote), so that the GPU record CUPTI
// delivers later names memtool's event (cupti_tracer/, correlation.hpp).
//
// The wrapper hands its handler `correlated<id, gpu_work>(real)`: for the hooks that put work on
// the GPU, while a tracer runs, a function of the same type that pushes the id, calls the real
// function and pops; otherwise `real` itself. The handlers do not change, and a hook that is
// not GPU work pays nothing (the choice is made at compile time); a GPU-work hook with the
// tracer off pays one relaxed load.
#pragma once

#include "preload.hpp"

#ifdef MEMTOOL_HAVE_CUPTI
#include "memtool/cupti/correlation.hpp"
#endif

namespace memtool::interpose::preload {

#ifdef MEMTOOL_HAVE_CUPTI
template <HookId id, class F>
struct CorrelatedCall;

template <HookId id, class... Args>
struct CorrelatedCall<id, CUresult (*)(Args...)> {
  static CUresult call(Args... args) noexcept {
    const auto real = reinterpret_cast<CUresult (*)(Args...)>(real_function(id));
    const std::uint64_t seq = Recorder::take_gpu_work_seq();
    if (seq == Recorder::kNoGpuWork) return real(args...);  // nothing recorded: nothing to join
    cupti::push_external_id(seq);
    const CUresult result = real(args...);
    cupti::pop_external_id();
    return result;
  }
};

[[nodiscard]] constexpr bool is_gpu_work(std::string_view symbol) { return cupti::is_gpu_work_symbol(symbol); }
#else
[[nodiscard]] constexpr bool is_gpu_work(std::string_view) { return false; }
#endif

template <HookId id, bool kGpuWork, class F>
[[nodiscard]] inline F correlated(F real) noexcept {
#ifdef MEMTOOL_HAVE_CUPTI
  if constexpr (kGpuWork) {
    if (cupti::correlating()) return &CorrelatedCall<id, F>::call;
  }
#endif
  return real;
}

}  // namespace memtool::interpose::preload
