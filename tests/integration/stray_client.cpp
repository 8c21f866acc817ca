// A buffer reached only through a pointer kept in device memory, as pointer arrays, grouped
// kernels and CUDA graphs reach theirs: memtool's argument scan sees the table, never the
// buffer. Run under MEMTOOL_STRATEGY=swap with a budget that sends the buffer out (others are
// filled after it); kernels then read it and write it through the table while it is out, and a
// last, announced kernel checks what it holds once memtool brings it back.
// Prints "indirect read ok|BAD <word>", "indirect write ok|BAD <word>"; exit 0 when both hold.
// The host waits before the announced kernel: a swap-in remaps the address at once, so work
// queued earlier that reaches the buffer unannounced must have run (docs/swapping.md).
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
  CUfunction fill = nullptr, verify = nullptr, fill_indirect = nullptr, verify_indirect = nullptr;
  check(cuModuleGetFunction(&fill, module, "pattern_fill"), "pattern_fill");
  check(cuModuleGetFunction(&verify, module, "pattern_verify"), "pattern_verify");
  check(cuModuleGetFunction(&fill_indirect, module, "pattern_fill_indirect"), "pattern_fill_indirect");
  check(cuModuleGetFunction(&verify_indirect, module, "pattern_verify_indirect"), "pattern_verify_indirect");
  if (g_failures != 0) return 1;

  constexpr std::size_t kBytes = std::size_t{4} << 20;
  int words = static_cast<int>(kBytes / sizeof(unsigned));
  const auto launch = [](CUfunction f, void** params) {
    check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  };
  CUdeviceptr hidden = 0, table = 0, verdicts = 0;
  check(cuMemAlloc(&hidden, kBytes), "cuMemAlloc hidden");
  unsigned key = 0x5eed;
  void* fill_hidden[] = {&hidden, &key, &words};
  launch(fill, fill_hidden);
  check(cuMemAlloc(&table, sizeof(CUdeviceptr)), "cuMemAlloc table");
  check(cuMemcpyHtoD(table, &hidden, sizeof hidden), "cuMemcpyHtoD table");
  check(cuMemAlloc(&verdicts, 2 * sizeof(int)), "cuMemAlloc verdicts");
  // Newer buffers, filled after it: under the budget the hidden one (never announced again)
  // is the first to go.
  CUdeviceptr others[6] = {};
  for (CUdeviceptr& other : others) {
    check(cuMemAlloc(&other, kBytes), "cuMemAlloc other");
    unsigned other_key = static_cast<unsigned>(other);
    void* params[] = {&other, &other_key, &words};
    launch(fill, params);
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuMemsetD8(verdicts, 0xff, 2 * sizeof(int)), "cuMemsetD8");  // announced: the copies out settle

  CUdeviceptr read_verdict = verdicts;
  void* read_params[] = {&table, &key, &words, &read_verdict};
  launch(verify_indirect, read_params);
  unsigned key2 = 0xc0ffee;
  void* write_params[] = {&table, &key2, &words};
  launch(fill_indirect, write_params);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  CUdeviceptr write_verdict = verdicts + sizeof(int);
  void* check_params[] = {&hidden, &key2, &words, &write_verdict};
  launch(verify, check_params);
  int host[2] = {0, 0};
  check(cuMemcpyDtoH(host, verdicts, sizeof host), "cuMemcpyDtoH");
  if (host[0] < 0)
    std::printf("indirect read ok\n");
  else
    std::printf("indirect read BAD %d\n", host[0]);
  if (host[1] < 0)
    std::printf("indirect write ok\n");
  else
    std::printf("indirect write BAD %d\n", host[1]);

  for (const CUdeviceptr other : others) check(cuMemFree(other), "cuMemFree");
  check(cuMemFree(hidden), "cuMemFree");
  check(cuMemFree(table), "cuMemFree");
  check(cuMemFree(verdicts), "cuMemFree");
  check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  return g_failures == 0 && host[0] < 0 && host[1] < 0 ? 0 : 1;
}
