// Kernels for fakecuda's graph and capture tests: host functions registered by name with their
// parameter layouts (see fakecuda/kernel_abi.h). Each one's result depends on the order it runs
// in relative to the others, so a test can see whether dependencies were honoured.
#include "fakecuda/kernel_abi.h"

#include <cstring>

namespace {

template <class T>
T arg(void** params, unsigned i) {
  T value;
  std::memcpy(&value, params[i], sizeof value);
  return value;
}

// affine_u32(unsigned* data, unsigned mul, unsigned add, unsigned n): data[i] = data[i] * mul + add.
void affine_u32(void** params, const fakecuda_launch_dims*) {
  auto* data = arg<unsigned*>(params, 0);
  const auto mul = arg<unsigned>(params, 1);
  const auto add = arg<unsigned>(params, 2);
  const auto n = arg<unsigned>(params, 3);
  for (unsigned i = 0; i < n; ++i) {
    data[i] = data[i] * mul + add;
  }
}

// append_id(unsigned* log, unsigned id): log[0] counts the entries, log[1..] holds the ids in the
// order the launches ran (atomically: launches on several streams may append at once).
void append_id(void** params, const fakecuda_launch_dims*) {
  auto* log = arg<unsigned*>(params, 0);
  const auto id = arg<unsigned>(params, 1);
  const unsigned at = __atomic_fetch_add(&log[0], 1u, __ATOMIC_SEQ_CST);
  log[1 + at] = id;
}

const unsigned affine_offsets[] = {0, 8, 12, 16};
const unsigned affine_sizes[] = {8, 4, 4, 4};
const unsigned append_offsets[] = {0, 8};
const unsigned append_sizes[] = {8, 4};

const fakecuda_kernel_desc kernels[] = {
    {"affine_u32", affine_u32, 4, affine_offsets, affine_sizes},
    {"append_id", append_id, 2, append_offsets, append_sizes},
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fakecuda_kernel_table fakecuda_kernels = {
    FAKECUDA_KERNEL_ABI_VERSION, sizeof kernels / sizeof kernels[0], kernels};
