// Runs under libmemtool.so with stub_driver as libcuda.so.1, resolving the driver the way
// cudart does (dlopen + dlsym("cuGetProcAddress_v2") + cuGetProcAddress_v2). Checks that
// hooked symbols come back as libmemtool's wrappers for the right (version, flags) variant and
// reach the stub's matching function, and that every other answer — errors, symbolStatus, NULL
// pointers, unknown ABIs — is exactly the stub's. Prints one line per failed check; exit 0 when
// all pass.
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "symbol_origin.hpp"

namespace {

int g_failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++g_failures;
  }
}

using memtool::integration::GetProc;
using memtool::integration::where;

}  // namespace

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    std::printf("FAILED: dlopen libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  auto* calls = static_cast<unsigned*>(dlsym(driver, "stub_calls"));
  expect(calls != nullptr, "stub_calls found through dlsym");
  const auto get_proc = reinterpret_cast<GetProc>(dlsym(driver, "cuGetProcAddress_v2"));
  expect(where(reinterpret_cast<void*>(get_proc)) == "libmemtool.so:cuGetProcAddress_v2",
         "dlsym(libcuda, cuGetProcAddress_v2) is memtool's: " + where(reinterpret_cast<void*>(get_proc)));
  if (get_proc == nullptr || calls == nullptr) return 1;

  auto query = [&](const char* name, int version, cuuint64_t flags, void** pfn,
                   CUdriverProcAddressQueryResult* status) { return get_proc(name, pfn, version, flags, status); };
  void* pfn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;

  // Hooked, current ABI → our wrapper, which reaches the stub's v2.
  expect(query("cuMemAlloc", 12000, 0, &pfn, &status) == CUDA_SUCCESS, "cuMemAlloc@12000 succeeds");
  expect(where(pfn) == "libmemtool.so:cuMemAlloc_v2", "cuMemAlloc@12000 → memtool's cuMemAlloc_v2: " + where(pfn));
  CUdeviceptr p = 0;
  *calls = 0;
  expect(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(pfn)(&p, 64) == CUDA_SUCCESS && p == 0x7000000 &&
             *calls == ((1u << 1) | (1u << 7)),
         "memtool's cuMemAlloc_v2 calls the stub's cuMemAlloc_v2, whose nested cuMemsetD8_v2 reaches the stub");

  // An ABI older than any we hook → the stub's own function.
  expect(query("cuMemAlloc", 3000, 0, &pfn, &status) == CUDA_SUCCESS, "cuMemAlloc@3000 succeeds");
  expect(where(pfn) == "libcuda.so.1:cuMemAlloc", "cuMemAlloc@3000 → the stub's v1 ABI: " + where(pfn));

  // Per-thread default stream → the _ptsz wrapper, holding the stub's _ptsz.
  expect(query("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &pfn, &status) == CUDA_SUCCESS,
         "cuLaunchKernel ptsz succeeds");
  expect(where(pfn) == "libmemtool.so:cuLaunchKernel_ptsz", "per-thread → cuLaunchKernel_ptsz: " + where(pfn));
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  *calls = 0;
  (void)reinterpret_cast<Launch>(pfn)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  expect(*calls == (1u << 3), "the _ptsz wrapper calls the stub's _ptsz");
  expect(query("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &pfn, &status) == CUDA_SUCCESS &&
             where(pfn) == "libmemtool.so:cuLaunchKernel",
         "legacy → cuLaunchKernel: " + where(pfn));
  *calls = 0;
  (void)reinterpret_cast<Launch>(pfn)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  expect(*calls == (1u << 2), "the legacy wrapper calls the stub's legacy launch");

  // Success with NULL: passed through as is.
  pfn = reinterpret_cast<void*>(0x1);
  status = CU_GET_PROC_ADDRESS_SUCCESS;
  expect(query("cuMemFree", 12000, 0, &pfn, &status) == CUDA_SUCCESS && pfn == nullptr &&
             status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
         "cuMemFree: success, NULL and SYMBOL_NOT_FOUND pass through");
  // An error and its symbolStatus: passed through.
  status = CU_GET_PROC_ADDRESS_SUCCESS;
  expect(query("cuMemAllocAsync", 11000, 0, &pfn, &status) == CUDA_ERROR_NOT_FOUND && pfn == nullptr &&
             status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
         "cuMemAllocAsync: NOT_FOUND and VERSION_NOT_SUFFICIENT pass through");
  // An error that leaves *pfn alone: we leave it alone too.
  pfn = reinterpret_cast<void*>(0x1234);
  expect(query("cuMemGetInfo", 12000, 0, &pfn, &status) == CUDA_ERROR_NOT_SUPPORTED &&
             pfn == reinterpret_cast<void*>(0x1234),
         "cuMemGetInfo: NOT_SUPPORTED passes through, pfn untouched");
  // Not hooked: the stub's pointer.
  expect(query("cuInit", 12000, 0, &pfn, &status) == CUDA_SUCCESS && where(pfn) == "libcuda.so.1:cuInit",
         "cuInit → the stub's: " + where(pfn));
  expect(query("cuNoSuchThing", 12000, 0, &pfn, &status) == CUDA_ERROR_NOT_FOUND &&
             status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
         "unknown symbol: NOT_FOUND passes through");

  // Versions: 13.0 changed cuCtxSynchronize's ABI (hooked as cuCtxSynchronize_v2); a driver that
  // hands out yet another function for 14.0 is not wrapped with an ABI we do not know.
  expect(query("cuCtxSynchronize", 13010, 0, &pfn, &status) == CUDA_SUCCESS &&
             where(pfn) == "libmemtool.so:cuCtxSynchronize_v2",
         "cuCtxSynchronize@13010 → memtool's cuCtxSynchronize_v2: " + where(pfn));
  *calls = 0;
  (void)reinterpret_cast<CUresult (*)(CUcontext)>(pfn)(nullptr);
  expect(*calls == (1u << 4), "the cuCtxSynchronize_v2 wrapper calls the stub's");
  expect(query("cuCtxSynchronize", 14000, 0, &pfn, &status) == CUDA_SUCCESS &&
             where(pfn) == "libcuda.so.1:stub_future_cuCtxSynchronize",
         "cuCtxSynchronize@14000 (unknown ABI) → the stub's own: " + where(pfn));

  // The resolver itself, asked through the resolver.
  expect(query("cuGetProcAddress", 12000, 0, &pfn, &status) == CUDA_SUCCESS &&
             where(pfn) == "libmemtool.so:cuGetProcAddress_v2",
         "cuGetProcAddress@12000 → memtool's: " + where(pfn));

  // dlsym: hooked symbols → ours, others → the driver's, RTLD_NEXT keeps its meaning.
  expect(where(dlsym(driver, "cuMemAlloc_v2")) == "libmemtool.so:cuMemAlloc_v2", "dlsym(cuMemAlloc_v2) → memtool's");
  expect(where(dlsym(driver, "cuInit")) == "libcuda.so.1:cuInit", "dlsym(cuInit) → the stub's");
  expect(dlsym(driver, "cuNoSuchThing") == nullptr, "dlsym of a missing symbol → NULL");
  expect(dlsym(RTLD_NEXT, "getpid") == reinterpret_cast<void*>(&getpid), "dlsym(RTLD_NEXT, getpid) → libc's");
  // The C API, found the way a program that does not depend on memtool finds it.
  const auto version = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "memtool_version"));
  expect(version != nullptr && std::strlen(version()) > 0, "memtool_version is exported");
  const auto mark = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memtool_iteration_mark"));
  expect(mark != nullptr, "memtool_iteration_mark is exported");
  if (mark != nullptr) mark();

  if (g_failures == 0) std::printf("resolver ok\n");
  return g_failures == 0 ? 0 : 1;
}
