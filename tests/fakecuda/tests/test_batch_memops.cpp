// Batch copies (both generations, 1D and 3D) and stream memory operations on real data: what
// lands where, in stream order, when a source is read, the documented validation and failIdx,
// and the new entry points' resolution through cuGetProcAddress.
#include "devices_fixture.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using namespace fakecuda_test;

namespace {

CUmemcpyAttributes attributes(CUmemcpySrcAccessOrder order) {
  CUmemcpyAttributes a{};
  a.srcAccessOrder = order;
  return a;
}

std::vector<unsigned> read_words(CUdeviceptr p, std::size_t n) {
  std::vector<unsigned> host(n, 0);
  REQUIRE(cuMemcpyDtoH(host.data(), p, n * sizeof(unsigned)) == CUDA_SUCCESS);
  return host;
}

// Whether all n words at p are `value` (a failure names the first that is not, not all n).
bool words_are(CUdeviceptr p, std::size_t n, unsigned value) {
  const std::vector<unsigned> host = read_words(p, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (host[i] != value) {
      UNSCOPED_INFO("word " << i << " is " << host[i] << ", not " << value);
      return false;
    }
  }
  return true;
}

void* exported(const char* symbol) {
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(self != nullptr);
  void* fn = dlsym(self, symbol);
  dlclose(self);
  REQUIRE(fn != nullptr);
  return fn;
}

// The CUDA 8 generation of the stream memory operations, which cuda.h renames to _v2.
CUresult v1_write_value32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags) {
  using Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  return reinterpret_cast<Fn>(exported("cuStreamWriteValue32"))(s, addr, value, flags);
}

CUresult v1_batch_mem_op(CUstream s, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags) {
  using Fn = CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
  return reinterpret_cast<Fn>(exported("cuStreamBatchMemOp"))(s, count, ops, flags);
}

// The generations of the batch copies cuda.h does not show under their own names.
CUresult batch_v1(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                  size_t* idxs, size_t num_attrs, size_t* fail, CUstream s) {
  using Fn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, size_t*,
                          CUstream);
  return reinterpret_cast<Fn>(exported("cuMemcpyBatchAsync"))(dsts, srcs, sizes, count, attrs, idxs, num_attrs, fail,
                                                              s);
}

CUresult batch_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                       size_t* idxs, size_t num_attrs, CUstream s) {
  using Fn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, CUstream);
  return reinterpret_cast<Fn>(exported("cuMemcpyBatchAsync_v2_ptsz"))(dsts, srcs, sizes, count, attrs, idxs, num_attrs,
                                                                      s);
}

CUresult batch_3d_v1(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail, unsigned long long flags, CUstream s) {
  using Fn = CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, size_t*, unsigned long long, CUstream);
  return reinterpret_cast<Fn>(exported("cuMemcpy3DBatchAsync"))(n, ops, fail, flags, s);
}

CUresult batch_3d_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s) {
  using Fn = CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream);
  return reinterpret_cast<Fn>(exported("cuMemcpy3DBatchAsync_v2_ptsz"))(n, ops, flags, s);
}

void* resolve(const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  INFO(name << " @" << version);
  REQUIRE(status_name(cuGetProcAddress(name, &fn, version, flags, &status)) == "CUDA_SUCCESS");
  return fn;
}

}  // namespace

