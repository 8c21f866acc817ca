// Every entry of the hook table resolves: with libmemtool.so preloaded and fakecuda as
// libcuda.so.1, cuGetProcAddress_v2 for each (api, version, per-thread flag) of the table and
// dlsym for each exported symbol hand out libmemtool's wrapper of exactly that symbol.
// Prints one line per entry that does not; exit 0 when all do.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "memtool/interpose/hook_table.hpp"
#include "symbol_origin.hpp"

namespace {
using memtool::integration::GetProc;
using memtool::integration::where;

// The version to ask for `entry` at: 12000 (cuGetProcAddress_v2's own) unless a newer line or
// alias of its api takes over by then; then its own version (per-thread twins exist from 7.0).
int version_for(const memtool::interpose::HookInfo& entry) {
  using namespace memtool::interpose;
  int superseded_at = 1 << 30;
  for (const HookInfo& other : kHooks) {
    if (other.api == entry.api && other.variant == Variant::plain && other.since > entry.since) {
      superseded_at = std::min(superseded_at, other.since);
    }
  }
  for (const HookAlias& alias : kHookAliases) {
    if (alias.api == entry.api && alias.since > entry.since) superseded_at = std::min(superseded_at, alias.since);
  }
  const int version = std::max(entry.since, 12000);
  if (version < superseded_at) return version;
  return entry.variant == Variant::plain ? entry.since : std::max(entry.since, kPerThreadSince);
}
}  // namespace

int main() {
  using namespace memtool::interpose;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 1;
  const auto get_proc = reinterpret_cast<GetProc>(dlsym(driver, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) return 1;
  int failures = 0;
  for (const HookInfo& entry : kHooks) {
    const std::string expected = "libmemtool.so:" + std::string(entry.symbol);
    const std::string symbol(entry.symbol);
    const std::string api(entry.api);
    const int version = version_for(entry);
    const cuuint64_t flags = entry.variant == Variant::plain ? CU_GET_PROC_ADDRESS_LEGACY_STREAM
                                                             : CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void* pfn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult result = get_proc(api.c_str(), &pfn, version, flags, &status);
    if (result != CUDA_SUCCESS || where(pfn) != expected) {
      std::printf("cuGetProcAddress_v2(%s, %d, %llu) -> %d %s, expected %s\n", api.c_str(), version,
                  static_cast<unsigned long long>(flags), static_cast<int>(result), where(pfn).c_str(),
                  expected.c_str());
      ++failures;
    }
    void* direct = dlsym(driver, symbol.c_str());
    if (where(direct) != expected) {
      std::printf("dlsym(libcuda, %s) -> %s, expected %s\n", symbol.c_str(), where(direct).c_str(), expected.c_str());
      ++failures;
    }
  }
  if (failures == 0) std::printf("all %zu hooks resolve\n", kHookCount);
  return failures == 0 ? 0 : 1;
}
