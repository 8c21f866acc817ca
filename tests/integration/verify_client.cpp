// A buffer written through an address memtool cannot follow, for MEMTOOL_SWAP_VERIFY: a kernel
// (table_set) leaves the buffer's address in a buffer too large to be taken for a pointer table
// (MEMTOOL_SWAP_TABLE_BYTES) while the buffer is still on the device; the buffer is sent out
// (others are filled after it, under the budget); a kernel then writes it through that address
// (pattern_fill_indirect), and an announced kernel checks it once memtool brings it back. The
// bytes are right either way (the host copy is mapped at its address, or the driver migrates
// it); verify mode must say the buffer changed behind memtool's back, naming the writer.
// Prints "indirect write ok|BAD <word>"; exit 0 when it holds.
#include <cuda.h>

#include <cstdio>

#include "client_session.hpp"

using client::check;
using client::g_failures;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  CUdevice device = 0;
  CUcontext context = nullptr;
  const CUmodule module = client::open_session(argv[1], &device, &context);
  CUfunction fill = nullptr, verify = nullptr, fill_indirect = nullptr, table_set = nullptr;
  check(cuModuleGetFunction(&fill, module, "pattern_fill"), "pattern_fill");
  check(cuModuleGetFunction(&verify, module, "pattern_verify"), "pattern_verify");
  check(cuModuleGetFunction(&fill_indirect, module, "pattern_fill_indirect"), "pattern_fill_indirect");
  check(cuModuleGetFunction(&table_set, module, "table_set"), "table_set");
  if (g_failures != 0) return 1;

  constexpr std::size_t kBytes = std::size_t{4} << 20;
  constexpr std::size_t kHolderBytes = std::size_t{512} << 10;  // past MEMTOOL_SWAP_TABLE_BYTES, not swapped
  int words = static_cast<int>(kBytes / sizeof(unsigned));
  const auto launch = [](CUfunction f, void** params) {
    check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  };
  CUdeviceptr hidden = 0, holder = 0, verdict = 0;
  check(cuMemAlloc(&hidden, kBytes), "cuMemAlloc hidden");
  check(cuMemAlloc(&holder, kHolderBytes), "cuMemAlloc holder");
  check(cuMemAlloc(&verdict, sizeof(int)), "cuMemAlloc verdict");
  unsigned key = 0x5eed;
  void* fill_hidden[] = {&hidden, &key, &words};
  launch(fill, fill_hidden);
  int slot = 0;
  void* set_params[] = {&holder, &slot, &hidden};
  launch(table_set, set_params);
  // Newer buffers, filled after it: under the budget the hidden one is the first to go.
  CUdeviceptr others[6] = {};
  for (CUdeviceptr& other : others) {
    check(cuMemAlloc(&other, kBytes), "cuMemAlloc other");
    unsigned other_key = static_cast<unsigned>(other);
    void* params[] = {&other, &other_key, &words};
    launch(fill, params);
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuMemsetD8(verdict, 0xff, sizeof(int)), "cuMemsetD8");  // announced: the copies out settle

  unsigned key2 = 0xc0ffee;
  void* write_params[] = {&holder, &key2, &words};
  launch(fill_indirect, write_params);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  void* check_params[] = {&hidden, &key2, &words, &verdict};
  launch(verify, check_params);
  int host = 0;
  check(cuMemcpyDtoH(&host, verdict, sizeof host), "cuMemcpyDtoH");
  if (host < 0)
    std::printf("indirect write ok\n");
  else
    std::printf("indirect write BAD %d\n", host);

  for (const CUdeviceptr other : others) check(cuMemFree(other), "cuMemFree");
  for (const CUdeviceptr p : {hidden, holder, verdict}) check(cuMemFree(p), "cuMemFree");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  return g_failures == 0 && host < 0 ? 0 : 1;
}
