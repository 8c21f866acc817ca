// A kernel object with a corrupt table (a parameter beyond the parameter buffer): loading it must
// fail with CUDA_ERROR_INVALID_IMAGE instead of trusting it.
#include "fakecuda/kernel_abi.h"

namespace {

void never_called(void**, const fakecuda_launch_dims*) {}

const unsigned offsets[] = {4000000000u};
const unsigned sizes[] = {8};
const fakecuda_kernel_desc kernels[] = {{"broken", never_called, 1, offsets, sizes}};

}  // namespace

extern "C" __attribute__((visibility("default")))
const fakecuda_kernel_table fakecuda_kernels = {FAKECUDA_KERNEL_ABI_VERSION, 1, kernels};
