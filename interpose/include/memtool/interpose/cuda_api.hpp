// The CUDA driver header as the interposer needs it: every ABI version of every entry point
// declared under its own name (cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds, cuMemAllocAsync_ptsz, ...),
// with none of the header's renaming macros, so that the hook table names exactly the symbol
// it means. This is what __CUDA_API_VERSION_INTERNAL is for; include this header, never
// <cuda.h> directly, anywhere in interpose/.
#pragma once

#if defined(CUDA_VERSION)
#error "include memtool/interpose/cuda_api.hpp before any other CUDA header"
#endif
#define __CUDA_API_VERSION_INTERNAL 1  // NOLINT(bugprone-reserved-identifier): the header's switch
// The driver's functions are defined elsewhere, or by libmemtool.so's exported wrappers: they
// keep default visibility under -fvisibility=hidden.
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop
#undef __CUDA_API_VERSION_INTERNAL
