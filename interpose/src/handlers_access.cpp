// The handlers of the other ways work reaches memory (issue 33, "never corrupt what memtool cannot
// see"): batch copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync), stream memory operations
// (cuStreamWriteValue32/64, cuStreamWaitValue32/64, cuStreamBatchMemOp), prefetches and advice.
// Each is an access to the buffers it names: recorded, and the strategies told before the real
// call queues it, so a swapped buffer is resident (a batch is one work item: all its buffers at
// once). Where memtool serves a buffer the program allocated as device memory from managed memory
// (UVM swapping), the driver refuses what it would accept for the program's own allocation: a
// value written or waited for there is done with calls that accept managed memory instead, and a
// prefetch or advice gets the driver's answer for device memory, never moving memtool's memory.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "handler_support.hpp"
#include "memtool/interpose/handlers.hpp"

namespace memtool::interpose {
namespace {

using detail::captured;
using detail::kCapturedCopy;
using detail::kCapturedMemset;
using detail::order;
using detail::stream_of;
using trace::CopyKind;
using trace::MemoryKind;

std::uint64_t u64(CUdeviceptr p) { return static_cast<std::uint64_t>(p); }

// A batch longer than this is not read copy by copy (its arrays may be anything): it counts as
// reaching every buffer, which is slower and never wrong.
constexpr std::size_t kMaxBatchCopiesRead = std::size_t{1} << 16;
// cuStreamBatchMemOp: "count ... Must be less than 256".
constexpr unsigned kMaxBatchMemOps = 256;

// One copy of a batch as the recorder sees it.
struct BatchCopy {
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
};

// The buffers a multi-part piece of work touches, gathered over its parts (the recorder's spans
// are valid only until its next call on this thread).
std::vector<std::uint64_t>& scratch_touched() {
  thread_local std::vector<std::uint64_t> touched;
  return touched;
}

void gather(std::vector<std::uint64_t>& all, const LaunchSeen& seen) {
  all.insert(all.end(), seen.touched.begin(), seen.touched.end());
}

// One work item for all the parts: the swapper keeps every buffer of it resident until the real
// call has queued it (two items would let the second send the first's buffers out).
template <class F>
void order_all(const Call<F>& call, std::vector<std::uint64_t>& touched, std::uint64_t stream, bool reaches_all) {
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  LaunchSeen seen;
  seen.touched = touched;
  seen.reaches_all = reaches_all;
  order(call, seen, stream);
}

// Each copy is recorded as a copy of its own (the trace shows them; the observer counts each);
// the strategies see the batch as one work item.
template <class F>
void record_batch(const Call<F>& call, const std::vector<BatchCopy>& copies, bool unread, std::uint64_t stream) {
  if (captured(call, stream)) return call.recorder.on_captured_work(kCapturedCopy, stream);
  std::vector<std::uint64_t>& touched = scratch_touched();
  touched.clear();
  for (const BatchCopy& c : copies) {
    gather(touched, call.recorder.on_copy(c.dst, c.src, c.bytes, CopyKind::unknown, stream, true));
  }
  order_all(call, touched, stream, unread);
}

// The copies of a cuMemcpyBatchAsync call, or none (unread) when its arrays cannot be read.
std::vector<BatchCopy> batch_copies(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes, size_t count,
                                    bool& unread) {
  std::vector<BatchCopy> copies;
  unread = count > kMaxBatchCopiesRead;
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr || unread) return copies;
  copies.reserve(count);
  for (size_t i = 0; i < count; ++i) copies.push_back({u64(dsts[i]), u64(srcs[i]), sizes[i]});
  return copies;
}

// A 3D batch: pointer operands only (an array operand is no buffer of the program's).
std::vector<BatchCopy> batch_3d_copies(size_t count, const CUDA_MEMCPY3D_BATCH_OP* ops, bool& unread) {
  std::vector<BatchCopy> copies;
  unread = count > kMaxBatchCopiesRead;
  if (ops == nullptr || unread) return copies;
  copies.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    const auto operand = [](const CUmemcpy3DOperand& o) {
      return o.type == CU_MEMCPY_OPERAND_TYPE_POINTER ? u64(o.op.ptr.ptr) : std::uint64_t{0};
    };
    const std::uint64_t bytes = std::uint64_t{op.extent.width} * op.extent.height * op.extent.depth;
    copies.push_back({operand(op.dst), operand(op.src), bytes});
  }
  return copies;
}

