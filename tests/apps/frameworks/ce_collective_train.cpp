// A copy-engine collective between two ranks of one device, the way NCCL 2.28 runs an allgather
// on the copy engines (and other libraries signal between streams): each rank is a stream with a
// window — one cuMemAlloc holding two gather slots and its flags — and every step each rank
//   computes its shard into a fresh buffer (a kernel),
//   signals the peer by writing a value into the peer's window (cuStreamWriteValue32) and waits
//   for the peer's signal in its own window (cuStreamWaitValue32, cyclic >=),
//   gathers both shards into its window with one cuMemcpyBatchAsync (the peer's shard read in
//   stream order; a header copied from host memory the program overwrites as soon as the call
//   returns, CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL),
//   accumulates the slots (kernels), says it is done with a 64-bit write and a cuStreamBatchMemOp
//   (a 64-bit wait for the peer's done and a 32-bit write), and copies a strip of its accumulator
//   out with cuMemcpy3DBatchAsync (pitched pointer operands).
// A managed statistics buffer gets cuMemAdvise and cuMemPrefetchAsync to the device and back.
// Adversarial for a tool that serves memory: the flags live in large device buffers (which UVM
// swapping would back with managed memory, where the driver refuses stream memory operations),
// the program prefetches device memory once and prints what the driver said (refused: it is not
// managed memory), and it checks failIdx of a batch with a bad attribute (--old-abi).
// Prints one line per step with both accumulators' and the strips' checksums; any unexpected
// failing driver call ends the run (exit 3).
//
//   ce_collective_train --module IMAGE [--steps|--iterations N] [--floats N] [--old-abi]
// --old-abi resolves the first generations through cuGetProcAddress: cuMemcpyBatchAsync and
// cuMemcpy3DBatchAsync of CUDA 12.8 (with failIdx), the CUDA 8/9 stream memory operations (with
// CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), cuMemPrefetchAsync and cuMemAdvise taking a device.
// Without it, the CUDA 13 entry points the header names.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_device.hpp"

namespace {

using frameworks::check;

using frameworks::checksum;

// The entry points, resolved as the program asked (the header's CUDA 13 names, or the old ABI).
using BatchV1 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, size_t*,
                             CUstream);
using BatchV2 = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t,
                             CUstream);
using Batch3DV1 = CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, size_t*, unsigned long long, CUstream);
using Batch3DV2 = CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream);
using Write32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using Write64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
using MemOps = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
using PrefetchV1 = CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream);
using AdviseV1 = CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUdevice);

template <class T>
T resolve(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  check(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found), name);
  if (fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) check(CUDA_ERROR_NOT_FOUND, name);
  return reinterpret_cast<T>(fn);
}

struct Api {
  bool old = false;
  BatchV1 batch_v1 = nullptr;
  Batch3DV1 batch3d_v1 = nullptr;
  Write32 write32 = nullptr;
  Write32 wait32 = nullptr;
  Write64 write64 = nullptr;
  MemOps mem_ops = nullptr;
  PrefetchV1 prefetch_v1 = nullptr;
  AdviseV1 advise_v1 = nullptr;

  explicit Api(bool old_abi) : old(old_abi) {
    if (old) {
      batch_v1 = resolve<BatchV1>("cuMemcpyBatchAsync", 12080);
      batch3d_v1 = resolve<Batch3DV1>("cuMemcpy3DBatchAsync", 12080);
      write32 = resolve<Write32>("cuStreamWriteValue32", 9000);
      wait32 = resolve<Write32>("cuStreamWaitValue32", 9000);
      write64 = resolve<Write64>("cuStreamWriteValue64", 9000);
      mem_ops = resolve<MemOps>("cuStreamBatchMemOp", 9000);
      prefetch_v1 = resolve<PrefetchV1>("cuMemPrefetchAsync", 12000);
      advise_v1 = resolve<AdviseV1>("cuMemAdvise", 12000);
    } else {
      write32 = cuStreamWriteValue32;
      wait32 = cuStreamWaitValue32;
      write64 = cuStreamWriteValue64;
      mem_ops = cuStreamBatchMemOp;
    }
  }
  // The flag a write may carry in its generation (the v2 API takes none).
  [[nodiscard]] unsigned write_flags() const { return old ? CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : 0; }

