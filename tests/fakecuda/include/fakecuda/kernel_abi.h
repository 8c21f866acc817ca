/* How fakecuda runs "device" code: kernels are host functions in a shared object.
 *
 * A fake module image (what a test app passes to cuModuleLoadData / cuLibraryLoadData, or
 * the contents of the file given to cuModuleLoad) is NUL-terminated text:
 *
 *     FAKECUDA-MODULE\n<absolute path of a shared object>\n
 *
 * fakecuda dlopens that object and reads its exported `fakecuda_kernels` table. Each kernel
 * has the same name as its CUDA C++ twin (declared extern "C" __global__ in the .cu file), so
 * one test app runs on fakecuda and, with a real cubin, on a GPU. Parameter offsets and sizes
 * are what cuFuncGetParamInfo reports and how a launch's `extra` buffer is unpacked.
 */
#ifndef FAKECUDA_KERNEL_ABI_H
#define FAKECUDA_KERNEL_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

#define FAKECUDA_MODULE_MAGIC "FAKECUDA-MODULE\n"
#define FAKECUDA_KERNEL_ABI_VERSION 1u

typedef struct fakecuda_launch_dims {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
} fakecuda_launch_dims;

/* params[i] points at the value of parameter i, exactly as cuLaunchKernel's kernelParams.
 * Device pointers are directly dereferenceable host addresses inside fakecuda. */
typedef void (*fakecuda_kernel_fn)(void** params, const fakecuda_launch_dims* dims);

typedef struct fakecuda_kernel_desc {
  const char* name;
  fakecuda_kernel_fn fn;
  unsigned param_count;
  const unsigned* param_offsets; /* byte offset of each parameter in the packed buffer */
  const unsigned* param_sizes;   /* byte size of each parameter */
} fakecuda_kernel_desc;

typedef struct fakecuda_kernel_table {
  unsigned abi_version; /* FAKECUDA_KERNEL_ABI_VERSION */
  unsigned count;
  const fakecuda_kernel_desc* kernels;
} fakecuda_kernel_table;

/* The symbol a kernel object exports. */
#define FAKECUDA_KERNEL_TABLE_SYMBOL "fakecuda_kernels"

#ifdef __cplusplus
}
#endif

#endif /* FAKECUDA_KERNEL_ABI_H */
