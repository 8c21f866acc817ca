// Entry points: copies and memsets, synchronous and stream-ordered. Each follows the driver's
// documented host synchronisation: a pageable source is captured before an async H2D returns,
// a D2H into pageable memory returns when the data is there, D2D and device memsets are
// asynchronous even in their "synchronous" forms. Device ranges are checked when the call is made
// (CUDA_ERROR_INVALID_VALUE) and again when the stream runs the work: memory freed in stream
// order meanwhile is a device fault, reported as a sticky CUDA_ERROR_ILLEGAL_ADDRESS.
#include "driver.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"

#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {

enum class Side : unsigned char { host, device };

struct Endpoint {
  std::uintptr_t address = 0;
  Side side = Side::host;
  bool pinned = false;  // host side: page-locked, so the copy may run later
};

Endpoint device_end(CUdeviceptr p) { return Endpoint{p, Side::device, false}; }

Endpoint host_end(const void* p, std::size_t bytes) {
  return Endpoint{reinterpret_cast<std::uintptr_t>(p), Side::host, memory().is_pinned_host(p, bytes)};
}

// Unified addressing: a pointer is device memory if the driver allocated it as such.
Endpoint classify(CUdeviceptr p, std::size_t bytes) {
  PointerInfo info;
  if (memory().lookup(p, info) && info.kind != MemKind::host) {
    return device_end(p);
  }
  return host_end(reinterpret_cast<const void*>(p), bytes);
}

void* as_ptr(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

CUresult copy(Endpoint dst, Endpoint src, std::size_t bytes, CUstream h, bool per_thread, bool async_api) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (bytes == 0) {
    return CUDA_SUCCESS;
  }
  if (dst.address == 0 || src.address == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((dst.side == Side::device && !memory().device_range_ok(dst.address, bytes, true)) ||
      (src.side == Side::device && !memory().device_range_ok(src.address, bytes, false))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    FC_TRY(sticky_error(s->context));
    Stats& st = stats();
    count(st.copies);
    if (dst.side == Side::device) {
      count(src.side == Side::device ? st.bytes_d2d : st.bytes_h2d, bytes);
    } else {
      count(src.side == Side::device ? st.bytes_d2h : st.bytes_h2h, bytes);
    }
    // Which calls return before the data moved: D2D always; H2D from a captured or pinned
    // source; D2H only into pinned memory from an async call.
    bool wait = false;
    std::shared_ptr<std::vector<unsigned char>> staged;
    if (dst.side == Side::host) {
      wait = !(async_api && dst.pinned);
    } else if (src.side == Side::host) {
      if (!async_api) {
        wait = true;
      } else if (!src.pinned) {
        staged = std::make_shared<std::vector<unsigned char>>(bytes);
        std::memcpy(staged->data(), as_ptr(src.address), bytes);
      }
    }
    Context* owner = s->context;
    const std::uint64_t seq = enqueue(s, [dst, src, bytes, staged, owner] {
      if ((dst.side == Side::device && !memory().device_range_ok(dst.address, bytes, true, true)) ||
          (src.side == Side::device && !memory().device_range_ok(src.address, bytes, false, true))) {
        set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
        return;
      }
      const void* from = staged ? staged->data() : as_ptr(src.address);
      std::memmove(as_ptr(dst.address), from, bytes);
    });
    if (wait) {
      s->wait_for(seq);
      return sticky_error(owner);
    }
    return CUDA_SUCCESS;
  });
}

template <class T>
CUresult memset_n(CUdeviceptr dst, T value, std::size_t n, CUstream h, bool per_thread, bool async_api) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (n == 0) {
    return CUDA_SUCCESS;
  }
  if (dst % sizeof(T) != 0 || n > ~std::size_t{0} / sizeof(T)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t bytes = n * sizeof(T);
  if (!memory().device_range_ok(dst, bytes, true)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    FC_TRY(sticky_error(s->context));
    count(stats().memsets);
    PointerInfo info;
    memory().lookup(dst, info);
    // The synchronous form waits only where the host could look at the bytes itself.
    const bool wait = !async_api && (info.kind == MemKind::host || info.kind == MemKind::managed);
    Context* owner = s->context;
    const std::uint64_t seq = enqueue(s, [dst, value, n, bytes, owner] {
      if (!memory().device_range_ok(dst, bytes, true, true)) {
        set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
        return;
      }
      if constexpr (sizeof(T) == 1) {
        std::memset(as_ptr(dst), value, n);
      } else {
        T* out = static_cast<T*>(as_ptr(dst));
        for (std::size_t i = 0; i < n; ++i) {
          out[i] = value;
        }
      }
    });
    if (wait) {
      s->wait_for(seq);
      return sticky_error(owner);
    }
    return CUDA_SUCCESS;
  });
}

}  // namespace

// ---- synchronous copies (legacy and _ptds) ----------------------------------------------

FAKECUDA_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(classify(dst, ByteCount), classify(src, ByteCount), ByteCount, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return copy(classify(dst, ByteCount), classify(src, ByteCount), ByteCount, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(host_end(dstHost, ByteCount), device_end(srcDevice), ByteCount, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(host_end(dstHost, ByteCount), device_end(srcDevice), ByteCount, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(device_end(dstDevice), device_end(srcDevice), ByteCount, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy(device_end(dstDevice), device_end(srcDevice), ByteCount, nullptr, true, false);
}

// ---- stream-ordered copies (legacy and _ptsz) -------------------------------------------

FAKECUDA_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return copy(classify(dst, ByteCount), classify(src, ByteCount), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return copy(classify(dst, ByteCount), classify(src, ByteCount), ByteCount, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                CUstream hStream) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return copy(host_end(dstHost, ByteCount), device_end(srcDevice), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return copy(host_end(dstHost, ByteCount), device_end(srcDevice), ByteCount, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream) {
  return copy(device_end(dstDevice), device_end(srcDevice), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                                CUstream hStream) {
  return copy(device_end(dstDevice), device_end(srcDevice), ByteCount, hStream, true, true);
}

// ---- memsets -------------------------------------------------------------------------

FAKECUDA_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_n(dstDevice, uc, N, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_n(dstDevice, uc, N, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return memset_n(dstDevice, us, N, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return memset_n(dstDevice, us, N, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return memset_n(dstDevice, ui, N, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return memset_n(dstDevice, ui, N, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return memset_n(dstDevice, uc, N, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return memset_n(dstDevice, uc, N, hStream, true, true);
}
FAKECUDA_API CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return memset_n(dstDevice, us, N, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return memset_n(dstDevice, us, N, hStream, true, true);
}
FAKECUDA_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return memset_n(dstDevice, ui, N, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return memset_n(dstDevice, ui, N, hStream, true, true);
}
