// The exported driver entry points of libmemtool.so, generated from cuda_hooks.def. Each one:
// find the real function, and either pass straight through (not recording, or a nested call)
// or run the hook's handler around it (while the CUPTI tracer runs, the real call of a launch,
// copy or memset inside its event's external correlation id: correlated_call.hpp). Programs
// linked with -lcuda bind to these directly; programs that resolve the driver at run time get
// them from our dlsym / cuGetProcAddress.
#include <type_traits>

#include "correlated_call.hpp"
#include "memtool/interpose/handlers.hpp"
#include "preload.hpp"

namespace memtool::interpose::preload {

// The table's parameter lists must be the header's: a typo would be a silent ABI break.
#define MEMTOOL_CHECK_SIGNATURE(variant, api, symbol, since, params, args)               \
  static_assert(std::is_same_v<fn::symbol, decltype(&::MEMTOOL_VNAME(variant, symbol))>, \
                #symbol ": the hook table's parameters differ from cuda.h");
#define MEMTOOL_HOOK(...) MEMTOOL_FOR_VARIANTS(MEMTOOL_CHECK_SIGNATURE, __VA_ARGS__)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK

}  // namespace memtool::interpose::preload

#define MEMTOOL_WRAPPER(variant, api, symbol, since, params, args)                                              \
  MEMTOOL_EXPORTED CUresult MEMTOOL_VNAME(variant, symbol) params {                                             \
    using namespace ::memtool::interpose;                                                                       \
    constexpr HookId id = HookId::MEMTOOL_VNAME(variant, symbol);                                               \
    const auto real = reinterpret_cast<fn::symbol>(preload::real_function(id));                                 \
    if (real == nullptr) return preload::missing_driver(id);                                                    \
    Recorder* recorder = preload::active_recorder();                                                            \
    if (recorder == nullptr) return real args;                                                                  \
    const preload::HookScope scope;                                                                             \
    const Call<fn::symbol> call{preload::correlated<id, preload::is_gpu_work(#symbol)>(real), Variant::variant, \
                                *recorder, *preload::g_runtimes};                                               \
    return handle_##symbol(MEMTOOL_PREPEND(call, args));                                                        \
  }
#define MEMTOOL_HOOK(...) MEMTOOL_FOR_VARIANTS(MEMTOOL_WRAPPER, __VA_ARGS__)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK

namespace memtool::interpose::preload {

void* const kWrappers[kHookCount] = {
#define MEMTOOL_WRAPPER_ADDRESS(variant, api, symbol, since, params, args) \
  reinterpret_cast<void*>(&::MEMTOOL_VNAME(variant, symbol)),
#define MEMTOOL_HOOK(...) MEMTOOL_FOR_VARIANTS(MEMTOOL_WRAPPER_ADDRESS, __VA_ARGS__)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK
};

}  // namespace memtool::interpose::preload
