// The hook table (cuda_hooks.def) turned into C++: one HookId per exported wrapper (a _ptsz or
// _ptds twin is a wrapper of its own), the typed real-function pointer type of each symbol,
// the metadata our resolver needs, and the slots that hold the real driver functions.
//
// Choosing a wrapper for a cuGetProcAddress request (choose_hook) is a pure function of
// (name, requested CUDA version, flags) so that it is unit-tested without a driver.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "memtool/interpose/cuda_api.hpp"

#include "memtool/interpose/hook_macros.hpp"

namespace memtool::interpose {

// Which twin of an entry point a wrapper is: the per-thread ones treat stream 0 as the
// calling thread's default stream (CU_STREAM_PER_THREAD), not the legacy stream.
enum class Variant : std::uint8_t { plain = 0, ptsz = 1, ptds = 2 };

// CUDA 7.0 introduced the per-thread default stream and with it every _ptsz/_ptds symbol.
inline constexpr int kPerThreadSince = 7000;
// The CUDA version the hook table was checked against (cuda.h at build time). Requests for a
// newer version are wrapped only if the driver hands out the same function as for this one.
inline constexpr int kBuiltAgainstVersion = CUDA_VERSION;

enum class HookId : std::uint16_t {
#define MEMTOOL_HOOK_ID(variant, api, symbol, since, params, args) MEMTOOL_VNAME(variant, symbol),
#define MEMTOOL_HOOK(...) MEMTOOL_FOR_VARIANTS(MEMTOOL_HOOK_ID, __VA_ARGS__)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK
#undef MEMTOOL_HOOK_ID
};

inline constexpr std::size_t kHookCount = 0
#define MEMTOOL_HOOK_COUNT(variant, api, symbol, since, params, args) +1
#define MEMTOOL_HOOK(...) MEMTOOL_FOR_VARIANTS(MEMTOOL_HOOK_COUNT, __VA_ARGS__)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK
#undef MEMTOOL_HOOK_COUNT
    ;

// The typed pointer of each symbol's real function: fn::cuMemAlloc_v2, ... (a twin has the
// same type as its plain symbol).
namespace fn {
#define MEMTOOL_HOOK(api, symbol, since, per_thread, params, args) using symbol = CUresult(*) params;
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK
}  // namespace fn

struct HookInfo {
  std::string_view symbol;  // exported symbol, e.g. "cuMemAllocAsync_ptsz"
  std::string_view api;     // what cuGetProcAddress is asked for, e.g. "cuMemAllocAsync"
  int since = 0;            // first CUDA version whose request for `api` means this ABI
  Variant variant = Variant::plain;
  HookId plain{};       // the plain twin of this entry (itself when plain)
  HookId per_thread{};  // the _ptsz/_ptds twin; equal to `plain` when there is none
};

// Indexed by HookId.
extern const HookInfo kHooks[kHookCount];

[[nodiscard]] inline const HookInfo& info(HookId id) { return kHooks[static_cast<std::size_t>(id)]; }
[[nodiscard]] inline std::string_view symbol_name(HookId id) { return info(id).symbol; }

// MEMTOOL_HOOK_ALIAS lines: an api name that means another line's ABI from `since` on.
struct HookAlias {
  std::string_view api;
  int since = 0;
  HookId target{};  // the plain entry whose ABI it is
};
inline constexpr std::size_t kHookAliasCount = 0
#define MEMTOOL_HOOK(...)
#define MEMTOOL_HOOK_ALIAS(api, symbol, since) +1
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK_ALIAS
#undef MEMTOOL_HOOK
    ;
extern const HookAlias kHookAliases[kHookAliasCount];

// The hook whose exported symbol is exactly `symbol` (dlsym lookups).
[[nodiscard]] std::optional<HookId> find_symbol(std::string_view symbol);

// The wrapper to hand out for cuGetProcAddress(api, ..., cuda_version, flags): the entry of
// `api` with the highest `since` not above `cuda_version`, its per-thread twin when `flags`
// asks for per-thread default stream semantics (and the version has them), or nothing when
// `api` is not hooked or the requested ABI is older than every hooked one. An exact symbol
// name ("cuMemAlloc_v2") names its own entry.
[[nodiscard]] std::optional<HookId> choose_hook(std::string_view api, int cuda_version, std::uint64_t flags);

// --- Real functions -----------------------------------------------------------------------
// One slot per wrapper, filled by the resolver with the driver function that the wrapper
// stands for (never with one of our own wrappers).
extern std::atomic<void*> g_real_slots[kHookCount];

[[nodiscard]] inline void* real_slot(HookId id) {
  return g_real_slots[static_cast<std::size_t>(id)].load(std::memory_order_acquire);
}
// Fills the slot if it is empty. Returns true when the slot now holds `real` (it was empty or
// already held the same function), false when it holds another function: the caller must
// then not hand out the wrapper for `real`, because the wrapper would call the other one.
bool offer_real(HookId id, void* real);
// Test support: empties every slot.
void reset_real_slots_for_testing();

}  // namespace memtool::interpose
