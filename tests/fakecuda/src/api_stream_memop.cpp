// Entry points: stream memory operations (cuStreamWriteValue32/64, cuStreamWaitValue32/64,
// cuStreamBatchMemOp) in every generation the driver exports: CUDA 8/9's, CUDA 11.7's _v2, and the
// _ptsz twin of each. A write is a 4- or 8-byte store in stream order; a wait holds its stream (and
// everything issued after it there) until the word satisfies the condition, whoever writes it:
// another stream, a kernel, the host, or another process through shared memory. Addresses must be
// device memory or pinned host memory, never managed memory, as the driver documents.
#include "cuda_abi_devices.hpp"
#include "capture.hpp"
#include "driver.hpp"
#include "memory.hpp"
#include "streams.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using namespace fakecuda;

namespace {

constexpr unsigned kMaxBatchOps = 256;  // "count ... Must be less than 256"
// A waiting stream worker spins briefly, then polls: a GPU's wait is a poll of its memory too.
constexpr int kSpinsBeforeSleeping = 1000;
constexpr std::chrono::microseconds kPollInterval{20};

enum class Api : std::uint8_t { v1, v2 };

// One validated memory operation.
struct MemOp {
  bool write = false;
  bool wide = false;  // 64-bit
  CUdeviceptr address = 0;
  std::uint64_t value = 0;
  unsigned condition = CU_STREAM_WAIT_VALUE_GEQ;
  bool barrier = false;
};

CUresult check_address(CUdeviceptr address, bool wide, bool write) {
  const std::size_t bytes = wide ? 8 : 4;
  if (address == 0 || address % bytes != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  PointerInfo info;
  if (memory().lookup(address, info) && info.kind == MemKind::managed) {
    return CUDA_ERROR_INVALID_VALUE;  // "None of the operations accepts pointers to managed memory"
  }
  return memory().device_range_ok(address, bytes, write) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult make_write(CUdeviceptr address, std::uint64_t value, unsigned flags, bool wide, Api api, MemOp& out) {
  // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER "is not supported in the v2 API".
  const unsigned allowed = api == Api::v1 ? CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : 0;
  if ((flags & ~allowed) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_address(address, wide, true));
  out = MemOp{true, wide, address, value, 0, false};
  return CUDA_SUCCESS;
}

CUresult make_wait(CUdeviceptr address, std::uint64_t value, unsigned flags, bool wide, MemOp& out) {
  if ((flags & CU_STREAM_WAIT_VALUE_FLUSH) != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;  // CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0
  }
  if (flags > CU_STREAM_WAIT_VALUE_NOR) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  FC_TRY(check_address(address, wide, false));
  out = MemOp{false, wide, address, value, flags, false};
  return CUDA_SUCCESS;
}

std::uint64_t load(const MemOp& op) {
  if (op.wide) {
    return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(op.address), __ATOMIC_ACQUIRE);
  }
  return __atomic_load_n(reinterpret_cast<const std::uint32_t*>(op.address), __ATOMIC_ACQUIRE);
}

// The documented conditions; GEQ is cyclic, "(int32_t)(*addr - value) >= 0".
bool satisfied(const MemOp& op, std::uint64_t seen) {
  switch (op.condition) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return op.wide
                 ? static_cast<std::int64_t>(seen - op.value) >= 0
                 : static_cast<std::int32_t>(static_cast<std::uint32_t>(seen) - static_cast<std::uint32_t>(op.value)) >=
                       0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return seen == op.value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (seen & op.value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: {
      const std::uint64_t nor = ~(seen | op.value);
      return (op.wide ? nor : nor & 0xffffffffu) != 0;
    }
    default:
      return false;
  }
}

// Runs on the stream worker. The memory is checked again: it may have been freed meanwhile.
void run(const MemOp& op, Context* owner) {
  if (op.barrier) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  const std::size_t bytes = op.wide ? 8 : 4;
  if (!memory().device_range_ok(op.address, bytes, op.write, true)) {
    set_sticky_error(owner, CUDA_ERROR_ILLEGAL_ADDRESS);
    return;
  }
  if (op.write) {
    if (op.wide) {
      __atomic_store_n(reinterpret_cast<std::uint64_t*>(op.address), op.value, __ATOMIC_SEQ_CST);
    } else {
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(op.address), static_cast<std::uint32_t>(op.value),
                       __ATOMIC_SEQ_CST);
    }
    return;
  }
  for (int spins = 0; !satisfied(op, load(op)); ++spins) {
    if (spins < kSpinsBeforeSleeping) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

CUresult issue(CUstream h, bool per_thread, std::vector<MemOp> ops) {
  FC_TRY(check_init());
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(h, per_thread, s));
    FC_TRY(sticky_error(s->context));
    FC_TRY(capture_refuse(s));  // batch-mem-op nodes are not emulated: refused in a capture
    Context* owner = s->context;
    enqueue(s, [ops = std::move(ops), owner] {
      for (const MemOp& op : ops) {
        run(op, owner);
      }
    });
    return CUDA_SUCCESS;
  });
}

