// The copy path of api_copy.cpp, for entry points elsewhere that issue copies of their own (the
// batch copies): both sides classified by unified addressing (device memory is what the driver
// allocated as such), laid out in rows and slices, validated and issued exactly as cuMemcpy3DAsync
// would be, through the same link model, work observer and counters.
#pragma once

#include "cuda_abi.hpp"

#include <cstddef>

namespace fakecuda {

// One side of a copy: its first byte, and (0: packed) the bytes between rows and rows per slice.
struct CopySide {
  CUdeviceptr address = 0;
  std::size_t pitch = 0;
  std::size_t height = 0;
};

// `width` bytes per row, `rows` rows per slice, `slices` slices.
struct CopyExtent {
  std::size_t width = 0;
  std::size_t rows = 1;
  std::size_t slices = 1;
};

// CUDA_ERROR_INVALID_VALUE when the copy could not be issued (a side outside the memory it is
// in, or an impossible layout); nothing is issued.
CUresult check_unified_copy(const CopySide& dst, const CopySide& src, const CopyExtent& extent);
// Issues it on `stream` (the _ptsz rule for NULL when per_thread), asynchronously.
CUresult issue_unified_copy(const CopySide& dst, const CopySide& src, const CopyExtent& extent, CUstream stream,
                            bool per_thread);
// The bytes from a side's first byte to one past its last, for this extent (0 if impossible).
std::size_t copy_side_span(const CopySide& side, const CopyExtent& extent);

}  // namespace fakecuda
