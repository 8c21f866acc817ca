// The hook table and the resolver's choice of wrapper: (name, version, flags) → HookId.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "memtool/interpose/hook_table.hpp"

using namespace memtool::interpose;

namespace {
std::string chosen(std::string_view api, int version, std::uint64_t flags = 0) {
  const auto id = choose_hook(api, version, flags);
  return id ? std::string(symbol_name(*id)) : std::string("<pass through>");
}
constexpr std::uint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
constexpr std::uint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
}  // namespace

TEST_CASE("every table entry is consistent", "[interpose][hooks]") {
  std::set<std::string_view> symbols;
  for (std::size_t i = 0; i < kHookCount; ++i) {
    const HookInfo& entry = kHooks[i];
    INFO(entry.symbol);
    CHECK(symbols.insert(entry.symbol).second);  // no symbol twice
    CHECK(find_symbol(entry.symbol) == static_cast<HookId>(i));
    const HookInfo& plain = info(entry.plain);
    CHECK(plain.variant == Variant::plain);
    CHECK(plain.api == entry.api);
    if (entry.variant != Variant::plain) {
      const std::string suffix = entry.variant == Variant::ptsz ? "_ptsz" : "_ptds";
      CHECK(std::string(entry.symbol) == std::string(plain.symbol) + suffix);
      CHECK(entry.per_thread == static_cast<HookId>(i));
    }
    CHECK(entry.since >= 2000);
    CHECK(entry.since <= kBuiltAgainstVersion);
  }
  CHECK(kHookCount == symbols.size());
  CHECK(find_symbol("cuInit") == std::nullopt);
  CHECK(find_symbol("malloc") == std::nullopt);
  CHECK(find_symbol("") == std::nullopt);
}

TEST_CASE("cuGetProcAddress requests map by version", "[interpose][hooks]") {
  CHECK(chosen("cuMemAlloc", 12000) == "cuMemAlloc_v2");
  CHECK(chosen("cuMemAlloc", 3020) == "cuMemAlloc_v2");
  // Before 3.2 "cuMemAlloc" is the 32-bit ABI: not ours to wrap.
  CHECK(chosen("cuMemAlloc", 3010) == "<pass through>");
  CHECK(chosen("cuMemAllocAsync", 11010) == "<pass through>");
  CHECK(chosen("cuMemAllocAsync", 11020) == "cuMemAllocAsync");
  // The newest ABI not above the request wins.
  CHECK(chosen("cuCtxSynchronize", 12080) == "cuCtxSynchronize");
  CHECK(chosen("cuCtxSynchronize", 13000) == "cuCtxSynchronize_v2");
  CHECK(chosen("cuCtxSynchronize", 13010) == "cuCtxSynchronize_v2");
  CHECK(chosen("cuInit", 12000) == "<pass through>");
  CHECK(chosen("", 12000) == "<pass through>");
}

TEST_CASE("the per-thread flag chooses the _ptsz/_ptds twin", "[interpose][hooks]") {
  CHECK(chosen("cuLaunchKernel", 12000, kPerThread) == "cuLaunchKernel_ptsz");
  CHECK(chosen("cuLaunchKernel", 12000, kLegacy) == "cuLaunchKernel");
  CHECK(chosen("cuLaunchKernel", 12000, 0) == "cuLaunchKernel");
  CHECK(chosen("cuMemcpyHtoD", 12000, kPerThread) == "cuMemcpyHtoD_v2_ptds");
  CHECK(chosen("cuMemcpyHtoDAsync", 12000, kPerThread) == "cuMemcpyHtoDAsync_v2_ptsz");
  CHECK(chosen("cuMemAllocAsync", 12000, kPerThread) == "cuMemAllocAsync_ptsz");
  // No twin: the plain entry whatever the flag.
  CHECK(chosen("cuMemAlloc", 12000, kPerThread) == "cuMemAlloc_v2");
  CHECK(chosen("cuEventSynchronize", 12000, kPerThread) == "cuEventSynchronize");
  // Per-thread default streams start at CUDA 7.0.
  CHECK(chosen("cuLaunchKernel", 6050, kPerThread) == "cuLaunchKernel");
}