  CUresult batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                 size_t* idxs, size_t num_attrs, size_t* fail_idx, CUstream s) const {
    if (old) return batch_v1(dsts, srcs, sizes, count, attrs, idxs, num_attrs, fail_idx, s);
    return cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, idxs, num_attrs, s);
  }
  CUresult batch3d(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, CUstream s) const {
    if (old) {
      size_t fail = 0;
      return batch3d_v1(n, ops, &fail, 0, s);
    }
    return cuMemcpy3DBatchAsync(n, ops, 0, s);
  }
  CUresult prefetch(CUdeviceptr p, size_t bytes, CUdevice to, CUstream s) const {
    if (old) return prefetch_v1(p, bytes, to, s);
    CUmemLocation location{};
    location.type = to == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = to == CU_DEVICE_CPU ? 0 : to;
    return cuMemPrefetchAsync(p, bytes, location, 0, s);
  }
  CUresult advise(CUdeviceptr p, size_t bytes, CUmem_advise advice, CUdevice device) const {
    if (old) return advise_v1(p, bytes, advice, device);
    CUmemLocation location{};
    location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    location.id = device;
    return cuMemAdvise(p, bytes, advice, location);
  }
};

// A rank's window: two gather slots, then its flags (NCCL keeps signals beside the data).
struct Window {
  CUdeviceptr base = 0;
  std::size_t slot_bytes = 0;
  [[nodiscard]] CUdeviceptr slot(int k) const { return base + static_cast<CUdeviceptr>(k) * slot_bytes; }
  [[nodiscard]] CUdeviceptr flags() const { return base + 2 * slot_bytes; }
  [[nodiscard]] CUdeviceptr ready(int from) const { return flags() + 4 * static_cast<CUdeviceptr>(from); }
  [[nodiscard]] CUdeviceptr ack(int from) const { return flags() + 8 + 4 * static_cast<CUdeviceptr>(from); }
  [[nodiscard]] CUdeviceptr done(int from) const { return flags() + 16 + 8 * static_cast<CUdeviceptr>(from); }
  [[nodiscard]] CUdeviceptr header() const { return flags() + 64; }
};
constexpr std::size_t kFlagBytes = 4096;
constexpr std::size_t kHeaderBytes = 16;
constexpr int kStripRows = 8;
constexpr std::size_t kStripRowBytes = 256;  // bytes copied from each row
constexpr std::size_t kStripPitch = 4096;    // bytes between rows in the accumulator
constexpr int kStatsFloats = 16;

}  // namespace

