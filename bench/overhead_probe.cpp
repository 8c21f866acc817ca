// overhead_probe: what libmemtool.so adds to an intercepted allocation, free and launch on any
// libcuda.so.1 — a real driver on a GPU machine (tests/gpu/run.sh), or fakecuda. The paired
// measurement of bench_interpose (interpose_overhead.hpp) without Google Benchmark, linked with
// static libstdc++ so that the binary carried from the development machine runs there.
//
// Usage: overhead_probe --driver LIBCUDA --preload LIBMEMTOOL --module IMAGE [--samples N] [--seconds S]
// Prints one JSON object: per call, the median added time and the direct call's median time,
// for allocation+free blocks and launch blocks, and how many paired samples each took.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "interpose_overhead.hpp"

namespace {

struct Figures {
  double added_ns = 0;
  double direct_ns = 0;
  std::size_t samples = 0;
};

// Paired samples of `block` until `samples` or `seconds`, alternating which side goes first.
template <class Block>
Figures measure(const memtool::bench::OverheadSetup& setup, Block& block, double calls, std::size_t samples,
                double seconds) {
  std::vector<double> added;
  std::vector<double> direct;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int warm = 0; warm < 8; ++warm) (void)memtool::bench::paired_sample(setup, block, calls, warm % 2 == 0);
  bool direct_first = true;
  while (added.size() < samples && std::chrono::steady_clock::now() < deadline) {
    double direct_ns = 0;
    added.push_back(memtool::bench::paired_sample(setup, block, calls, direct_first, &direct_ns));
    direct.push_back(direct_ns);
    direct_first = !direct_first;
  }
  return Figures{memtool::bench::median(added), memtool::bench::median(direct), added.size()};
}

int usage(const char* why) {
  std::fprintf(stderr,
               "overhead_probe: %s\nusage: overhead_probe --driver LIBCUDA --preload LIBMEMTOOL --module IMAGE "
               "[--samples N] [--seconds S]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  memtool::bench::OverheadPaths paths;
  std::size_t samples = 2000;
  double seconds = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--driver") {
      paths.driver = value;
    } else if (arg == "--preload") {
      paths.preload = value;
    } else if (arg == "--module") {
      paths.module_image = value;
    } else if (arg == "--samples") {
      samples = std::strtoull(value, nullptr, 10);
    } else if (arg == "--seconds") {
      seconds = std::strtod(value, nullptr);
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (paths.driver.empty() || paths.preload.empty() || paths.module_image.empty()) {
    return usage("--driver, --preload and --module are required");
  }
  if (samples == 0 || !(seconds > 0)) return usage("--samples and --seconds must be positive");

  const memtool::bench::OverheadSetup setup = memtool::bench::open_overhead_setup(paths);
  if (!setup.error.empty()) {
    std::fprintf(stderr, "overhead_probe: %s\n", setup.error.c_str());
    return 1;
  }
  auto alloc_free = memtool::bench::alloc_free_block;
  const Figures a = measure(setup, alloc_free, memtool::bench::kAllocFreeCalls, samples, seconds);
  memtool::bench::LaunchBlock launch(setup);
  const Figures l = measure(setup, launch, memtool::bench::kLaunchCalls, samples, seconds);
  std::printf(
      "{\"goal_added_ns\": 100, "
      "\"alloc_free\": {\"added_ns\": %.1f, \"direct_ns\": %.1f, \"samples\": %zu, \"block\": \"16 x (cuMemAlloc_v2 4 "
      "KiB + cuMemFree_v2)\"}, "
      "\"launch\": {\"added_ns\": %.1f, \"direct_ns\": %.1f, \"samples\": %zu, \"block\": \"64 x cuLaunchKernel (2 "
      "pointer args) + cuStreamSynchronize\"}}\n",
      a.added_ns, a.direct_ns, a.samples, l.added_ns, l.direct_ns, l.samples);
  return 0;
}