// After the batch was accepted: what a copy from host memory wrote may be a pointer table.
void uploaded_all(Recorder& recorder, CUresult result, const std::vector<BatchCopy>& copies, bool contiguous) {
  if (result != CUDA_SUCCESS) return;
  for (const BatchCopy& c : copies) {
    if (c.dst != 0 && c.src != 0) {
      recorder.on_upload(c.dst, reinterpret_cast<const void*>(c.src), c.bytes, false, contiguous);
    }
  }
}

template <class F, class... Args>
CUresult batch_copy(const Call<F>& call, const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes,
                    size_t count, CUstream hStream, Args... args) {
  bool unread = false;
  const std::vector<BatchCopy> copies = batch_copies(dsts, srcs, sizes, count, unread);
  record_batch(call, copies, unread, stream_of(call, hStream));
  const CUresult result = call.real(args...);
  uploaded_all(call.recorder, result, copies, true);
  return result;
}

template <class F, class... Args>
CUresult batch_copy_3d(const Call<F>& call, size_t numOps, const CUDA_MEMCPY3D_BATCH_OP* opList, CUstream hStream,
                       Args... args) {
  bool unread = false;
  const std::vector<BatchCopy> copies = batch_3d_copies(numOps, opList, unread);
  record_batch(call, copies, unread, stream_of(call, hStream));
  const CUresult result = call.real(args...);
  uploaded_all(call.recorder, result, copies, false);  // pitched: its bytes are not read for pointers
  return result;
}

// --- stream memory operations ------------------------------------------------------------------

// One write or wait of a 4- or 8-byte word, as a handler sees it.
struct WordOp {
  std::uint64_t address = 0;
  std::uint64_t value = 0;
  unsigned flags = 0;
  bool wide = false;
  bool write = false;
  bool barrier = false;  // a memory barrier of cuStreamBatchMemOp_v2 (touches nothing)
  bool known = true;     // an operation memtool understands (else passed on as it is)
};

// A write is a store into the buffer (a memset of the word, for the trace and pointer tables);
// a wait reads it.
template <class F>
void record_words(const Call<F>& call, const std::vector<WordOp>& ops, std::uint64_t stream) {
  if (captured(call, stream)) return call.recorder.on_captured_work(kCapturedMemset, stream);
  std::vector<std::uint64_t>& touched = scratch_touched();
  touched.clear();
  for (const WordOp& op : ops) {
    if (op.barrier || !op.known || op.address == 0) continue;
    const std::uint64_t bytes = op.wide ? 8 : 4;
    gather(touched, op.write ? call.recorder.on_memset(op.address, bytes, stream, true)
                             : call.recorder.on_touch(op.address, bytes, stream));
  }
  order_all(call, touched, stream, false);
}

// Whether `address` lies in a buffer the program allocated as device memory that memtool serves
// from managed memory (UVM swapping): the driver refuses stream memory operations, prefetches
// and advice there as it would not for the program's own allocation.
template <class F>
bool served_as_managed(const Call<F>& call, std::uint64_t address) {
  const DriverFunctions* driver = call.runtimes.driver_functions();
  if (driver == nullptr || driver->pointer_get_attribute == nullptr || address == 0) return false;
  const std::optional<MemoryKind> kind = call.recorder.buffer_kind(address);
  if (!kind || (*kind != MemoryKind::device && *kind != MemoryKind::async)) return false;
  unsigned int managed = 0;
  return driver->pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, static_cast<CUdeviceptr>(address)) ==
             CUDA_SUCCESS &&
         managed != 0;
}

// The stream a stand-in call is issued to: a per-thread twin's stream 0 is the calling thread's
// default stream, which the plain entry points name CU_STREAM_PER_THREAD.
template <class F>
CUstream stand_in_stream(const Call<F>& call, CUstream stream) {
  return stream == nullptr && call.variant != Variant::plain ? CU_STREAM_PER_THREAD : stream;
}

// The documented conditions of a wait; GEQ is cyclic, "(int32_t)(*addr - value) >= 0".
bool satisfied(std::uint64_t seen, std::uint64_t value, unsigned flags, bool wide) {
  switch (flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH)) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return wide
                 ? static_cast<std::int64_t>(seen - value) >= 0
                 : static_cast<std::int32_t>(static_cast<std::uint32_t>(seen) - static_cast<std::uint32_t>(value)) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return seen == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (seen & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: {
      const std::uint64_t nor = ~(seen | value);
      return (wide ? nor : nor & 0xffffffffu) != 0;
    }
    default:
      return false;
  }
}