int main(int argc, char** argv) {
  frameworks::g_program = "ce_collective_train";
  std::string module_path;
  int steps = 12;
  int floats = 1 << 19;  // 2 MiB shards
  bool old_abi = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--old-abi") {
      old_abi = true;
    } else if (i + 1 < argc && flag == "--module") {
      module_path = argv[++i];
    } else if (i + 1 < argc && (flag == "--steps" || flag == "--iterations")) {
      steps = std::atoi(argv[++i]);
    } else if (i + 1 < argc && flag == "--floats") {
      floats = std::atoi(argv[++i]);
    }
  }
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  if (module_path.empty() || steps < 1 || bytes < kStripRows * kStripPitch) {
    std::fprintf(stderr, "usage: ce_collective_train --module IMAGE [--steps N] [--floats N>=8192] [--old-abi]\n");
    return 2;
  }
  CK(cuInit(0));
  const Api api(old_abi);
  frameworks::KernelDevice dev = frameworks::open_kernel_device(0, module_path, check);
  CUstream stream[2] = {dev.stream, nullptr};
  CK(cuStreamCreate(&stream[1], CU_STREAM_NON_BLOCKING));

  Window win[2];
  CUdeviceptr acc[2] = {0, 0};
  CUdeviceptr strip[2] = {0, 0};
  for (int r = 0; r < 2; ++r) {
    win[r].slot_bytes = bytes;
    CK(cuMemAlloc(&win[r].base, 2 * bytes + kFlagBytes));
    CK(cuMemsetD8(win[r].flags(), 0, kFlagBytes));
    CK(cuMemAlloc(&acc[r], bytes));
    CK(cuMemsetD32(acc[r], 0, static_cast<size_t>(floats)));
    CK(cuMemAlloc(&strip[r], kStripRows * kStripRowBytes));
  }
  // The synchronous memsets may return before they are done, and the kernels' streams are
  // non-blocking (not ordered after the legacy stream's work): wait for them.
  CK(cuCtxSynchronize());
  CUdeviceptr stats = 0;
  CK(cuMemAllocManaged(&stats, kStatsFloats * sizeof(float), CU_MEM_ATTACH_GLOBAL));

  // Device memory is not managed memory: the driver refuses to prefetch it (said on stdout, so a
  // tool under which this succeeds shows).
  std::printf("prefetch of device memory: CUresult %d\n",
              static_cast<int>(api.prefetch(acc[0], bytes, dev.device, stream[0])));
  if (old_abi) {  // failIdx names the first copy of a bad attribute
    CUdeviceptr d[2] = {acc[1], acc[1] + 4};
    CUdeviceptr s[2] = {acc[0], acc[0] + 4};
    size_t sizes[2] = {4, 4};
    CUmemcpyAttributes attrs[2]{};
    attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attrs[1].srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(0x7f);
    size_t idxs[2] = {0, 1};
    size_t fail = 0;
    const CUresult r = api.batch(d, s, sizes, 2, attrs, idxs, 2, &fail, stream[0]);
    std::printf("batch with a bad attribute: CUresult %d failIdx %zu\n", static_cast<int>(r), fail);
  }

  std::vector<float> host(static_cast<std::size_t>(floats));
  std::vector<unsigned char> strip_host(kStripRows * kStripRowBytes);
  for (int step = 0; step < steps; ++step) {
    const auto epoch = static_cast<cuuint32_t>(step + 1);
    CUdeviceptr shard[2] = {0, 0};
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < floats; ++i) {
        host[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(r + 1) + 0.25f * static_cast<float>(step % 4) +
                                            0.125f * static_cast<float>(i % 7);
      }
      CK(cuMemAlloc(&shard[r], bytes));
      CK(cuMemcpyHtoDAsync(shard[r], host.data(), bytes, stream[0]));
      frameworks::launch_scale_add(dev, floats, shard[r], shard[r], 1.0f, 1.0f, check);  // on stream[0]
    }
    // The shards were computed on stream[0]: rank 1's stream waits for them through an event.
    CUevent computed = nullptr;
    CK(cuEventCreate(&computed, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(computed, stream[0]));
    CK(cuStreamWaitEvent(stream[1], computed, 0));
    for (int r = 0; r < 2; ++r) {  // signal the peer, then wait for its signal
      CK(api.write32(stream[r], win[1 - r].ready(r), epoch, api.write_flags()));
      CK(api.wait32(stream[r], win[r].ready(1 - r), epoch, CU_STREAM_WAIT_VALUE_GEQ));
    }
    for (int r = 0; r < 2; ++r) {  // gather both shards and a header into the window
      unsigned char header[kHeaderBytes];
      std::memset(header, 0, sizeof header);
      std::snprintf(reinterpret_cast<char*>(header), sizeof header, "s%d r%d", step, r);
      CUdeviceptr dsts[3] = {win[r].slot(0), win[r].slot(1), win[r].header()};
      CUdeviceptr srcs[3] = {shard[0], shard[1], reinterpret_cast<CUdeviceptr>(header)};
      size_t sizes[3] = {bytes, bytes, kHeaderBytes};
      CUmemcpyAttributes attrs[2]{};
      attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      attrs[0].flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
      attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
      size_t idxs[2] = {0, 2};
      size_t fail = 0;
      CK(api.batch(dsts, srcs, sizes, 3, attrs, idxs, 2, &fail, stream[r]));
      std::memset(header, 0xff, sizeof header);  // read during the call: this must not be seen
    }
    for (int r = 0; r < 2; ++r) {
      CUevent gathered = nullptr;
      CK(cuEventCreate(&gathered, CU_EVENT_DISABLE_TIMING));
      CK(cuEventRecord(gathered, stream[r]));
      CK(cuStreamWaitEvent(stream[0], gathered, 0));
      CK(cuEventDestroy(gathered));
      frameworks::launch_scale_add(dev, floats, acc[r], win[r].slot(r), 1.0f, 1.0f, check);
      frameworks::launch_scale_add(dev, floats, acc[r], win[r].slot(1 - r), 1.0f, 0.5f, check);
    }
    CK(cuEventRecord(computed, stream[0]));
    CK(cuStreamWaitEvent(stream[1], computed, 0));
    CK(cuEventDestroy(computed));
    for (int r = 0; r < 2; ++r) {  // done: a 64-bit write to the peer, then a batch: wait, ack
      CK(api.write64(stream[r], win[1 - r].done(r), cuuint64_t{epoch} << 32 | epoch, api.write_flags()));
    }
    for (int r = 0; r < 2; ++r) {
      CUstreamBatchMemOpParams ops[2]{};
      ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
      ops[0].waitValue.address = win[r].done(1 - r);
      ops[0].waitValue.value64 = cuuint64_t{epoch} << 32 | epoch;
      ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
      ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      ops[1].writeValue.address = win[r].ack(1 - r);
      ops[1].writeValue.value = epoch;
      ops[1].writeValue.flags = 0;
      CK(api.mem_ops(stream[r], 2, ops, 0));
    }
    for (int r = 0; r < 2; ++r) {  // a strip of the accumulator: rows of 256 bytes, 4096 apart
      CUDA_MEMCPY3D_BATCH_OP op{};
      op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
      op.src.op.ptr.ptr = acc[r];
      op.src.op.ptr.rowLength = kStripPitch;
      op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
      op.dst.op.ptr.ptr = strip[r];
      op.dst.op.ptr.rowLength = kStripRowBytes;
      op.extent = {kStripRowBytes, kStripRows, 1};
      op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(api.batch3d(1, &op, stream[0]));
    }
    // Statistics in managed memory: advised to live on the device, prefetched there, written by a
    // kernel, prefetched back and read by the host.
    CK(api.advise(stats, kStatsFloats * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev.device));
    CK(api.prefetch(stats, kStatsFloats * sizeof(float), dev.device, stream[0]));
    frameworks::launch_scale_add(dev, kStatsFloats, stats, acc[0], 0.0f, 1.0f, check);
    CK(api.prefetch(stats, kStatsFloats * sizeof(float), CU_DEVICE_CPU, stream[0]));
    CK(cuStreamSynchronize(stream[0]));
    CK(cuStreamSynchronize(stream[1]));

    std::string line = "step " + std::to_string(step);
    for (int r = 0; r < 2; ++r) {
      CK(cuMemcpyDtoH(host.data(), acc[r], bytes));
      CK(cuMemcpyDtoH(strip_host.data(), strip[r], strip_host.size()));
      char header[kHeaderBytes + 1] = {};
      CK(cuMemcpyDtoH(header, win[r].header(), kHeaderBytes));
      cuuint32_t ack = 0;
      CK(cuMemcpyDtoH(&ack, win[r].ack(1 - r), sizeof ack));
      std::uint64_t strip_sum = 1469598103934665603ull;
      for (const unsigned char b : strip_host) strip_sum = (strip_sum ^ b) * 1099511628211ull;
      char part[160];
      std::snprintf(part, sizeof part, " rank%d acc %016llx strip %016llx header '%s' ack %u", r,
                    static_cast<unsigned long long>(checksum(host)), static_cast<unsigned long long>(strip_sum), header,
                    static_cast<unsigned>(ack));
      line += part;
    }
    const float* s = reinterpret_cast<const float*>(stats);
    char part[64];
    std::snprintf(part, sizeof part, " stats %.4f", static_cast<double>(s[kStatsFloats - 1]));
    line += part;
    for (int r = 0; r < 2; ++r) CK(cuMemFree(shard[r]));
    std::printf("%s\n", line.c_str());
  }
  for (int r = 0; r < 2; ++r) {
    CK(cuMemFree(win[r].base));
    CK(cuMemFree(acc[r]));
    CK(cuMemFree(strip[r]));
  }
  CK(cuMemFree(stats));
  CK(cuStreamDestroy(stream[1]));
  CK(cuStreamDestroy(dev.stream));
  CK(cuModuleUnload(dev.module));
  CK(cuDevicePrimaryCtxRelease(dev.device));
  return 0;
}
