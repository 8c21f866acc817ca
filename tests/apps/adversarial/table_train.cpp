// table_train: a grouped step whose kernels reach their buffers through a pointer table in device
// memory (table_step.hpp), as batched and grouped GEMMs (MoE), NCCL's kernels and fused
// multi-tensor optimizers do. Only the table (or nothing, with --table global) is a kernel
// argument; the table is uploaded from pinned or pageable memory, or written by kernels.
//
// stdout: one line per step, "step S corrupted N checksum 0x…": N words read that did not hold
// what their last writer left (0 unless memory changed behind the kernels' back), and FNV-1a
// over the weights' digests. stderr: "CORRUPTED step S group G words N". Exit status 3 when any
// word was corrupted, 2 for a bad command line, 1 when a driver call fails.
#include "table_options.hpp"
#include "table_step.hpp"

#include "../common/driver_api.hpp"
#include "../common/session.hpp"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  const table::Options options = table::parse_options(argc, argv);
  const apps::DriverApi api = apps::linked_driver_api();
  const apps::LoadedModule loaded(api, options.module);  // unloaded when main returns
  table::TableKernels kernels;
  kernels.fill = loaded.function("pattern_fill");
  kernels.forward = loaded.function("grouped_forward");
  kernels.update = loaded.function("grouped_update");
  kernels.digest = loaded.function("grouped_digest");
  kernels.set = loaded.function("table_set");
  kernels.publish = loaded.function("table_publish");
  std::uint64_t corrupted = 0;
  {
    table::GroupedStep step(api, kernels, options);
    for (int s = 0; s < options.steps; ++s) {
      const std::string line = step.run(s);
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    corrupted = step.corrupted();
  }
  if (corrupted != 0) {
    std::fprintf(stderr, "table_train: %llu corrupted words\n", static_cast<unsigned long long>(corrupted));
    return 3;
  }
  return 0;
}