CUresult write_value(CUstream h, CUdeviceptr addr, std::uint64_t value, unsigned flags, bool wide, Api api,
                     bool per_thread) {
  FC_TRY(check_init());
  MemOp op;
  FC_TRY(make_write(addr, value, flags, wide, api, op));
  return issue(h, per_thread, {op});
}

CUresult wait_value(CUstream h, CUdeviceptr addr, std::uint64_t value, unsigned flags, bool wide, bool per_thread) {
  FC_TRY(check_init());
  MemOp op;
  FC_TRY(make_wait(addr, value, flags, wide, op));
  return issue(h, per_thread, {op});
}

CUresult batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams* params, unsigned flags, Api api,
               bool per_thread) {
  FC_TRY(check_init());
  if (flags != 0 || count >= kMaxBatchOps || (count > 0 && params == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<MemOp> ops(count);
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = params[i];
    switch (p.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        FC_TRY(make_wait(p.waitValue.address, p.waitValue.value, p.waitValue.flags, false, ops[i]));
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        FC_TRY(make_wait(p.waitValue.address, p.waitValue.value64, p.waitValue.flags, true, ops[i]));
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        FC_TRY(make_write(p.writeValue.address, p.writeValue.value, p.writeValue.flags, false, api, ops[i]));
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        FC_TRY(make_write(p.writeValue.address, p.writeValue.value64, p.writeValue.flags, true, api, ops[i]));
        break;
      case CU_STREAM_MEM_OP_BARRIER:
        // "Only supported in the _v2 API"
        if (api == Api::v1 || (p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_SYS &&
                               p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_GPU)) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        ops[i].barrier = true;
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        return CUDA_ERROR_NOT_SUPPORTED;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (count == 0) {
    return CUDA_SUCCESS;
  }
  return issue(h, per_thread, std::move(ops));
}

}  // namespace

// ---- CUDA 8/9 generation -------------------------------------------------------------------

FAKECUDA_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return write_value(stream, addr, value, flags, false, Api::v1, false);
}
FAKECUDA_API CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return write_value(stream, addr, value, flags, true, Api::v1, false);
}
FAKECUDA_API CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return wait_value(stream, addr, value, flags, false, false);
}
FAKECUDA_API CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return wait_value(stream, addr, value, flags, true, false);
}
FAKECUDA_API CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                         unsigned int flags) {
  return batch(stream, count, paramArray, flags, Api::v1, false);
}
FAKECUDA_API CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                unsigned int flags) {
  return write_value(stream, addr, value, flags, false, Api::v1, true);
}
FAKECUDA_API CUresult cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                unsigned int flags) {
  return write_value(stream, addr, value, flags, true, Api::v1, true);
}
FAKECUDA_API CUresult cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                               unsigned int flags) {
  return wait_value(stream, addr, value, flags, false, true);
}
FAKECUDA_API CUresult cuStreamWaitValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                               unsigned int flags) {
  return wait_value(stream, addr, value, flags, true, true);
}
FAKECUDA_API CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                              unsigned int flags) {
  return batch(stream, count, paramArray, flags, Api::v1, true);
}

// ---- CUDA 11.7 _v2 generation --------------------------------------------------------------

FAKECUDA_API CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return write_value(stream, addr, value, flags, false, Api::v2, false);
}
FAKECUDA_API CUresult cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return write_value(stream, addr, value, flags, true, Api::v2, false);
}
FAKECUDA_API CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return wait_value(stream, addr, value, flags, false, false);
}
FAKECUDA_API CUresult cuStreamWaitValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  return wait_value(stream, addr, value, flags, true, false);
}
FAKECUDA_API CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                            unsigned int flags) {
  return batch(stream, count, paramArray, flags, Api::v2, false);
}
FAKECUDA_API CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                   unsigned int flags) {
  return write_value(stream, addr, value, flags, false, Api::v2, true);
}
FAKECUDA_API CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                   unsigned int flags) {
  return write_value(stream, addr, value, flags, true, Api::v2, true);
}
FAKECUDA_API CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                  unsigned int flags) {
  return wait_value(stream, addr, value, flags, false, true);
}
FAKECUDA_API CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                                  unsigned int flags) {
  return wait_value(stream, addr, value, flags, true, true);
}
FAKECUDA_API CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                                 CUstreamBatchMemOpParams* paramArray, unsigned int flags) {
  return batch(stream, count, paramArray, flags, Api::v2, true);
}
