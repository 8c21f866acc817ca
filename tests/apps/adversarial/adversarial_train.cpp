// adversarial_train: a deterministic driver-API program built to break a memory pool that plans
// from observed iterations (see schedule.hpp and README.md): the iteration's shape changes every
// --shape-period iterations, evaluation iterations and seeded extra allocations interrupt it,
// buffers are freed late and traded between two streams, sync and stream-ordered allocations mix,
// and --threads host threads do all of it at once, each on its own streams.
//
// stdout: one line per iteration, "iter I checksum 0x…" — FNV-1a over every thread's iteration
// checksum, in thread order, so it does not depend on how the threads interleave.
// stderr: "CORRUPTED iter I buffer B offset O thread T" for a buffer that did not hold its
// pattern when it was freed; the program then exits with status 3.
#include "options.hpp"
#include "worker.hpp"

#include "../common/checksum.hpp"
#include "../common/driver_api.hpp"
#include "../common/session.hpp"

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int kCorruptedStatus = 3;

// Prints the iteration line once every thread has finished that iteration.
struct IterationPrinter {
  const std::vector<std::vector<std::uint64_t>>* per_thread;
  const std::atomic<bool>* corrupted;
  int* next_iteration;
  void operator()() noexcept {
    const int iteration = (*next_iteration)++;
    if (corrupted->load()) return;  // the run is already lost; print nothing misleading
    apps::Checksum checksum;
    for (const auto& thread_results : *per_thread) {
      const std::uint64_t value = thread_results[static_cast<std::size_t>(iteration)];
      checksum.add(&value, sizeof value);
    }
    std::printf("iter %d checksum 0x%016llx\n", iteration, static_cast<unsigned long long>(checksum.value()));
    std::fflush(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const adversarial::Options options = adversarial::parse_options(argc, argv);
  const apps::DriverApi api = apps::linked_driver_api();

  // The module is loaded once into the primary context that every thread makes current.
  const apps::LoadedModule loaded(api, options.module);  // unloaded when main returns
  adversarial::PatternKernels kernels;
  kernels.fill = loaded.function("pattern_fill");
  kernels.digest = loaded.function("pattern_digest");
  kernels.verify = loaded.function("pattern_verify");

  const auto threads = static_cast<std::size_t>(options.threads);
  std::vector<std::vector<std::uint64_t>> per_thread(
      threads, std::vector<std::uint64_t>(static_cast<std::size_t>(options.iterations), 0));
  std::atomic<bool> corrupted{false};
  int next_iteration = 0;
  std::barrier iteration_done(options.threads, IterationPrinter{&per_thread, &corrupted, &next_iteration});

  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < options.threads; ++t) {
    workers.emplace_back([&, t] {
      adversarial::Worker worker(api, kernels, options, t);
      auto& results = per_thread[static_cast<std::size_t>(t)];
      for (int i = 0; i < options.iterations; ++i) {
        // Every thread arrives at every iteration's barrier, even after a corruption was seen
        // (then without working), so no thread waits for one that stopped.
        if (!corrupted.load() && !worker.run_iteration(i, results[static_cast<std::size_t>(i)])) {
          corrupted.store(true);
        }
        iteration_done.arrive_and_wait();
      }
      if (!worker.finish()) corrupted.store(true);
    });
  }
  for (auto& worker : workers) worker.join();

  return corrupted.load() ? kCorruptedStatus : 0;
}
