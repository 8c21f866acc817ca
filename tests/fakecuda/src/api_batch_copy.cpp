// Entry points: batch copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync), in both generations: CUDA
// 12.8's, which reports the failing copy through failIdx, and CUDA 13's _v2 without it, each with a
// _ptsz twin. Every copy of a batch is validated before any is issued (a bad one fails the call and
// nothing runs); then they are issued in order on the stream through the ordinary copy path (link
// model, work observer, counters), so the batch runs in stream order as a whole. A source whose
// attributes say CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL is read before the call returns (the
// caller may reuse it at once); STREAM and ANY sources are read in stream order. On a capturing
// stream a batch is refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), not recorded.
#include "capture.hpp"
#include "copy_path.hpp"
#include "cuda_abi_devices.hpp"
#include "driver.hpp"
#include "streams.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {

constexpr std::size_t kNoCopy = SIZE_MAX;  // failIdx when the error is not one copy's

// "Must not be legacy NULL stream": NULL is the legacy stream except in the _ptsz forms.
bool legacy_stream(CUstream h, bool per_thread) { return h == CU_STREAM_LEGACY || (h == nullptr && !per_thread); }

CUresult check_order_and_flags(CUmemcpySrcAccessOrder order, unsigned flags) {
  if (order != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && order != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
      order != CU_MEMCPY_SRC_ACCESS_ORDER_ANY) {
    return CUDA_ERROR_INVALID_VALUE;  // every copy needs a valid srcAccessOrder
  }
  return (flags & ~static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)) != 0 ? CUDA_ERROR_INVALID_VALUE
                                                                                           : CUDA_SUCCESS;
}

// One copy of a batch, ready to issue.
struct BatchCopy {
  CopySide dst;
  CopySide src;
  CopyExtent extent;
  bool read_at_call = false;
};

// Issues validated copies; a source read at the call goes through a snapshot taken now.
CUresult issue_all(const std::vector<BatchCopy>& copies, CUstream h, bool per_thread) {
  return guarded([&] {
    if (captures_exist()) {  // not captured here (a snapshot source would not outlive the call)
      std::shared_ptr<Stream> s;
      FC_TRY(resolve_stream(h, per_thread, s));
      FC_TRY(capture_refuse(s));
    }
    for (const BatchCopy& c : copies) {
      if (!c.read_at_call) {
        FC_TRY(issue_unified_copy(c.dst, c.src, c.extent, h, per_thread));
        continue;
      }
      // Read before returning: the snapshot is pageable host memory, which the copy path captures
      // (or, with the link modelled, waits for) before issue_unified_copy returns.
      const std::size_t span = copy_side_span(c.src, c.extent);
      std::vector<unsigned char> snapshot(span);
      std::memcpy(snapshot.data(), reinterpret_cast<const void*>(c.src.address), span);
      CopySide from = c.src;
      from.address = reinterpret_cast<CUdeviceptr>(snapshot.data());
      FC_TRY(issue_unified_copy(c.dst, from, c.extent, h, per_thread));
    }
    return CUDA_SUCCESS;
  });
}

CUresult batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
               size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, CUstream h, bool per_thread) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  const auto fail = [failIdx](CUresult r, std::size_t index) {
    if (failIdx != nullptr) {
      *failIdx = index;
    }
    return r;
  };
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr || attrs == nullptr ||
      attrsIdxs == nullptr || numAttrs == 0 || numAttrs > count || legacy_stream(h, per_thread)) {
    return fail(CUDA_ERROR_INVALID_VALUE, kNoCopy);
  }
  // attrsIdxs: starts at 0, strictly increasing, each below count.
  for (size_t k = 0; k < numAttrs; ++k) {
    if ((k == 0 && attrsIdxs[0] != 0) || (k > 0 && attrsIdxs[k] <= attrsIdxs[k - 1]) || attrsIdxs[k] >= count) {
      return fail(CUDA_ERROR_INVALID_VALUE, kNoCopy);
    }
    const CUresult r = check_order_and_flags(attrs[k].srcAccessOrder, attrs[k].flags);
    if (r != CUDA_SUCCESS) {
      return fail(r, attrsIdxs[k]);
    }
  }
  std::vector<BatchCopy> copies;
  copies.reserve(count);
  size_t attr = 0;
  for (size_t i = 0; i < count; ++i) {
    while (attr + 1 < numAttrs && attrsIdxs[attr + 1] <= i) {
      ++attr;
    }
    BatchCopy c;
    c.dst.address = dsts[i];
    c.src.address = srcs[i];
    c.extent.width = sizes[i];
    c.read_at_call = attrs[attr].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    const CUresult r = check_unified_copy(c.dst, c.src, c.extent);
    if (r != CUDA_SUCCESS) {
      return fail(r, i);
    }
    if (sizes[i] > 0) {
      copies.push_back(c);
    }
  }
  const CUresult r = issue_all(copies, h, per_thread);
  return r == CUDA_SUCCESS ? r : fail(r, kNoCopy);
}

