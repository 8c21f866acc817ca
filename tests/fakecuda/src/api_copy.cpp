// Entry points: copies and memsets, synchronous and stream-ordered. Each follows the driver's
// documented host synchronisation: a pageable source is captured before an async H2D returns,
// a D2H into pageable memory returns when the data is there, D2D and device memsets are
// asynchronous even in their "synchronous" forms. Host–device copies cross the modelled link
// (link.hpp) on their stream's worker. Device ranges are checked when the call is made
// (CUDA_ERROR_INVALID_VALUE) and again when the stream runs the work: memory freed in stream
// order meanwhile is a device fault, reported as a sticky CUDA_ERROR_ILLEGAL_ADDRESS.
#include "copy_path.hpp"
#include "driver.hpp"
#include "link.hpp"
#include "memory.hpp"
#include "stats.hpp"
#include "streams.hpp"
#include "work_observer.hpp"
#include "work_ops.hpp"
#include "capture.hpp"
#include "graph.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {

enum class Side : unsigned char { host, device };

// One side of a copy: where it starts and how its rows and slices are laid out.
struct Endpoint {
  std::uintptr_t address = 0;
  Side side = Side::host;
  bool pinned = false;     // host side: page-locked, so the copy may run later
  std::size_t pitch = 0;   // bytes between rows (0: rows are contiguous)
  std::size_t height = 0;  // rows between slices (0: slices are contiguous)
};

// The shape of a copy: `width` bytes per row, `rows` rows per slice, `slices` slices.
struct Shape {
  std::size_t width = 0;
  std::size_t rows = 1;
  std::size_t slices = 1;
};

// A device address is host memory when it maps host-located VMM memory: the copy crosses the
// link at pinned speed.
Endpoint device_end(CUdeviceptr p) {
  if (memory().is_host_located(p)) {
    return Endpoint{p, Side::host, true, 0, 0};
  }
  return Endpoint{p, Side::device, false, 0, 0};
}

Endpoint host_end(const void* p, std::size_t bytes) {
  return Endpoint{reinterpret_cast<std::uintptr_t>(p), Side::host, memory().is_pinned_host(p, bytes), 0, 0};
}

// Unified addressing: a pointer is device memory if the driver allocated it as such.
Endpoint classify(CUdeviceptr p, std::size_t bytes) {
  PointerInfo info;
  if (memory().lookup(p, info) && info.kind != MemKind::host) {
    return info.host_located ? Endpoint{p, Side::host, true, 0, 0} : Endpoint{p, Side::device, false, 0, 0};
  }
  return host_end(reinterpret_cast<const void*>(p), bytes);
}

