// list_host_kernels OBJECT: prints the fakecuda kernel table an object exports, one kernel a line:
// "name size@offset size@offset ...". Used by the test that checks the host kernels against the
// signatures of their .cu twins.
#include <fakecuda/kernel_abi.h>

#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: list_host_kernels OBJECT\n");
    return 2;
  }
  void* object = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (object == nullptr) {
    std::fprintf(stderr, "list_host_kernels: %s\n", dlerror());
    return 1;
  }
  const auto* table = static_cast<const fakecuda_kernel_table*>(dlsym(object, FAKECUDA_KERNEL_TABLE_SYMBOL));
  if (table == nullptr || table->abi_version != FAKECUDA_KERNEL_ABI_VERSION) {
    std::fprintf(stderr, "list_host_kernels: no fakecuda_kernels table of ABI version %u\n",
                 FAKECUDA_KERNEL_ABI_VERSION);
    return 1;
  }
  for (unsigned k = 0; k < table->count; ++k) {
    const fakecuda_kernel_desc& kernel = table->kernels[k];
    std::printf("%s", kernel.name);
    for (unsigned p = 0; p < kernel.param_count; ++p) {
      std::printf(" %u@%u", kernel.param_sizes[p], kernel.param_offsets[p]);
    }
    std::printf("\n");
  }
  return 0;
}