// A pointer operand; CUDA arrays do not exist here, so an array operand is never valid.
CUresult operand_side(const CUmemcpy3DOperand& op, const CUextent3D& extent, CopySide& out) {
  if (op.type != CU_MEMCPY_OPERAND_TYPE_POINTER) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto& p = op.op.ptr;
  if ((p.rowLength != 0 && p.rowLength < extent.width) || (p.layerHeight != 0 && p.layerHeight < extent.height)) {
    return CUDA_ERROR_INVALID_VALUE;  // rows or layers shorter than the copy
  }
  // Pointer-to-pointer copies have 1-byte elements: lengths in elements are bytes.
  out.address = p.ptr;
  out.pitch = p.rowLength == 0 ? extent.width : p.rowLength;
  out.height = p.layerHeight == 0 ? extent.height : p.layerHeight;
  return CUDA_SUCCESS;
}

CUresult batch_3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx, unsigned long long flags, CUstream h,
                  bool per_thread) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  const auto fail = [failIdx](CUresult r, std::size_t index) {
    if (failIdx != nullptr) {
      *failIdx = index;
    }
    return r;
  };
  if (numOps == 0 || opList == nullptr || flags != 0 || legacy_stream(h, per_thread)) {
    return fail(CUDA_ERROR_INVALID_VALUE, kNoCopy);
  }
  std::vector<BatchCopy> copies;
  copies.reserve(numOps);
  for (size_t i = 0; i < numOps; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = opList[i];
    if (op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0) {
      return fail(CUDA_ERROR_INVALID_VALUE, i);  // "must not be 0"
    }
    CUresult r = check_order_and_flags(op.srcAccessOrder, op.flags);
    BatchCopy c;
    if (r == CUDA_SUCCESS) r = operand_side(op.src, op.extent, c.src);
    if (r == CUDA_SUCCESS) r = operand_side(op.dst, op.extent, c.dst);
    c.extent = CopyExtent{op.extent.width, op.extent.height, op.extent.depth};
    c.read_at_call = op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    if (r == CUDA_SUCCESS) r = check_unified_copy(c.dst, c.src, c.extent);
    if (r != CUDA_SUCCESS) {
      return fail(r, i);
    }
    copies.push_back(c);
  }
  const CUresult r = issue_all(copies, h, per_thread);
  return r == CUDA_SUCCESS ? r : fail(r, kNoCopy);
}

}  // namespace

// CUDA 12.8.
FAKECUDA_API CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                         CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                         CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, false);
}
FAKECUDA_API CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                              CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                              size_t* failIdx, CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, true);
}
FAKECUDA_API CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                           unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, failIdx, flags, hStream, false);
}
FAKECUDA_API CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                                unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, failIdx, flags, hStream, true);
}

// CUDA 13.
FAKECUDA_API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                            CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, false);
}
FAKECUDA_API CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                                 CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, true);
}
FAKECUDA_API CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                              CUstream hStream) {
  return batch_3d(numOps, opList, nullptr, flags, hStream, false);
}
FAKECUDA_API CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                                   unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, nullptr, flags, hStream, true);
}
