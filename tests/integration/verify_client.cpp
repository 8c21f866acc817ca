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

#include "hidden_buffer_client.hpp"

using client::check;
using client::g_failures;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  client::HiddenBufferClient session(argv[1]);
  const CUfunction table_set = session.function("table_set");
  if (g_failures != 0) return 1;

  constexpr std::size_t kHolderBytes = std::size_t{512} << 10;  // past MEMTOOL_SWAP_TABLE_BYTES, not swapped
  CUdeviceptr hidden = 0, holder = 0, verdict = 0;
  check(cuMemAlloc(&hidden, client::HiddenBufferClient::kBytes), "cuMemAlloc hidden");
  check(cuMemAlloc(&holder, kHolderBytes), "cuMemAlloc holder");
  check(cuMemAlloc(&verdict, sizeof(int)), "cuMemAlloc verdict");
  session.fill(hidden, 0x5eed);
  int slot = 0;
  void* set_params[] = {&holder, &slot, &hidden};
  session.launch(table_set, set_params);
  // Newer buffers, filled after it: under the budget the hidden one is the first to go.
  session.fill_newer();
  check(cuMemsetD8(verdict, 0xff, sizeof(int)), "cuMemsetD8");  // announced: the copies out settle

  unsigned key2 = 0xc0ffee;
  void* write_params[] = {&holder, &key2, session.words()};
  session.launch(session.fill_indirect, write_params);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  void* check_params[] = {&hidden, &key2, session.words(), &verdict};
  session.launch(session.verify, check_params);
  int host = 0;
  check(cuMemcpyDtoH(&host, verdict, sizeof host), "cuMemcpyDtoH");
  if (host < 0)
    std::printf("indirect write ok\n");
  else
    std::printf("indirect write BAD %d\n", host);

  const bool clean = session.finish({hidden, holder, verdict});
  return clean && host < 0 ? 0 : 1;
}