// The flags each operation accepts (cuda.h): a write takes NO_MEMORY_BARRIER in the first
// generation only; a wait one condition, optionally with FLUSH.
bool flags_valid(const WordOp& op, bool v2) {
  if (op.write) return op.flags == 0 || (!v2 && op.flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
  return (op.flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH)) <= CU_STREAM_WAIT_VALUE_NOR;
}

// A wait on a managed word, done by a host function on the stream that polls it: the stream and
// what follows it there wait as they would for the driver's wait. The host may read managed
// memory while the device uses it (concurrent managed access, which UVM swapping needs anyway).
constexpr int kSpinsBeforeSleeping = 1000;
constexpr std::chrono::microseconds kPollInterval{20};

struct HostWait {
  std::uint64_t address = 0;
  std::uint64_t value = 0;
  unsigned flags = 0;
  bool wide = false;
};

void CUDA_CB wait_on_host(void* data) {
  const std::unique_ptr<HostWait> wait(static_cast<HostWait*>(data));
  const auto load = [&] {
    return wait->wide ? __atomic_load_n(reinterpret_cast<const std::uint64_t*>(wait->address), __ATOMIC_ACQUIRE)
                      : std::uint64_t{
                            __atomic_load_n(reinterpret_cast<const std::uint32_t*>(wait->address), __ATOMIC_ACQUIRE)};
  };
  for (int spins = 0; !satisfied(load(), wait->value, wait->flags, wait->wide); ++spins) {
    if (spins < kSpinsBeforeSleeping) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

// One operation on a managed word, with calls that accept managed memory: a 4-byte write is a
// one-element memset, an 8-byte one a copy from the host (pageable: the driver reads it before
// returning), a wait the host function above. All in the stream's order.
CUresult stand_in(const DriverFunctions& driver, CUstream stream, const WordOp& op) {
  const auto address = static_cast<CUdeviceptr>(op.address);
  if (op.write && !op.wide) {
    if (driver.memset_d32_async == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.memset_d32_async(address, static_cast<unsigned int>(op.value), 1, stream);
  }
  if (op.write) {
    if (driver.memcpy_htod_async == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::uint64_t value = op.value;
    return driver.memcpy_htod_async(address, &value, sizeof value, stream);
  }
  if (driver.launch_host_func == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto wait = std::make_unique<HostWait>(HostWait{op.address, op.value, op.flags, op.wide});
  const CUresult result = driver.launch_host_func(stream, wait_on_host, wait.get());
  if (result == CUDA_SUCCESS) (void)wait.release();  // the host function owns it now
  return result;
}

// A wait queued on the stream: the strategies must not wait on the host for what follows it until
// it is over (DriverDevice::value_wait_issued). Only where a strategy orders streams.
template <class F>
void waited(const Call<F>& call, CUstream hStream, CUresult result, std::uint64_t stream) {
  if (result != CUDA_SUCCESS || !call.runtimes.wants_accesses() || captured(call, stream)) return;
  if (DriverDevice* driver = call.runtimes.driver()) driver->value_wait_issued(stand_in_stream(call, hStream));
}

template <class F, class Value>
CUresult word_op(const Call<F>& call, CUstream hStream, CUdeviceptr addr, Value value, unsigned int flags, bool write,
                 bool v2) {
  const std::uint64_t stream = stream_of(call, hStream);
  WordOp op;
  op.address = u64(addr);
  op.value = value;
  op.flags = flags;
  op.wide = sizeof(Value) == 8;
  op.write = write;
  record_words(call, {op}, stream);
  CUresult result = call.real(hStream, addr, value, flags);
  if (result == CUDA_ERROR_INVALID_VALUE && !captured(call, stream) && op.address % sizeof(Value) == 0 &&
      flags_valid(op, v2) && served_as_managed(call, op.address)) {
    result = stand_in(*call.runtimes.driver_functions(), stand_in_stream(call, hStream), op);
  }
  if (!write) waited(call, hStream, result, stream);
  return result;
}

// The operations of a batch, as far as memtool understands them.
std::vector<WordOp> batch_ops(unsigned count, const CUstreamBatchMemOpParams* params) {
  std::vector<WordOp> ops;
  if (params == nullptr || count >= kMaxBatchMemOps) return ops;
  ops.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = params[i];
    WordOp op;
    switch (p.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        op.wide = p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
        op.address = u64(p.waitValue.address);
        op.value = op.wide ? p.waitValue.value64 : p.waitValue.value;
        op.flags = p.waitValue.flags;
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        op.write = true;
        op.wide = p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        op.address = u64(p.writeValue.address);
        op.value = op.wide ? p.writeValue.value64 : p.writeValue.value;
        op.flags = p.writeValue.flags;
        break;
      case CU_STREAM_MEM_OP_BARRIER:
        op.barrier = true;
        break;
      default:
        op.known = false;
        break;
    }
    ops.push_back(op);
  }
  return ops;
}

// A batch the driver refused only because some of its words are memtool's managed memory: each
// operation in order, those words through the stand-ins, the others through the real batch call
// one at a time (the driver's own validation of the batch passed for them: checked here first).
template <class F>
CUresult batch_stand_in(const Call<F>& call, CUstream hStream, const CUstreamBatchMemOpParams* params,
                        const std::vector<WordOp>& ops, bool v2) {
  bool any_managed = false;
  std::vector<bool> managed(ops.size(), false);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const WordOp& op = ops[i];
    if (!op.known || (op.barrier && !v2)) return CUDA_ERROR_INVALID_VALUE;
    if (op.barrier) continue;
    if (op.address % (op.wide ? 8 : 4) != 0 || !flags_valid(op, v2)) return CUDA_ERROR_INVALID_VALUE;
    managed[i] = served_as_managed(call, op.address);
    any_managed = any_managed || managed[i];
  }
  if (!any_managed) return CUDA_ERROR_INVALID_VALUE;
  const CUstream stream = stand_in_stream(call, hStream);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CUstreamBatchMemOpParams one = params[i];
    const CUresult r =
        managed[i] ? stand_in(*call.runtimes.driver_functions(), stream, ops[i]) : call.real(hStream, 1, &one, 0);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

template <class F>
CUresult batch_mem_op(const Call<F>& call, CUstream hStream, unsigned int count, CUstreamBatchMemOpParams* params,
                      unsigned int flags, bool v2) {
  const std::uint64_t stream = stream_of(call, hStream);
  const std::vector<WordOp> ops = batch_ops(count, params);
  record_words(call, ops, stream);
  CUresult result = call.real(hStream, count, params, flags);
  if (result == CUDA_ERROR_INVALID_VALUE && flags == 0 && !ops.empty() && !captured(call, stream)) {
    result = batch_stand_in(call, hStream, params, ops, v2);
  }
  const bool waits = std::any_of(ops.begin(), ops.end(), [](const WordOp& op) { return !op.write && !op.barrier; });
  if (waits) waited(call, hStream, result, stream);
  return result;
}

// --- prefetches and advice ------------------------------------------------------------------------

// A prefetch is stream work that moves the range: the strategies hear of it as an access. On a
// buffer memtool serves from managed memory the driver would move memtool's memory behind its
// back; the program's own allocation there is device memory, which the driver refuses to prefetch.
template <class F, class... Args>
CUresult prefetch(const Call<F>& call, CUdeviceptr devPtr, size_t count, CUstream hStream, Args... args) {
  if (served_as_managed(call, u64(devPtr))) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t stream = stream_of(call, hStream);
  if (captured(call, stream)) {
    call.recorder.on_captured_work(kCapturedCopy, stream);
  } else {
    order(call, call.recorder.on_touch(u64(devPtr), count, stream), stream);
  }
  return call.real(args...);
}

// Advice changes where the driver keeps managed memory: never memtool's (see prefetch).
template <class F, class... Args>
CUresult advise(const Call<F>& call, CUdeviceptr devPtr, Args... args) {
  if (served_as_managed(call, u64(devPtr))) return CUDA_ERROR_INVALID_VALUE;
  return call.real(args...);
}

}  // namespace

// --- batch copies -----------------------------------------------------------------------------------

CUresult handle_cuMemcpyBatchAsync(const Call<fn::cuMemcpyBatchAsync>& call, CUdeviceptr* dsts, CUdeviceptr* srcs,
                                   size_t* sizes, size_t count, CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                   size_t numAttrs, size_t* failIdx, CUstream hStream) noexcept {
  return batch_copy(call, dsts, srcs, sizes, count, hStream, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs,
                    failIdx, hStream);
}

CUresult handle_cuMemcpyBatchAsync_v2(const Call<fn::cuMemcpyBatchAsync_v2>& call, CUdeviceptr* dsts, CUdeviceptr* srcs,
                                      size_t* sizes, size_t count, CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                      size_t numAttrs, CUstream hStream) noexcept {
  return batch_copy(call, dsts, srcs, sizes, count, hStream, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs,
                    hStream);
}

CUresult handle_cuMemcpy3DBatchAsync(const Call<fn::cuMemcpy3DBatchAsync>& call, size_t numOps,
                                     CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx, unsigned long long flags,
                                     CUstream hStream) noexcept {
  return batch_copy_3d(call, numOps, opList, hStream, numOps, opList, failIdx, flags, hStream);
}

CUresult handle_cuMemcpy3DBatchAsync_v2(const Call<fn::cuMemcpy3DBatchAsync_v2>& call, size_t numOps,
                                        CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                        CUstream hStream) noexcept {
  return batch_copy_3d(call, numOps, opList, hStream, numOps, opList, flags, hStream);
}

// --- stream memory operations ---------------------------------------------------------------------

CUresult handle_cuStreamWriteValue32(const Call<fn::cuStreamWriteValue32>& call, CUstream stream, CUdeviceptr addr,
                                     cuuint32_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, true, false);
}
CUresult handle_cuStreamWriteValue32_v2(const Call<fn::cuStreamWriteValue32_v2>& call, CUstream stream,
                                        CUdeviceptr addr, cuuint32_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, true, true);
}
CUresult handle_cuStreamWriteValue64(const Call<fn::cuStreamWriteValue64>& call, CUstream stream, CUdeviceptr addr,
                                     cuuint64_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, true, false);
}
CUresult handle_cuStreamWriteValue64_v2(const Call<fn::cuStreamWriteValue64_v2>& call, CUstream stream,
                                        CUdeviceptr addr, cuuint64_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, true, true);
}
CUresult handle_cuStreamWaitValue32(const Call<fn::cuStreamWaitValue32>& call, CUstream stream, CUdeviceptr addr,
                                    cuuint32_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, false, false);
}
CUresult handle_cuStreamWaitValue32_v2(const Call<fn::cuStreamWaitValue32_v2>& call, CUstream stream, CUdeviceptr addr,
                                       cuuint32_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, false, true);
}
CUresult handle_cuStreamWaitValue64(const Call<fn::cuStreamWaitValue64>& call, CUstream stream, CUdeviceptr addr,
                                    cuuint64_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, false, false);
}
CUresult handle_cuStreamWaitValue64_v2(const Call<fn::cuStreamWaitValue64_v2>& call, CUstream stream, CUdeviceptr addr,
                                       cuuint64_t value, unsigned int flags) noexcept {
  return word_op(call, stream, addr, value, flags, false, true);
}
CUresult handle_cuStreamBatchMemOp(const Call<fn::cuStreamBatchMemOp>& call, CUstream stream, unsigned int count,
                                   CUstreamBatchMemOpParams* paramArray, unsigned int flags) noexcept {
  return batch_mem_op(call, stream, count, paramArray, flags, false);
}
CUresult handle_cuStreamBatchMemOp_v2(const Call<fn::cuStreamBatchMemOp_v2>& call, CUstream stream, unsigned int count,
                                      CUstreamBatchMemOpParams* paramArray, unsigned int flags) noexcept {
  return batch_mem_op(call, stream, count, paramArray, flags, true);
}

// --- prefetches and advice -----------------------------------------------------------------------

CUresult handle_cuMemPrefetchAsync(const Call<fn::cuMemPrefetchAsync>& call, CUdeviceptr devPtr, size_t count,
                                   CUdevice dstDevice, CUstream hStream) noexcept {
  return prefetch(call, devPtr, count, hStream, devPtr, count, dstDevice, hStream);
}
CUresult handle_cuMemPrefetchAsync_v2(const Call<fn::cuMemPrefetchAsync_v2>& call, CUdeviceptr devPtr, size_t count,
                                      CUmemLocation location, unsigned int flags, CUstream hStream) noexcept {
  return prefetch(call, devPtr, count, hStream, devPtr, count, location, flags, hStream);
}
CUresult handle_cuMemAdvise(const Call<fn::cuMemAdvise>& call, CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                            CUdevice device) noexcept {
  return advise(call, devPtr, devPtr, count, advice, device);
}
CUresult handle_cuMemAdvise_v2(const Call<fn::cuMemAdvise_v2>& call, CUdeviceptr devPtr, size_t count,
                               CUmem_advise advice, CUmemLocation location) noexcept {
  return advise(call, devPtr, devPtr, count, advice, location);
}

}  // namespace memtool::interpose