TEST_CASE("an exact ABI symbol names its own entry", "[interpose][hooks]") {
  CHECK(chosen("cuMemAlloc_v2", 12000) == "cuMemAlloc_v2");
  CHECK(chosen("cuLaunchKernel_ptsz", 12000) == "cuLaunchKernel_ptsz");
}

TEST_CASE("a slot keeps the first real function and refuses another", "[interpose][hooks]") {
  reset_real_slots_for_testing();
  int a = 0;
  int b = 0;
  CHECK(real_slot(HookId::cuMemAlloc_v2) == nullptr);
  CHECK(offer_real(HookId::cuMemAlloc_v2, &a));
  CHECK(offer_real(HookId::cuMemAlloc_v2, &a));        // the same again is fine
  CHECK_FALSE(offer_real(HookId::cuMemAlloc_v2, &b));  // another would be called by our wrapper: refused
  CHECK(real_slot(HookId::cuMemAlloc_v2) == &a);
  CHECK(real_slot(HookId::cuLaunchKernel_ptsz) == nullptr);  // twins have slots of their own
  reset_real_slots_for_testing();
}

TEST_CASE("stream capture and graph entry points map by version, renamed ones through aliases",
          "[interpose][hooks][graphs]") {
  // cuda.h renames: from 12.0 "cuGraphInstantiate" is cuGraphInstantiateWithFlags, whose ABI
  // differs (3 parameters, not 5); before, the two five-parameter generations.
  CHECK(chosen("cuGraphInstantiate", 10000) == "cuGraphInstantiate");
  CHECK(chosen("cuGraphInstantiate", 11000) == "cuGraphInstantiate_v2");
  CHECK(chosen("cuGraphInstantiate", 11080) == "cuGraphInstantiate_v2");
  CHECK(chosen("cuGraphInstantiate", 12000) == "cuGraphInstantiateWithFlags");
  CHECK(chosen("cuGraphInstantiate", 13000) == "cuGraphInstantiateWithFlags");
  CHECK(chosen("cuGraphInstantiateWithFlags", 11040) == "cuGraphInstantiateWithFlags");
  CHECK(chosen("cuGraphInstantiate", 9020) == "<pass through>");
  CHECK(chosen("cuGraphExecUpdate", 11000) == "cuGraphExecUpdate");
  CHECK(chosen("cuGraphExecUpdate", 12000) == "cuGraphExecUpdate_v2");
  CHECK(chosen("cuGraphExecKernelNodeSetParams", 11000) == "cuGraphExecKernelNodeSetParams");
  CHECK(chosen("cuGraphExecKernelNodeSetParams", 12000) == "cuGraphExecKernelNodeSetParams_v2");
  CHECK(chosen("cuStreamBeginCapture", 10000) == "cuStreamBeginCapture");
  CHECK(chosen("cuStreamBeginCapture", 10010) == "cuStreamBeginCapture_v2");
  CHECK(chosen("cuStreamBeginCapture", 12000, kPerThread) == "cuStreamBeginCapture_v2_ptsz");
  CHECK(chosen("cuStreamEndCapture", 12000, kPerThread) == "cuStreamEndCapture_ptsz");
  CHECK(chosen("cuGraphInstantiateWithParams", 12000, kPerThread) == "cuGraphInstantiateWithParams_ptsz");
  // An alias names a table entry of the same ABI family, newer than every line of its api.
  for (std::size_t i = 0; i < kHookAliasCount; ++i) {
    const HookAlias& alias = kHookAliases[i];
    INFO(alias.api);
    CHECK(info(alias.target).variant == Variant::plain);
    for (const HookInfo& entry : kHooks) {
      if (entry.api == alias.api && entry.variant == Variant::plain) CHECK(entry.since < alias.since);
    }
  }
}
