// Measures what the link model delivers: for each configured bandwidth (unlimited, 1, 8 and 55
// GB/s by default, or those given as arguments), the achieved GB/s of 64 MiB copies H2D and D2H
// from pinned and from pageable host memory (stream time between two events, median of 3), and
// of an H2D and a D2H running at once on two streams. Prints a Markdown table (the one in
// tests/fakecuda/README.md). Not a test: figures depend on the machine; the model is an upper
// bound, a copy also needs the CPU time of its memmove.
// Usage: fakecuda_link_bandwidth [GBPS...]   (0: unlimited)
#include "fakecuda/control.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kBytes = std::size_t{64} << 20;
constexpr int kRepeats = 3;

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "link_bandwidth: %s failed with %d\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

double gb_per_s(std::size_t bytes, double ms) { return static_cast<double>(bytes) / (ms * 1e-3) / 1e9; }

// Achieved GB/s of one copy direction, median of kRepeats.
double one_way(bool h2d, void* host, CUdeviceptr device, CUstream s) {
  CUevent a = nullptr;
  CUevent b = nullptr;
  check(cuEventCreate(&a, 0), "cuEventCreate");
  check(cuEventCreate(&b, 0), "cuEventCreate");
  std::vector<double> rates;
  for (int i = 0; i < kRepeats; ++i) {
    check(cuEventRecord(a, s), "cuEventRecord");
    check(h2d ? cuMemcpyHtoDAsync(device, host, kBytes, s) : cuMemcpyDtoHAsync(host, device, kBytes, s), "copy");
    check(cuEventRecord(b, s), "cuEventRecord");
    check(cuEventSynchronize(b), "cuEventSynchronize");
    float ms = 0;
    check(cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
    rates.push_back(gb_per_s(kBytes, ms));
  }
  cuEventDestroy(a);
  cuEventDestroy(b);
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

// Aggregate GB/s of an H2D and a D2H issued together on two streams (wall time, median).
double both_ways(void* up_host, void* down_host, CUdeviceptr up, CUdeviceptr down, CUstream s1, CUstream s2) {
  std::vector<double> rates;
  for (int i = 0; i < kRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    check(cuMemcpyHtoDAsync(up, up_host, kBytes, s1), "copy");
    check(cuMemcpyDtoHAsync(down_host, down, kBytes, s2), "copy");
    check(cuStreamSynchronize(s1), "cuStreamSynchronize");
    check(cuStreamSynchronize(s2), "cuStreamSynchronize");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(gb_per_s(2 * kBytes, ms));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> settings = {0.0, 1.0, 8.0, 55.0};
  if (argc > 1) {
    settings.clear();
    for (int i = 1; i < argc; ++i) {
      settings.push_back(std::strtod(argv[i], nullptr));
    }
  }
  check(cuInit(0), "cuInit");
  CUcontext ctx = nullptr;
  check(cuDevicePrimaryCtxRetain(&ctx, 0), "retain");
  check(cuCtxSetCurrent(ctx), "set current");
  CUdeviceptr d1 = 0;
  CUdeviceptr d2 = 0;
  check(cuMemAlloc(&d1, kBytes), "cuMemAlloc");
  check(cuMemAlloc(&d2, kBytes), "cuMemAlloc");
  void* pinned1 = nullptr;
  void* pinned2 = nullptr;
  check(cuMemAllocHost(&pinned1, kBytes), "cuMemAllocHost");
  check(cuMemAllocHost(&pinned2, kBytes), "cuMemAllocHost");
  std::vector<unsigned char> pageable(kBytes, 1);
  std::memset(pinned1, 2, kBytes);
  std::memset(pinned2, 3, kBytes);
  check(cuMemsetD8(d1, 4, kBytes), "cuMemsetD8");
  check(cuMemsetD8(d2, 5, kBytes), "cuMemsetD8");
  CUstream s1 = nullptr;
  CUstream s2 = nullptr;
  check(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  std::printf("| configured GB/s | pinned H2D | pinned D2H | pageable H2D | pageable D2H | H2D + D2H at once |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const double gbps : settings) {
    fakecuda_link_config c{};
    fakecuda_link_get(&c);
    c.gbps = gbps;
    if (fakecuda_link_configure(&c) != 0) {
      std::fprintf(stderr, "link_bandwidth: %g is not a bandwidth\n", gbps);
      return 2;
    }
    const double pinned_up = one_way(true, pinned1, d1, s1);
    const double pinned_down = one_way(false, pinned1, d1, s1);
    const double pageable_up = one_way(true, pageable.data(), d1, s1);
    const double pageable_down = one_way(false, pageable.data(), d1, s1);
    const double duplex = both_ways(pinned1, pinned2, d1, d2, s1, s2);
    char label[32];
    std::snprintf(label, sizeof label, gbps > 0 ? "%g" : "unlimited", gbps);
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", label, pinned_up, pinned_down, pageable_up,
                pageable_down, duplex);
  }
  cuStreamDestroy(s1);
  cuStreamDestroy(s2);
  cuMemFreeHost(pinned1);
  cuMemFreeHost(pinned2);
  cuMemFree(d1);
  cuMemFree(d2);
  return 0;
}