void* as_ptr(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

std::size_t row_pitch(const Endpoint& e, const Shape& s) { return e.pitch == 0 ? s.width : e.pitch; }
std::size_t slice_rows(const Endpoint& e, const Shape& s) { return e.height == 0 ? s.rows : e.height; }

// Bytes from the first to one past the last byte the copy touches on this side; 0 if the layout
// is impossible (rows overlapping each other, or an overflow).
std::size_t extent(const Endpoint& e, const Shape& s) {
  const std::size_t pitch = row_pitch(e, s);
  const std::size_t height = slice_rows(e, s);
  if (pitch < s.width || (s.slices > 1 && height < s.rows)) {
    return 0;
  }
  std::size_t rows_before_last = 0;
  std::size_t offset = 0;
  std::size_t end = 0;
  if (__builtin_mul_overflow(s.slices - 1, height, &rows_before_last) ||
      __builtin_add_overflow(rows_before_last, s.rows - 1, &rows_before_last) ||
      __builtin_mul_overflow(rows_before_last, pitch, &offset) || __builtin_add_overflow(offset, s.width, &end) ||
      end > (~std::size_t{0} >> 1)) {
    return 0;
  }
  return end;
}

// Moves bytes [from, to) of the copy, counted along its rows: byte i is byte i % width of row
// i / width (runs on the stream worker, in chunks when the link is modelled).
void move_part(const Endpoint& dst, const Endpoint& src, const Shape& s, std::size_t from, std::size_t to) {
  const std::size_t dp = row_pitch(dst, s);
  const std::size_t sp = row_pitch(src, s);
  const std::size_t dh = slice_rows(dst, s);
  const std::size_t sh = slice_rows(src, s);
  if (dp == s.width && sp == s.width && (s.slices == 1 || (dh == s.rows && sh == s.rows))) {
    std::memmove(as_ptr(dst.address + from), as_ptr(src.address + from), to - from);
    return;
  }
  while (from < to) {
    const std::size_t row = from / s.width;
    const std::size_t column = from % s.width;
    const std::size_t n = std::min(s.width - column, to - from);
    const std::size_t z = row / s.rows;
    const std::size_t y = row % s.rows;
    std::memmove(as_ptr(dst.address + (z * dh + y) * dp + column), as_ptr(src.address + (z * sh + y) * sp + column), n);
    from += n;
  }
}

void move_rows(const Endpoint& dst, const Endpoint& src, const Shape& s) {
  move_part(dst, src, s, 0, s.width * s.rows * s.slices);
}

// A copy or memset on `device`'s stream reaches managed memory as device-side memory (as the
// copy's link model has it): chunks never touched are populated there, without a transfer; the
// evictions that make room cross the link first. Populated chunks stay put (no migration).
void populate_managed_touch(std::uintptr_t p, std::size_t bytes, int device) {
  if (!memory().any_managed()) {
    return;
  }
  link_migrate(0, memory().populate_managed(p, bytes, device).to_host);
}

// The checks a copy gets when it is issued: addresses, layouts, device ranges. Returns the bytes
// each side spans.
CUresult check_copy(const Endpoint& dst, const Endpoint& src, const Shape& shape, std::size_t& dst_extent,
                    std::size_t& src_extent) {
  if (dst.address == 0 || src.address == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  dst_extent = extent(dst, shape);
  src_extent = extent(src, shape);
  if (dst_extent == 0 || src_extent == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((dst.side == Side::device && !memory().device_range_ok(dst.address, dst_extent, true)) ||
      (src.side == Side::device && !memory().device_range_ok(src.address, src_extent, false))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// What the stream worker runs for a checked copy issued now to `s`: counted, observed, crossing the
// link where host meets device, and re-validated when it runs (memory freed meanwhile faults).
std::function<void()> copy_work(const Endpoint& dst, const Endpoint& src, const Shape& shape, std::size_t dst_extent,
                                std::size_t src_extent, std::shared_ptr<std::vector<unsigned char>> staged,
                                const Stream& s) {
  const std::size_t bytes = shape.width * shape.rows * shape.slices;
  Stats& st = stats();
  count(st.copies);
  if (dst.side == Side::device) {
    count(src.side == Side::device ? st.bytes_d2d : st.bytes_h2d, bytes);
  } else {
    count(src.side == Side::device ? st.bytes_d2h : st.bytes_h2h, bytes);
  }
  Context* owner = s.context;
  const int copy_kind =
      dst.side == Side::device ? (src.side == Side::device ? 3 : 1) : (src.side == Side::device ? 2 : 4);
  const fakecuda_work work{FAKECUDA_WORK_COPY, copy_kind, bytes, s.id, owner->id, nullptr};
  // Host–device copies cross the link (the host side's pinning decides its speed); D2D and
  // H2H copies run at memory speed on the stream worker.
  const bool crosses_link = dst.side != src.side;
  const LinkDirection direction = dst.side == Side::device ? LinkDirection::h2d : LinkDirection::d2h;
  const bool pinned = dst.side == Side::host ? dst.pinned : src.pinned;
  const auto run = [dst, src, shape, dst_extent, src_extent, staged, owner, crosses_link, direction, pinned, bytes] {
    if ((dst.side == Side::device && !memory().device_range_ok(dst.address, dst_extent, true, true)) ||
        (src.side == Side::device && !memory().device_range_ok(src.address, src_extent, false, true))) {
      set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
      return;
    }
    if (dst.side == Side::device) {
      populate_managed_touch(dst.address, dst_extent, owner->device);
    }
    if (src.side == Side::device) {
      populate_managed_touch(src.address, src_extent, owner->device);
    }
    if (!crosses_link) {
      move_rows(dst, src, shape);
      return;
    }
    link_transfer(direction, bytes, pinned,
                  [&](std::size_t from, std::size_t to) { move_part(dst, src, shape, from, to); });
  };
  return observed(work_observer(), work, run);
}

// A copy as a CUDA_MEMCPY3D with absolute addresses: how a captured copy becomes a memcpy node.
// Host-located VMM memory keeps its device address type: it is device memory to the driver.
CUDA_MEMCPY3D descriptor_of(const Endpoint& dst, const Endpoint& src, const Shape& shape) {
  CUDA_MEMCPY3D c{};
  const auto is_device = [](const Endpoint& e) {
    PointerInfo info;
    return e.side == Side::device || (memory().lookup(e.address, info) && info.kind != MemKind::host);
  };
  if (is_device(src)) {
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src.address;
  } else {
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = as_ptr(src.address);
  }
  if (is_device(dst)) {
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dst.address;
  } else {
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = as_ptr(dst.address);
  }
  c.srcPitch = row_pitch(src, shape);
  c.srcHeight = slice_rows(src, shape);
  c.dstPitch = row_pitch(dst, shape);
  c.dstHeight = slice_rows(dst, shape);
  c.WidthInBytes = shape.width;
  c.Height = shape.rows;
  c.Depth = shape.slices;
  return c;
}

CUresult copy(Endpoint dst, Endpoint src, Shape shape, CUstream h, bool per_thread, bool async_api) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (!async_api) {
    FC_TRY(capture_check_unsafe_call());  // a synchronous copy is a potentially unsafe call
  }
  if (shape.width == 0 || shape.rows == 0 || shape.slices == 0) {
    return CUDA_SUCCESS;
  }
  std::size_t dst_extent = 0;
  std::size_t src_extent = 0;
  FC_TRY(check_copy(dst, src, shape, dst_extent, src_extent));
  const std::size_t bytes = shape.width * shape.rows * shape.slices;
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    FC_TRY(sticky_error(s->context));
    if (captures_exist()) {  // a capturing stream records the copy as a memcpy node instead
      bool captured = false;
      FC_TRY(capture_work(
          s,
          [&](NodeParams& node) {
            if (!async_api) {
              return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // a synchronous copy cannot be captured
            }
            return memcpy_node_params(node, descriptor_of(dst, src, shape), reinterpret_cast<CUcontext>(s->context));
          },
          captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    // Which calls return before the data moved: D2D always; H2D from a captured or pinned
    // source; D2H only into pinned memory from an async call. With a modelled link a pageable
    // H2D is not captured but staged through the link while the caller waits, as the driver's
    // bounce buffer makes it synchronous in practice.
    bool wait = false;
    std::shared_ptr<std::vector<unsigned char>> staged;
    if (dst.side == Side::host) {
      wait = !(async_api && dst.pinned);
    }
    if (dst.side == Side::host && src.side == Side::host && !wait && !src.pinned) {
      // Into pinned or host-located memory (VMM memory on the host, mapped at a device address,
      // which the driver copies into as device memory): a pageable source is read before the call
      // returns, as for H2D (the caller may reuse it, e.g. a batch copy's DURING_API_CALL snapshot).
      staged = std::make_shared<std::vector<unsigned char>>(bytes);
      const Endpoint packed{reinterpret_cast<std::uintptr_t>(staged->data()), Side::host, false, 0, 0};
      move_rows(packed, src, shape);
      src = packed;
    } else if (dst.side != Side::host && src.side == Side::host) {
      if (!async_api || (!src.pinned && link_modelled())) {
        wait = true;
      } else if (!src.pinned) {
        // A pageable source is captured now: the caller may reuse it as soon as we return.
        staged = std::make_shared<std::vector<unsigned char>>(bytes);
        const Endpoint packed{reinterpret_cast<std::uintptr_t>(staged->data()), Side::host, false, 0, 0};
        move_rows(packed, src, shape);
        src = packed;
      }
    }
    const std::uint64_t seq = enqueue(s, copy_work(dst, src, shape, dst_extent, src_extent, std::move(staged), *s));
    if (wait) {
      s->wait_for(seq);
      return sticky_error(s->context);
    }
    return CUDA_SUCCESS;
  });
}

CUresult copy(Endpoint dst, Endpoint src, std::size_t bytes, CUstream h, bool per_thread, bool async_api) {
  return copy(dst, src, Shape{bytes, 1, 1}, h, per_thread, async_api);
}

// One side of a CUDA_MEMCPY2D/3D descriptor. Arrays do not exist here.
CUresult descriptor_end(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, std::size_t x,
                        std::size_t y, std::size_t z, std::size_t pitch, std::size_t height, std::size_t bytes,
                        Endpoint& out) {
  std::uintptr_t base = 0;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      out = host_end(host, bytes);
      base = out.address;
      break;
    case CU_MEMORYTYPE_DEVICE:
      out = device_end(device);
      base = device;
      break;
    case CU_MEMORYTYPE_UNIFIED:
      out = classify(device, bytes);
      base = device;
      break;
    case CU_MEMORYTYPE_ARRAY:
      (void)array;
      return CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (base == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out.address = base + (z * (height == 0 ? 1 : height) + y) * pitch + x;
  out.pitch = pitch;
  out.height = height;
  return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D* c, CUstream h, bool per_thread, bool async_api) {
  if (c == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t bytes = c->WidthInBytes * c->Height;
  Endpoint dst;
  Endpoint src;
  FC_TRY(descriptor_end(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, 0,
                        c->dstPitch, 0, bytes, dst));
  FC_TRY(descriptor_end(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, 0,
                        c->srcPitch, 0, bytes, src));
  if (c->Height > 1 && (dst.pitch < c->WidthInBytes || src.pitch < c->WidthInBytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return copy(dst, src, Shape{c->WidthInBytes, c->Height, 1}, h, per_thread, async_api);
}

// The two sides and the shape a CUDA_MEMCPY3D describes.
CUresult resolve_3d(const CUDA_MEMCPY3D* c, Endpoint& dst, Endpoint& src, Shape& shape) {
  if (c == nullptr || c->reserved0 != nullptr || c->reserved1 != nullptr || c->srcLOD != 0 || c->dstLOD != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t bytes = c->WidthInBytes * c->Height * c->Depth;
  FC_TRY(descriptor_end(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ,
                        c->dstPitch, c->dstHeight, bytes, dst));
  FC_TRY(descriptor_end(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, c->srcZ,
                        c->srcPitch, c->srcHeight, bytes, src));
  if ((c->Height > 1 || c->Depth > 1) && (dst.pitch < c->WidthInBytes || src.pitch < c->WidthInBytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (c->Depth > 1 && (dst.height < c->Height || src.height < c->Height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  shape = Shape{c->WidthInBytes, c->Height, c->Depth};
  return CUDA_SUCCESS;
}

CUresult copy_3d(const CUDA_MEMCPY3D* c, CUstream h, bool per_thread, bool async_api) {
  Endpoint dst;
  Endpoint src;
  Shape shape;
  FC_TRY(resolve_3d(c, dst, src, shape));
  return copy(dst, src, shape, h, per_thread, async_api);
}

// Peer copies: one device, so every context sees the same memory; the contexts must be live.
CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, std::size_t bytes,
                   CUstream h, bool per_thread, bool async_api) {
  FC_TRY(check_init());
  if (!is_live_context(reinterpret_cast<Context*>(dst_ctx)) || !is_live_context(reinterpret_cast<Context*>(src_ctx))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return copy(device_end(dst), device_end(src), bytes, h, per_thread, async_api);
}

// A memset of `rows` rows of `n` elements of `element` bytes, `pitch` bytes apart (a 1D memset is
// one row): the checks made when it is issued. Returns the bytes it spans.
CUresult check_memset(CUdeviceptr dst, std::size_t pitch, std::size_t element, std::size_t n, std::size_t rows,
                      std::size_t& span) {
  if (dst % element != 0 || n > (~std::size_t{0} >> 1) / element) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t width = n * element;
  if (rows > 1 && (pitch < width || pitch % element != 0 || rows - 1 > ((~std::size_t{0} >> 1) - width) / pitch)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  span = (rows - 1) * pitch + width;
  return memory().device_range_ok(dst, span, true) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

template <class T>
void fill_rows(CUdeviceptr dst, std::size_t pitch, T value, std::size_t n, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r) {
    void* row = as_ptr(dst + r * pitch);
    if constexpr (sizeof(T) == 1) {
      std::memset(row, value, n);
    } else {
      T* out = static_cast<T*>(row);
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = value;
      }
    }
  }
}

// What the stream worker runs for a checked memset issued now to `s` (value truncated to the
// element size, as the driver does).
std::function<void()> memset_work(CUdeviceptr dst, std::size_t pitch, unsigned value, std::size_t element,
                                  std::size_t n, std::size_t rows, std::size_t span, const Stream& s) {
  count(stats().memsets);
  Context* owner = s.context;
  const fakecuda_work work{FAKECUDA_WORK_MEMSET, 0, n * element * rows, s.id, owner->id, nullptr};
  return observed(work_observer(), work, [dst, pitch, value, element, n, rows, span, owner] {
    if (!memory().device_range_ok(dst, span, true, true)) {
      set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
      return;
    }
    populate_managed_touch(dst, span, owner->device);
    switch (element) {
      case 1:
        fill_rows(dst, pitch, static_cast<unsigned char>(value), n, rows);
        break;
      case 2:
        fill_rows(dst, pitch, static_cast<unsigned short>(value), n, rows);
        break;
      default:
        fill_rows(dst, pitch, value, n, rows);
        break;
    }
  });
}

// Fills `rows` rows of `n` elements, `pitch` bytes apart (a 1D memset is one row).
template <class T>
CUresult memset_rows(CUdeviceptr dst, std::size_t pitch, T value, std::size_t n, std::size_t rows, CUstream h,
                     bool per_thread, bool async_api) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  if (!async_api) {
    FC_TRY(capture_check_unsafe_call());  // a synchronous memset is a potentially unsafe call
  }
  if (n == 0 || rows == 0) {
    return CUDA_SUCCESS;
  }
  std::size_t span = 0;
  FC_TRY(check_memset(dst, pitch, sizeof(T), n, rows, span));
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    FC_TRY(sticky_error(s->context));
    if (captures_exist()) {  // a capturing stream records the memset as a memset node instead
      bool captured = false;
      FC_TRY(capture_work(
          s,
          [&](NodeParams& node) {
            if (!async_api) {
              return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // a synchronous memset cannot be captured
            }
            const CUDA_MEMSET_NODE_PARAMS p{
                dst, rows > 1 ? pitch : n * sizeof(T), static_cast<unsigned>(value), sizeof(T), n, rows};
            return memset_node_params(node, p, reinterpret_cast<CUcontext>(s->context));
          },
          captured));
      if (captured) {
        return CUDA_SUCCESS;
      }
    }
    PointerInfo info;
    memory().lookup(dst, info);
    // The synchronous form waits only where the host could look at the bytes itself.
    const bool wait = !async_api && (info.kind == MemKind::host || info.kind == MemKind::managed);
    const std::uint64_t seq =
        enqueue(s, memset_work(dst, pitch, static_cast<unsigned>(value), sizeof(T), n, rows, span, *s));
    if (wait) {
      s->wait_for(seq);
      return sticky_error(s->context);
    }
    return CUDA_SUCCESS;
  });
}

template <class T>
CUresult memset_n(CUdeviceptr dst, T value, std::size_t n, CUstream h, bool per_thread, bool async_api) {
  return memset_rows(dst, 0, value, n, 1, h, per_thread, async_api);
}

}  // namespace

// ---- graph memcpy and memset nodes (work_ops.hpp) ----------------------------------------
// A node is checked when it is added, as the same copy issued to a stream would be, and again at
// each launch; zero-sized nodes are refused (the driver does not support them in graphs).

CUresult fakecuda::check_memcpy3d(const CUDA_MEMCPY3D& c) {
  Endpoint dst;
  Endpoint src;
  Shape shape;
  FC_TRY(resolve_3d(&c, dst, src, shape));
  if (shape.width == 0 || shape.rows == 0 || shape.slices == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t dst_extent = 0;
  std::size_t src_extent = 0;
  return check_copy(dst, src, shape, dst_extent, src_extent);
}

CUresult fakecuda::memcpy3d_op(const CUDA_MEMCPY3D& c, const Stream& s, std::function<void()>& out) {
  Endpoint dst;
  Endpoint src;
  Shape shape;
  FC_TRY(resolve_3d(&c, dst, src, shape));
  if (shape.width == 0 || shape.rows == 0 || shape.slices == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t dst_extent = 0;
  std::size_t src_extent = 0;
  FC_TRY(check_copy(dst, src, shape, dst_extent, src_extent));
  // A graph copy reads its host source when it runs, not when it is launched (no staging).
  out = copy_work(dst, src, shape, dst_extent, src_extent, nullptr, s);
  return CUDA_SUCCESS;
}

CUresult fakecuda::check_memset_node(const CUDA_MEMSET_NODE_PARAMS& p) {
  if ((p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) || p.width == 0 || p.height == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t span = 0;
  return check_memset(p.dst, p.pitch, p.elementSize, p.width, p.height, span);
}

CUresult fakecuda::memset_node_op(const CUDA_MEMSET_NODE_PARAMS& p, const Stream& s, std::function<void()>& out) {
  FC_TRY(check_memset_node(p));
  std::size_t span = 0;
  FC_TRY(check_memset(p.dst, p.pitch, p.elementSize, p.width, p.height, span));
  out = memset_work(p.dst, p.pitch, p.value, p.elementSize, p.width, p.height, span, s);
  return CUDA_SUCCESS;
}

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
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                           CUstream hStream) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                CUstream hStream) {
  return copy(device_end(dstDevice), host_end(srcHost, ByteCount), ByteCount, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return copy(host_end(dstHost, ByteCount), device_end(srcDevice), ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                                CUstream hStream) {
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

FAKECUDA_API CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                      size_t Height) {
  return memset_rows(dstDevice, dstPitch, uc, Width, Height, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                           size_t Height) {
  return memset_rows(dstDevice, dstPitch, uc, Width, Height, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                       size_t Height) {
  return memset_rows(dstDevice, dstPitch, us, Width, Height, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                            size_t Height) {
  return memset_rows(dstDevice, dstPitch, us, Width, Height, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                       size_t Height) {
  return memset_rows(dstDevice, dstPitch, ui, Width, Height, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                            size_t Height) {
  return memset_rows(dstDevice, dstPitch, ui, Width, Height, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                        size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, uc, Width, Height, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                             size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, uc, Width, Height, hStream, true, true);
}
FAKECUDA_API CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                         size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, us, Width, Height, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                              size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, us, Width, Height, hStream, true, true);
}
FAKECUDA_API CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                         size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, ui, Width, Height, hStream, false, true);
}
FAKECUDA_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                              size_t Height, CUstream hStream) {
  return memset_rows(dstDevice, dstPitch, ui, Width, Height, hStream, true, true);
}

// ---- 2D/3D and peer copies -----------------------------------------------------------

FAKECUDA_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) { return copy_2d(pCopy, nullptr, false, false); }
FAKECUDA_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) { return copy_2d(pCopy, nullptr, true, false); }
FAKECUDA_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  return copy_2d(pCopy, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return copy_2d(pCopy, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return copy_2d(pCopy, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return copy_2d(pCopy, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) { return copy_3d(pCopy, nullptr, false, false); }
FAKECUDA_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) { return copy_3d(pCopy, nullptr, true, false); }
FAKECUDA_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return copy_3d(pCopy, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return copy_3d(pCopy, hStream, true, true);
}
FAKECUDA_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                   CUcontext srcContext, size_t ByteCount) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, false, false);
}
FAKECUDA_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                        CUcontext srcContext, size_t ByteCount) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, true, false);
}
FAKECUDA_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                        CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false, true);
}
FAKECUDA_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                             CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, true, true);
}

// ---- the copy path for the batch copies (copy_path.hpp) ------------------------------------------

namespace {

Endpoint endpoint_of(const CopySide& side, std::size_t bytes) {
  Endpoint e = classify(side.address, bytes);
  e.pitch = side.pitch;
  e.height = side.height;
  return e;
}

Shape shape_of(const CopyExtent& ext) { return Shape{ext.width, ext.rows, ext.slices}; }

}  // namespace

std::size_t fakecuda::copy_side_span(const CopySide& side, const CopyExtent& ext) {
  const Endpoint e{side.address, Side::host, false, side.pitch, side.height};
  return extent(e, shape_of(ext));
}

CUresult fakecuda::check_unified_copy(const CopySide& dst, const CopySide& src, const CopyExtent& ext) {
  if (ext.width == 0 || ext.rows == 0 || ext.slices == 0) {
    return CUDA_SUCCESS;
  }
  if (dst.address == 0 || src.address == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::size_t dst_span = copy_side_span(dst, ext);
  const std::size_t src_span = copy_side_span(src, ext);
  if (dst_span == 0 || src_span == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Endpoint d = endpoint_of(dst, dst_span);
  const Endpoint s = endpoint_of(src, src_span);
  if ((d.side == Side::device && !memory().device_range_ok(d.address, dst_span, true)) ||
      (s.side == Side::device && !memory().device_range_ok(s.address, src_span, false))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult fakecuda::issue_unified_copy(const CopySide& dst, const CopySide& src, const CopyExtent& ext, CUstream stream,
                                      bool per_thread) {
  const std::size_t dst_span = copy_side_span(dst, ext);
  const std::size_t src_span = copy_side_span(src, ext);
  return copy(endpoint_of(dst, dst_span), endpoint_of(src, src_span), shape_of(ext), stream, per_thread, true);
}