TEST_CASE("cuMemcpyBatchAsync copies every pair, across devices too", "[fakecuda][batch]") {
  two_devices_ready(1);
  DeviceBuffer on1(4096);
  two_devices_ready(0);
  DeviceBuffer a(4096);
  DeviceBuffer b(4096);
  PinnedWords out(1024);
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<unsigned> host(1024);
  for (unsigned i = 0; i < 1024; ++i) host[i] = i * 3 + 1;
  CU_REQUIRE_OK(cuMemsetD32(b.get(), 0xbb, 1024));
  CU_REQUIRE_OK(cuCtxSynchronize());
  // host -> a, b -> device 1, device 1 is then read back in a second batch.
  CUdeviceptr dsts[] = {a.get(), on1.get()};
  CUdeviceptr srcs[] = {reinterpret_cast<CUdeviceptr>(host.data()), b.get()};
  size_t sizes[] = {4096, 4096};
  CUmemcpyAttributes attrs[] = {attributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL),
                                attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM)};
  size_t idxs[] = {0, 1};
  const fakecuda_stats before = stats_now();
  CU_REQUIRE_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, idxs, 2, s));
  CHECK(stats_now().copies - before.copies == 2);
  CUdeviceptr back_dst[] = {reinterpret_cast<CUdeviceptr>(out.words)};
  CUdeviceptr back_src[] = {on1.get()};
  size_t back_size[] = {4096};
  CUmemcpyAttributes any = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_ANY);
  size_t zero = 0;
  CU_REQUIRE_OK(cuMemcpyBatchAsync(back_dst, back_src, back_size, 1, &any, &zero, 1, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(read_words(a.get(), 1024) == host);
  CHECK(std::vector<unsigned>(out.words, out.words + 1024) == std::vector<unsigned>(1024, 0xbb));
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("a batch source read during the call is read before it returns", "[fakecuda][batch]") {
  two_devices_ready(0);
  DeviceBuffer during(64);
  DeviceBuffer in_order(64);
  PinnedWords source(16);  // pinned: a stream-ordered read really happens later
  for (int i = 0; i < 16; ++i) source.words[i] = 1;
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  {
    Gate gate;
    gate.hold(s);
    CUdeviceptr dsts[] = {during.get()};
    CUdeviceptr srcs[] = {reinterpret_cast<CUdeviceptr>(source.words)};
    size_t sizes[] = {64};
    size_t idx = 0;
    CUmemcpyAttributes now = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
    CU_REQUIRE_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, &now, &idx, 1, s));
    dsts[0] = in_order.get();
    CUmemcpyAttributes later = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    CU_REQUIRE_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, &later, &idx, 1, s));
    for (int i = 0; i < 16; ++i) source.words[i] = 2;  // the caller reuses its source at once
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  CHECK(words_are(during.get(), 16, 1));
  CHECK(words_are(in_order.get(), 16, 2));
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("cuMemcpyBatchAsync validates the whole batch first; failIdx names the bad copy",
          "[fakecuda][batch][errors]") {
  two_devices_ready(0);
  DeviceBuffer a(4096);
  DeviceBuffer b(4096);
  CU_REQUIRE_OK(cuMemsetD8(a.get(), 0, 4096));
  CU_REQUIRE_OK(cuMemsetD8(b.get(), 9, 4096));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dsts[] = {a.get(), a.get() + 2048, b.get()};
  CUdeviceptr srcs[] = {b.get(), b.get(), a.get()};
  size_t sizes[] = {1024, 1024, 8192};  // the third runs past both buffers
  CUmemcpyAttributes attr = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
  size_t idx = 0;
  size_t fail = 77;
  CU_CHECK_IS(batch_v1(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 2);
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  std::vector<unsigned char> host(4096);
  CU_REQUIRE_OK(cuMemcpyDtoH(host.data(), a.get(), 4096));
  CHECK(host == std::vector<unsigned char>(4096, 0));  // nothing of the batch ran
  sizes[2] = 1024;
  // Attribute errors: an invalid source order, indices that do not start at 0 or do not rise.
  CUmemcpyAttributes bad = attributes(CU_MEMCPY_SRC_ACCESS_ORDER_INVALID);
  CUmemcpyAttributes two[] = {attr, bad};
  size_t two_idx[] = {0, 1};
  fail = 77;
  CU_CHECK_IS(batch_v1(dsts, srcs, sizes, 3, two, two_idx, 2, &fail, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  size_t late[] = {1, 2};
  fail = 77;
  CU_CHECK_IS(batch_v1(dsts, srcs, sizes, 3, two, late, 2, &fail, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == SIZE_MAX);
  CU_CHECK_IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, &attr, &idx, 4, s),
              CUDA_ERROR_INVALID_VALUE);  // numAttrs > count
  attr.flags = 0x80;
  CU_CHECK_IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, &attr, &idx, 1, s), CUDA_ERROR_INVALID_VALUE);
  attr.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
  // Not on the legacy NULL stream; the per-thread one is fine.
  CU_CHECK_IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, &attr, &idx, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, &attr, &idx, 1, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(batch_v2_ptsz(dsts, srcs, sizes, 3, &attr, &idx, 1, nullptr), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  CU_REQUIRE_OK(cuMemcpyDtoH(host.data(), a.get(), 4096));
  CHECK(host[0] == 9);
  CHECK(host[2048 + 1023] == 9);
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("cuMemcpy3DBatchAsync copies pitched boxes", "[fakecuda][batch]") {
  two_devices_ready(0);
  // A 4 x 3 x 2 box of bytes out of a host volume 8 wide, 5 high, into a device volume 16 wide,
  // 4 high.
  std::vector<unsigned char> volume(8 * 5 * 2);
  for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<unsigned char>(i);
  DeviceBuffer dev(16 * 4 * 2);
  CU_REQUIRE_OK(cuMemsetD8(dev.get(), 0xff, 16 * 4 * 2));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUDA_MEMCPY3D_BATCH_OP op{};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.src.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(volume.data());
  op.src.op.ptr.rowLength = 8;
  op.src.op.ptr.layerHeight = 5;
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.dst.op.ptr.ptr = dev.get();
  op.dst.op.ptr.rowLength = 16;
  op.dst.op.ptr.layerHeight = 4;
  op.extent = CUextent3D{4, 3, 2};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_REQUIRE_OK(cuMemcpy3DBatchAsync_v2(1, &op, 0, s));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  std::vector<unsigned char> back(16 * 4 * 2);
  CU_REQUIRE_OK(cuMemcpyDtoH(back.data(), dev.get(), back.size()));
  for (std::size_t z = 0; z < 2; ++z) {
    for (std::size_t y = 0; y < 4; ++y) {
      for (std::size_t x = 0; x < 16; ++x) {
        const unsigned char want = (x < 4 && y < 3) ? volume[(z * 5 + y) * 8 + x] : 0xff;
        INFO(x << "," << y << "," << z);
        CHECK(back[(z * 4 + y) * 16 + x] == want);
      }
    }
  }
  // Errors, with failIdx in the 12.8 generation.
  CUDA_MEMCPY3D_BATCH_OP ops[2] = {op, op};
  ops[1].extent.depth = 0;
  size_t fail = 77;
  CU_CHECK_IS(batch_3d_v1(2, ops, &fail, 0, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  ops[1] = op;
  ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;  // no CUDA arrays here
  CU_CHECK_IS(batch_3d_v1(2, ops, &fail, 0, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  ops[1] = op;
  ops[1].src.op.ptr.rowLength = 2;  // shorter than the copy's width
  CU_CHECK_IS(batch_3d_v1(2, ops, &fail, 0, s), CUDA_ERROR_INVALID_VALUE);
  ops[1] = op;
  ops[1].dst.op.ptr.layerHeight = 40;  // runs past the device buffer
  CU_CHECK_IS(batch_3d_v1(2, ops, &fail, 0, s), CUDA_ERROR_INVALID_VALUE);
  CHECK(fail == 1);
  CU_CHECK_IS(cuMemcpy3DBatchAsync_v2(1, &op, 1, s), CUDA_ERROR_INVALID_VALUE);  // flags must be 0
  CU_CHECK_IS(cuMemcpy3DBatchAsync_v2(1, &op, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(batch_3d_v2_ptsz(1, &op, 0, nullptr), CUDA_SUCCESS);
  CU_REQUIRE_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("stream write values land in stream order", "[fakecuda][memop]") {
  two_devices_ready(0);
  DeviceBuffer words(64);
  CU_REQUIRE_OK(cuMemsetD8(words.get(), 0, 64));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  {
    Gate gate;
    gate.hold(s);
    CU_REQUIRE_OK(cuStreamWriteValue32(s, words.get(), 0xabcd, 0));
    CU_REQUIRE_OK(cuStreamWriteValue64(s, words.get() + 8, 0x1122334455667788ULL, 0));
    CHECK(words_are(words.get(), 4, 0));  // not yet: the stream is held
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s));
  }
  const std::vector<unsigned> w = read_words(words.get(), 4);
  CHECK(w[0] == 0xabcd);
  CHECK(w[2] == 0x55667788u);
  CHECK(w[3] == 0x11223344u);
  // The CUDA 8 generation allows NO_MEMORY_BARRIER; the _v2 one does not.
  CU_CHECK_IS(cuStreamWriteValue32(s, words.get(), 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
              CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(v1_write_value32(s, words.get(), 5, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(read_words(words.get(), 1)[0] == 5);
  // Misaligned, managed or freed addresses are refused.
  CU_CHECK_IS(cuStreamWriteValue32(s, words.get() + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamWriteValue64(s, words.get() + 4, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr managed = 0;
  CU_REQUIRE_OK(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL));
  CU_CHECK_IS(cuStreamWriteValue32(s, managed, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuStreamWaitValue32(s, managed, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuMemFree(managed));
  CU_CHECK_IS(cuStreamWriteValue32(s, 0, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("stream wait values hold their stream until the word satisfies the condition", "[fakecuda][memop]") {
  two_devices_ready(0);
  PinnedWords flag(4);  // a host-written flag, as with a pinned doorbell
  flag.words[0] = 0;
  CUdeviceptr flag_dev = 0;
  CU_REQUIRE_OK(cuMemHostGetDevicePointer(&flag_dev, flag.words, 0));
  DeviceBuffer data(64);
  CU_REQUIRE_OK(cuMemsetD8(data.get(), 0, 64));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_REQUIRE_OK(cuStreamWaitValue32(s, flag_dev, 5, CU_STREAM_WAIT_VALUE_GEQ));
  CU_REQUIRE_OK(cuStreamWriteValue32(s, data.get(), 1, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  __atomic_store_n(&flag.words[0], 4u, __ATOMIC_RELEASE);  // not yet >= 5
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  CHECK(read_words(data.get(), 1)[0] == 0);
  __atomic_store_n(&flag.words[0], 6u, __ATOMIC_RELEASE);
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CHECK(read_words(data.get(), 1)[0] == 1);

  // The other conditions, each satisfied by one stream writing what another waits for.
  CUstream writer = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
  struct Case {
    unsigned flags;
    unsigned char initial;  // each byte of the word before: the condition does not hold yet
    unsigned wait_for;
    unsigned written;
  };
  for (const Case c : {Case{CU_STREAM_WAIT_VALUE_EQ, 0xff, 42, 42}, Case{CU_STREAM_WAIT_VALUE_AND, 0x00, 0x10, 0x30},
                       Case{CU_STREAM_WAIT_VALUE_NOR, 0xff, 0xffff0000u, 0x0000fff0u}}) {
    CU_REQUIRE_OK(cuMemsetD8(data.get(), c.initial, 64));
    CU_REQUIRE_OK(cuCtxSynchronize());
    CU_REQUIRE_OK(cuStreamWaitValue32(s, data.get() + 16, c.wait_for, c.flags));
    CU_REQUIRE_OK(cuStreamWriteValue32(s, data.get() + 32, 7, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    INFO("condition " << c.flags);
    CU_CHECK_IS(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_REQUIRE_OK(cuStreamWriteValue32(writer, data.get() + 16, c.written, 0));
    CU_REQUIRE_OK(cuStreamSynchronize(s));
    CHECK(read_words(data.get() + 32, 1)[0] == 7);
  }
  // 64-bit, with the cyclic greater-or-equal.
  CU_REQUIRE_OK(cuStreamWriteValue64(writer, data.get(), 0xfffffffffffffff0ULL, 0));
  CU_REQUIRE_OK(cuStreamSynchronize(writer));
  CU_REQUIRE_OK(cuStreamWaitValue64(s, data.get(), 0xffffffffffffffe0ULL, CU_STREAM_WAIT_VALUE_GEQ));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CU_CHECK_IS(cuStreamWaitValue32(s, data.get(), 1, CU_STREAM_WAIT_VALUE_FLUSH), CUDA_ERROR_NOT_SUPPORTED);
  CU_CHECK_IS(cuStreamWaitValue32(s, data.get(), 1, 7), CUDA_ERROR_INVALID_VALUE);
  CU_REQUIRE_OK(cuStreamDestroy(writer));
  CU_REQUIRE_OK(cuStreamDestroy(s));
}

TEST_CASE("cuStreamBatchMemOp runs its operations in order", "[fakecuda][memop]") {
  two_devices_ready(0);
  DeviceBuffer data(64);
  CU_REQUIRE_OK(cuMemsetD8(data.get(), 0, 64));
  CU_REQUIRE_OK(cuCtxSynchronize());
  CUstream s = nullptr;
  CU_REQUIRE_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUstreamBatchMemOpParams ops[4] = {};
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = data.get();
  ops[0].writeValue.value = 3;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;  // satisfied by the write before it
  ops[1].waitValue.address = data.get();
  ops[1].waitValue.value = 3;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  ops[3].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[3].writeValue.address = data.get() + 8;
  ops[3].writeValue.value64 = 0x0102030405060708ULL;
  CU_REQUIRE_OK(cuStreamBatchMemOp(s, 4, ops, 0));
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  const std::vector<unsigned> w = read_words(data.get(), 4);
  CHECK(w[0] == 3);
  CHECK(w[2] == 0x05060708u);
  CHECK(w[3] == 0x01020304u);
  CU_CHECK_IS(v1_batch_mem_op(s, 4, ops, 0), CUDA_ERROR_INVALID_VALUE);  // barriers: _v2 only
  CU_REQUIRE_OK(v1_batch_mem_op(s, 2, ops, 0));
  CU_CHECK_IS(cuStreamBatchMemOp(s, 4, ops, 1), CUDA_ERROR_INVALID_VALUE);
  std::vector<CUstreamBatchMemOpParams> many(256, ops[0]);
  CU_CHECK_IS(cuStreamBatchMemOp(s, 256, many.data(), 0), CUDA_ERROR_INVALID_VALUE);  // fewer than 256
  CUstreamBatchMemOpParams flush{};
  flush.flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
  CU_CHECK_IS(cuStreamBatchMemOp(s, 1, &flush, 0), CUDA_ERROR_NOT_SUPPORTED);
  CU_REQUIRE_OK(cuStreamSynchronize(s));
  CU_REQUIRE_OK(cuStreamDestroy(s));
  int attr = 0;
  CU_REQUIRE_OK(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
  CHECK(attr == 1);
  CU_REQUIRE_OK(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0));
  CHECK(attr == 0);
}

TEST_CASE("cuGetProcAddress hands out every generation of the new entry points", "[fakecuda][procaddress]") {
  two_devices_ready(0);
  const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  CHECK(resolve("cuMemcpyBatchAsync", 12080, 0) == exported("cuMemcpyBatchAsync"));
  CHECK(resolve("cuMemcpyBatchAsync", 12080, pt) == exported("cuMemcpyBatchAsync_ptsz"));
  CHECK(resolve("cuMemcpyBatchAsync", 13000, 0) == exported("cuMemcpyBatchAsync_v2"));
  CHECK(resolve("cuMemcpyBatchAsync", 13000, pt) == exported("cuMemcpyBatchAsync_v2_ptsz"));
  CHECK(resolve("cuMemcpy3DBatchAsync", 12090, 0) == exported("cuMemcpy3DBatchAsync"));
  CHECK(resolve("cuMemcpy3DBatchAsync", 13000, pt) == exported("cuMemcpy3DBatchAsync_v2_ptsz"));
  CHECK(resolve("cuStreamWaitValue32", 11000, 0) == exported("cuStreamWaitValue32"));
  CHECK(resolve("cuStreamWaitValue32", 11000, pt) == exported("cuStreamWaitValue32_ptsz"));
  CHECK(resolve("cuStreamWaitValue32", 12000, 0) == exported("cuStreamWaitValue32_v2"));
  CHECK(resolve("cuStreamWriteValue64", 12000, pt) == exported("cuStreamWriteValue64_v2_ptsz"));
  CHECK(resolve("cuStreamBatchMemOp", 11070, 0) == exported("cuStreamBatchMemOp_v2"));
  CHECK(resolve("cuStreamBatchMemOp", 9000, pt) == exported("cuStreamBatchMemOp_ptsz"));
  CHECK(resolve("cuIpcOpenMemHandle", 10000, 0) == exported("cuIpcOpenMemHandle"));
  CHECK(resolve("cuIpcOpenMemHandle", 12000, 0) == exported("cuIpcOpenMemHandle_v2"));
  CHECK(resolve("cuStreamGetDevice", 12080, pt) == exported("cuStreamGetDevice_ptsz"));
  for (const char* name : {"cuDeviceCanAccessPeer",
                           "cuCtxEnablePeerAccess",
                           "cuCtxDisablePeerAccess",
                           "cuDeviceGetP2PAttribute",
                           "cuDeviceGetPCIBusId",
                           "cuDeviceGetByPCIBusId",
                           "cuDeviceSetMemPool",
                           "cuMemPoolCreate",
                           "cuMemPoolDestroy",
                           "cuMemPoolSetAccess",
                           "cuMemPoolGetAccess",
                           "cuMemPoolExportToShareableHandle",
                           "cuMemPoolImportFromShareableHandle",
                           "cuMemPoolExportPointer",
                           "cuMemPoolImportPointer",
                           "cuIpcGetEventHandle",
                           "cuIpcOpenEventHandle",
                           "cuMemExportToShareableHandle",
                           "cuMemImportFromShareableHandle",
                           "cuMemGetHandleForAddressRange",
                           "cuMemGetDefaultMemPool",
                           "cuMemGetMemPool",
                           "cuMemSetMemPool"}) {
    CHECK(resolve(name, 13000, 0) == exported(name));
  }
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CU_CHECK_IS(cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12060, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}
