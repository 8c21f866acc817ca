// The hook table's metadata, name lookup and real-function slots (see hook_table.hpp).
#include "memtool/interpose/hook_table.hpp"

#include <cstring>

namespace memtool::interpose {

#define MEMTOOL_INFO_none(api, symbol, since) {#symbol, #api, since, Variant::plain, HookId::symbol, HookId::symbol},
#define MEMTOOL_INFO_TWIN(api, symbol, since, variant, suffix)                    \
  {#symbol, #api, since, Variant::plain, HookId::symbol, HookId::symbol##suffix}, \
      {#symbol #suffix, #api, since, Variant::variant, HookId::symbol, HookId::symbol##suffix},
#define MEMTOOL_INFO_ptsz(api, symbol, since) MEMTOOL_INFO_TWIN(api, symbol, since, ptsz, _ptsz)
#define MEMTOOL_INFO_ptds(api, symbol, since) MEMTOOL_INFO_TWIN(api, symbol, since, ptds, _ptds)

const HookInfo kHooks[kHookCount] = {
#define MEMTOOL_HOOK(api, symbol, since, per_thread, params, args) MEMTOOL_INFO_##per_thread(api, symbol, since)
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK
};

const HookAlias kHookAliases[kHookAliasCount] = {
#define MEMTOOL_HOOK(...)
#define MEMTOOL_HOOK_ALIAS(api, symbol, since) {#api, since, HookId::symbol},
#include "memtool/interpose/cuda_hooks.def"
#undef MEMTOOL_HOOK_ALIAS
#undef MEMTOOL_HOOK
};

std::atomic<void*> g_real_slots[kHookCount];

std::optional<HookId> find_symbol(std::string_view symbol) {
  // Cheap reject first: dlsym is called for every symbol a program looks up.
  if (symbol.size() < 3 || symbol[0] != 'c' || symbol[1] != 'u') return std::nullopt;
  for (std::size_t i = 0; i < kHookCount; ++i) {
    if (kHooks[i].symbol == symbol) return static_cast<HookId>(i);
  }
  return std::nullopt;
}

std::optional<HookId> choose_hook(std::string_view api, int cuda_version, std::uint64_t flags) {
  if (api.size() < 3 || api[0] != 'c' || api[1] != 'u') return std::nullopt;
  const HookInfo* best = nullptr;
  int best_since = 0;
  bool known_api = false;
  auto consider = [&](const HookInfo& entry, int since) {
    known_api = true;
    if (since > cuda_version) return;
    if (best == nullptr || since > best_since) {
      best = &entry;
      best_since = since;
    }
  };
  for (const HookInfo& entry : kHooks) {
    if (entry.variant == Variant::plain && entry.api == api) consider(entry, entry.since);
  }
  for (const HookAlias& alias : kHookAliases) {
    if (alias.api == api) consider(info(alias.target), alias.since);
  }
  if (best == nullptr) {
    // An api name asked for at a version older than every ABI we hook: not ours. A name that
    // is no api name at all may still be an exact ABI symbol ("cuMemAlloc_v2").
    return known_api ? std::nullopt : find_symbol(api);
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  if (per_thread && cuda_version >= kPerThreadSince && best->per_thread != best->plain) return best->per_thread;
  return best->plain;
}

bool offer_real(HookId id, void* real) {
  void* expected = nullptr;
  auto& slot = g_real_slots[static_cast<std::size_t>(id)];
  if (slot.compare_exchange_strong(expected, real, std::memory_order_acq_rel)) return true;
  return expected == real;
}

void reset_real_slots_for_testing() {
  for (auto& slot : g_real_slots) slot.store(nullptr, std::memory_order_release);
}

}  // namespace memtool::interpose
