// A tiny driver-API program for the link tests: cuInit, then prints the link model it got from
// the environment (fakecuda_link_get) as "gbps latency_us duplex_factor pageable_factor", so a
// test can check what a FAKECUDA_LINK_* value turned into and what was said on stderr.
#include "fakecuda/control.h"

#include <cuda.h>

#include <cstdio>

int main() {
  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "link_child: cuInit failed\n");
    return 1;
  }
  fakecuda_link_config c{};
  fakecuda_link_get(&c);
  std::printf("%g %g %g %g\n", c.gbps, c.latency_us, c.duplex_factor, c.pageable_factor);
  return 0;
}
