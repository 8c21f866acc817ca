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
  APP_CHECK(api, cuInit(0));
  CUdevice device = 0;
  CUcontext context = nullptr;
  APP_CHECK(api, cuDeviceGet(&device, 0));
  APP_CHECK(api, cuDevicePrimaryCtxRetain(&context, device));
  APP_CHECK(api, cuCtxSetCurrent(context));
  const std::vector<char> image = apps::read_module_image(options.module);
  CUmodule module = nullptr;
  APP_CHECK(api, cuModuleLoadData(&module, image.data()));
  table::TableKernels kernels;
  APP_CHECK(api, cuModuleGetFunction(&kernels.fill, module, "pattern_fill"));
  APP_CHECK(api, cuModuleGetFunction(&kernels.forward, module, "grouped_forward"));
  APP_CHECK(api, cuModuleGetFunction(&kernels.update, module, "grouped_update"));
  APP_CHECK(api, cuModuleGetFunction(&kernels.digest, module, "grouped_digest"));
  APP_CHECK(api, cuModuleGetFunction(&kernels.set, module, "table_set"));
  APP_CHECK(api, cuModuleGetFunction(&kernels.publish, module, "table_publish"));
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
  APP_CHECK(api, cuModuleUnload(module));
  APP_CHECK(api, cuDevicePrimaryCtxRelease_v2(device));
  if (corrupted != 0) {
    std::fprintf(stderr, "table_train: %llu corrupted words\n", static_cast<unsigned long long>(corrupted));
    return 3;
  }
  return 0;
}
