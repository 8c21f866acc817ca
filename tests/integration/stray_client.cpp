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

#include "hidden_buffer_client.hpp"

using client::check;
using client::g_failures;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  client::HiddenBufferClient session(argv[1]);
  const CUfunction verify_indirect = session.function("pattern_verify_indirect");
  if (g_failures != 0) return 1;

  CUdeviceptr hidden = 0, table = 0, verdicts = 0;
  check(cuMemAlloc(&hidden, client::HiddenBufferClient::kBytes), "cuMemAlloc hidden");
  unsigned key = 0x5eed;
  session.fill(hidden, key);
  check(cuMemAlloc(&table, sizeof(CUdeviceptr)), "cuMemAlloc table");
  check(cuMemcpyHtoD(table, &hidden, sizeof hidden), "cuMemcpyHtoD table");
  check(cuMemAlloc(&verdicts, 2 * sizeof(int)), "cuMemAlloc verdicts");
  // Newer buffers, filled after it: under the budget the hidden one (never announced again)
  // is the first to go.
  session.fill_newer();
  check(cuMemsetD8(verdicts, 0xff, 2 * sizeof(int)), "cuMemsetD8");  // announced: the copies out settle

  CUdeviceptr read_verdict = verdicts;
  void* read_params[] = {&table, &key, session.words(), &read_verdict};
  session.launch(verify_indirect, read_params);
  unsigned key2 = 0xc0ffee;
  void* write_params[] = {&table, &key2, session.words()};
  session.launch(session.fill_indirect, write_params);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  CUdeviceptr write_verdict = verdicts + sizeof(int);
  void* check_params[] = {&hidden, &key2, session.words(), &write_verdict};
  session.launch(session.verify, check_params);
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

  const bool clean = session.finish({hidden, table, verdicts});
  return clean && host[0] < 0 && host[1] < 0 ? 0 : 1;
}
