// The handlers of the other ways in (handlers_access.cpp) around fake real functions: every copy
// of a batch recorded, a written value recorded as a store of its word, and the stand-ins for a
// word, prefetch or advice on memory memtool serves from managed memory (the driver refuses
// there what it accepts for the program's own device allocation).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/driver_device.hpp"
#include "memtool/interpose/handlers.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;
using memtool::trace::CopyEvent;
using memtool::trace::MemoryKind;
using memtool::trace::MemsetEvent;

namespace {

// The program's device buffer: real memory, so a host wait can read its words.
alignas(64) std::uint32_t g_buffer[1024];
std::uint64_t buffer_address() { return reinterpret_cast<std::uintptr_t>(g_buffer); }

bool g_managed = false;  // what the fake driver says of the buffer
int g_real_calls = 0;    // calls of the fake real entry point
CUresult g_real_result = CUDA_SUCCESS;
CUdeviceptr g_memset_address = 0;
unsigned g_memset_value = 0;
size_t g_memset_count = 0;
CUstream g_memset_stream = nullptr;
std::uint64_t g_copied = 0;
CUhostFn g_host_fn = nullptr;
void* g_host_data = nullptr;
unsigned g_batch_ops_passed = 0;

CUresult fake_current_context(CUcontext* ctx) {
  *ctx = reinterpret_cast<CUcontext>(0xC0);
  return CUDA_SUCCESS;
}
CUresult fake_pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr) {
  if (attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<unsigned*>(data) = g_managed ? 1 : 0;
  return CUDA_SUCCESS;
}
CUresult fake_memset(CUdeviceptr p, unsigned v, size_t n, CUstream s) {
  g_memset_address = p;
  g_memset_value = v;
  g_memset_count = n;
  g_memset_stream = s;
  return CUDA_SUCCESS;
}
CUresult fake_htod(CUdeviceptr, const void* src, size_t bytes, CUstream) {
  REQUIRE(bytes == 8);
  std::memcpy(&g_copied, src, 8);
  return CUDA_SUCCESS;
}
CUresult fake_host_func(CUstream, CUhostFn fn, void* data) {
  g_host_fn = fn;
  g_host_data = data;
  return CUDA_SUCCESS;
}
// The driver's refusal of managed memory; anything else is accepted.
CUresult fake_write32(CUstream, CUdeviceptr, cuuint32_t, unsigned) {
  ++g_real_calls;
  return g_managed ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult fake_write64(CUstream, CUdeviceptr, cuuint64_t, unsigned) {
  ++g_real_calls;
  return g_managed ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult fake_batch_mem_op(CUstream, unsigned count, CUstreamBatchMemOpParams* params, unsigned) {
  ++g_real_calls;
  for (unsigned i = 0; i < count; ++i) {
    const CUdeviceptr a = params[i].operation == CU_STREAM_MEM_OP_BARRIER ? 0 : params[i].writeValue.address;
    if (g_managed && a >= buffer_address() && a < buffer_address() + sizeof g_buffer) return CUDA_ERROR_INVALID_VALUE;
  }
  g_batch_ops_passed += count;
  return CUDA_SUCCESS;
}
CUresult fake_batch_v2(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, CUstream) {
  ++g_real_calls;
  return g_real_result;
}
CUresult fake_batch_3d(size_t, CUDA_MEMCPY3D_BATCH_OP*, size_t* failIdx, unsigned long long, CUstream) {
  ++g_real_calls;
  if (failIdx != nullptr) *failIdx = 0;
  return CUDA_SUCCESS;
}
CUresult fake_prefetch(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream) {
  ++g_real_calls;
  return CUDA_SUCCESS;
}
CUresult fake_advise(CUdeviceptr, size_t, CUmem_advise, CUdevice) {
  ++g_real_calls;
  return CUDA_SUCCESS;
}

DriverFunctions fake_functions() {
  DriverFunctions functions;
  functions.pointer_get_attribute = fake_pointer_attribute;
  functions.memset_d32_async = fake_memset;
  functions.memcpy_htod_async = fake_htod;
  functions.launch_host_func = fake_host_func;
  return functions;
}

struct Fixture {
  CollectingSink::Shared shared;
  Recorder recorder{default_options(), std::make_unique<CollectingSink>(shared)};
  DriverDevice device{fake_functions()};
  ContextRuntimes runtimes{memtool::engine::StrategyOptions{}, device, recorder.observer(), fake_current_context};
  Fixture() {
    g_managed = false;
    g_real_calls = 0;
    g_real_result = CUDA_SUCCESS;
    g_memset_address = 0;
    g_memset_stream = nullptr;
    g_host_fn = nullptr;
    g_batch_ops_passed = 0;
    std::memset(g_buffer, 0, sizeof g_buffer);
    runtimes.set_driver(&device);
    // The program allocated the buffer as device memory.
    recorder.on_alloc(buffer_address(), sizeof g_buffer, MemoryKind::device, 0);
  }
  template <class F>
  Call<F> call(F real, Variant variant = Variant::plain) {
    return Call<F>{real, variant, recorder, runtimes};
  }
  [[nodiscard]] std::size_t events() const { return shared.events.size(); }
};

}  // namespace

TEST_CASE("every copy of a batch is recorded, each with its extent", "[interpose][handlers][access]") {
  Fixture f;
  CUdeviceptr dsts[2] = {buffer_address(), buffer_address() + 64};
  CUdeviceptr srcs[2] = {0x5000, buffer_address() + 128};
  size_t sizes[2] = {16, 32};
  CUmemcpyAttributes attrs[1]{};
  size_t idxs[1] = {0};
  const auto s = reinterpret_cast<CUstream>(0x55);
  g_real_result = CUDA_ERROR_INVALID_VALUE;  // whatever the driver says is the answer
  CHECK(handle_cuMemcpyBatchAsync_v2(f.call<fn::cuMemcpyBatchAsync_v2>(fake_batch_v2), dsts, srcs, sizes, 2, attrs,
                                     idxs, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_real_calls == 1);
  REQUIRE(f.events() == 3);  // the allocation, then the two copies
  const auto& first = std::get<CopyEvent>(f.shared.events[1]);
  const auto& second = std::get<CopyEvent>(f.shared.events[2]);
  CHECK(first.dst == dsts[0]);
  CHECK(first.src == 0x5000);
  CHECK(first.bytes == 16);
  CHECK(first.kind == memtool::trace::CopyKind::h2d);
  CHECK(first.async);
  CHECK(first.stream.value() == 0x55);
  CHECK(second.kind == memtool::trace::CopyKind::d2d);
  CHECK(second.bytes == 32);
  // Arrays the driver would refuse are not read.
  CHECK(handle_cuMemcpyBatchAsync_v2(f.call<fn::cuMemcpyBatchAsync_v2>(fake_batch_v2), nullptr, srcs, sizes, 2, attrs,
                                     idxs, 1, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(f.events() == 3);
}

TEST_CASE("a 3D batch records its pointer operands, volume and per-thread stream", "[interpose][handlers][access]") {
  Fixture f;
  CUDA_MEMCPY3D_BATCH_OP op{};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.src.op.ptr.ptr = buffer_address();
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.dst.op.ptr.ptr = buffer_address() + 2048;
  op.extent = {16, 4, 2};
  size_t fail = 7;
  CHECK(handle_cuMemcpy3DBatchAsync(f.call<fn::cuMemcpy3DBatchAsync>(fake_batch_3d, Variant::ptsz), 1, &op, &fail, 0,
                                    nullptr) == CUDA_SUCCESS);
  CHECK(fail == 0);  // the real call's failIdx reaches the caller
  REQUIRE(f.events() == 2);
  const auto& event = std::get<CopyEvent>(f.shared.events[1]);
  CHECK(event.bytes == 16 * 4 * 2);
  CHECK(event.src == buffer_address());
  CHECK(event.stream.value() == own_per_thread_stream());  // the twin's stream 0: this thread's own
}

TEST_CASE("a written value is a store of its word; a wait records no trace event", "[interpose][handlers][access]") {
  Fixture f;
  CHECK(handle_cuStreamWriteValue64_v2(f.call<fn::cuStreamWriteValue64_v2>(fake_write64), nullptr, buffer_address() + 8,
                                       5, 0) == CUDA_SUCCESS);
  REQUIRE(f.events() == 2);
  CHECK(std::get<MemsetEvent>(f.shared.events[1]).dst == buffer_address() + 8);
  CHECK(std::get<MemsetEvent>(f.shared.events[1]).bytes == 8);
  CHECK(handle_cuStreamWaitValue32_v2(f.call<fn::cuStreamWaitValue32_v2>(fake_write32), nullptr, buffer_address(), 1,
                                      CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
  CHECK(f.events() == 2);
  CHECK(g_real_calls == 2);
  CHECK(g_memset_address == 0);  // device memory: no stand-in
}

TEST_CASE("a value written into memtool's managed memory is a memset or a copy instead",
          "[interpose][handlers][access]") {
  Fixture f;
  g_managed = true;
  CHECK(handle_cuStreamWriteValue32(f.call<fn::cuStreamWriteValue32>(fake_write32, Variant::ptsz), nullptr,
                                    buffer_address() + 4, 9, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) == CUDA_SUCCESS);
  CHECK(g_memset_address == buffer_address() + 4);
  CHECK(g_memset_value == 9);
  CHECK(g_memset_count == 1);
  CHECK(g_memset_stream == CU_STREAM_PER_THREAD);  // the per-thread twin's stream 0
  CHECK(handle_cuStreamWriteValue64_v2(f.call<fn::cuStreamWriteValue64_v2>(fake_write64), nullptr, buffer_address() + 8,
                                       0x1234567890ull, 0) == CUDA_SUCCESS);
  CHECK(g_copied == 0x1234567890ull);
  // What the driver refuses anyway stays refused: a flag the v2 API does not take, a misaligned word.
  g_memset_address = 0;
  CHECK(handle_cuStreamWriteValue32_v2(f.call<fn::cuStreamWriteValue32_v2>(fake_write32), nullptr, buffer_address(), 1,
                                       CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) == CUDA_ERROR_INVALID_VALUE);
  CHECK(handle_cuStreamWriteValue32_v2(f.call<fn::cuStreamWriteValue32_v2>(fake_write32), nullptr, buffer_address() + 2,
                                       1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_memset_address == 0);
  // Memory memtool does not track is the driver's answer alone.
  CHECK(handle_cuStreamWriteValue32_v2(f.call<fn::cuStreamWriteValue32_v2>(fake_write32), nullptr, 0x10, 1, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(g_memset_address == 0);
}

TEST_CASE("a wait on memtool's managed memory is a host function that waits for the condition",
          "[interpose][handlers][access]") {
  Fixture f;
  g_managed = true;
  CHECK(handle_cuStreamWaitValue32_v2(f.call<fn::cuStreamWaitValue32_v2>(fake_write32), nullptr, buffer_address() + 4,
                                      3, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
  REQUIRE(g_host_fn != nullptr);
  std::atomic<bool> returned{false};
  std::thread stream_worker([&] {
    g_host_fn(g_host_data);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(returned.load());  // 0 >= 3 is false: still waiting
  __atomic_store_n(&g_buffer[1], 2u, __ATOMIC_RELEASE);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(returned.load());
  __atomic_store_n(&g_buffer[1], 3u, __ATOMIC_RELEASE);
  stream_worker.join();
  CHECK(returned.load());
  // A condition the driver does not know stays refused.
  g_host_fn = nullptr;
  CHECK(handle_cuStreamWaitValue32_v2(f.call<fn::cuStreamWaitValue32_v2>(fake_write32), nullptr, buffer_address(), 3,
                                      0x7) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_host_fn == nullptr);
}

TEST_CASE("a batch of memory operations: memtool's managed words stood in for, the rest passed one by one",
          "[interpose][handlers][access]") {
  Fixture f;
  g_managed = true;
  CUstreamBatchMemOpParams ops[3]{};
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = 0x9000;  // not memtool's: the driver's
  ops[0].writeValue.value = 1;
  ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[1].writeValue.address = buffer_address() + 12;
  ops[1].writeValue.value = 4;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  CHECK(handle_cuStreamBatchMemOp_v2(f.call<fn::cuStreamBatchMemOp_v2>(fake_batch_mem_op), nullptr, 3, ops, 0) ==
        CUDA_SUCCESS);
  CHECK(g_batch_ops_passed == 2);  // the untracked write and the barrier, each alone
  CHECK(g_memset_address == buffer_address() + 12);
  CHECK(g_memset_value == 4);
  // The first generation has no barrier: refused as the driver would.
  CHECK(handle_cuStreamBatchMemOp(f.call<fn::cuStreamBatchMemOp>(fake_batch_mem_op), nullptr, 3, ops, 0) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("a prefetch or advice never reaches memtool's managed memory", "[interpose][handlers][access]") {
  Fixture f;
  CUmemLocation to{};
  to.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CHECK(handle_cuMemPrefetchAsync_v2(f.call<fn::cuMemPrefetchAsync_v2>(fake_prefetch), buffer_address(), 64, to, 0,
                                     nullptr) == CUDA_SUCCESS);
  CHECK(g_real_calls == 1);  // device memory as far as the driver knows: its answer
  g_managed = true;
  CHECK(handle_cuMemPrefetchAsync_v2(f.call<fn::cuMemPrefetchAsync_v2>(fake_prefetch), buffer_address(), 64, to, 0,
                                     nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(handle_cuMemAdvise(f.call<fn::cuMemAdvise>(fake_advise), buffer_address(), 64,
                           CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(g_real_calls == 1);
  // The program's own managed memory is the driver's to move.
  f.recorder.on_alloc(0x700000, 4096, MemoryKind::managed, 0);
  CHECK(handle_cuMemAdvise(f.call<fn::cuMemAdvise>(fake_advise), 0x700000, 64, CU_MEM_ADVISE_SET_READ_MOSTLY, 0) ==
        CUDA_SUCCESS);
  CHECK(g_real_calls == 2);
}

// --- grants (handlers_pointers.cpp) -------------------------------------------------------------

namespace {

const auto kPool0 = reinterpret_cast<CUmemoryPool>(0x100);
const auto kPool1 = reinterpret_cast<CUmemoryPool>(0x101);
std::size_t g_access_count = 0;  // descriptors of memtool's last cuMemSetAccess
int g_access_last_device = -1;

CUresult fake_pool_set_access(CUmemoryPool, const CUmemAccessDesc*, size_t) { return CUDA_SUCCESS; }
CUresult fake_device_count(int* n) {
  *n = 2;
  return CUDA_SUCCESS;
}
CUresult fake_default_pool(CUmemoryPool* pool, CUdevice d) {
  *pool = d == 0 ? kPool0 : kPool1;
  return CUDA_SUCCESS;
}
CUresult fake_ctx_device(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fake_mem_map(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  return CUDA_SUCCESS;
}
CUresult fake_mem_set_access(CUdeviceptr, size_t, const CUmemAccessDesc* desc, size_t count) {
  g_access_count = count;
  g_access_last_device = desc[count - 1].location.id;
  return CUDA_SUCCESS;
}

DriverFunctions grant_functions() {
  DriverFunctions functions;
  functions.device_count = fake_device_count;
  functions.default_mem_pool = fake_default_pool;
  functions.ctx_get_device = fake_ctx_device;
  functions.mem_map = fake_mem_map;
  functions.mem_set_access = fake_mem_set_access;
  return functions;
}

}  // namespace

TEST_CASE("a pool's grant to a peer reaches what memtool maps on the pool's device", "[interpose][handlers][access]") {
  CollectingSink::Shared shared;
  Recorder recorder{default_options(), std::make_unique<CollectingSink>(shared)};
  DriverDevice device{grant_functions()};
  ContextRuntimes runtimes{memtool::engine::StrategyOptions{}, device, recorder.observer(), fake_current_context};
  runtimes.set_driver(&device);
  const Call<fn::cuMemPoolSetAccess> call{fake_pool_set_access, Variant::plain, recorder, runtimes};
  REQUIRE(device.map(0x200000, 0x200000, 1) == memtool::engine::kSuccess);
  CHECK(g_access_count == 1);  // device 0 alone
  CUmemAccessDesc grant{};
  grant.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  grant.location.id = 1;
  grant.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  CHECK(handle_cuMemPoolSetAccess(call, kPool1, &grant, 1) == CUDA_SUCCESS);  // device 1's pool: not device 0's
  REQUIRE(device.map(0x400000, 0x200000, 1) == memtool::engine::kSuccess);
  CHECK(g_access_count == 1);
  CHECK(handle_cuMemPoolSetAccess(call, kPool0, &grant, 1) == CUDA_SUCCESS);
  CHECK(g_access_count == 2);  // the range mapped before the grant got it too
  CHECK(g_access_last_device == 1);
  REQUIRE(device.map(0x600000, 0x200000, 1) == memtool::engine::kSuccess);
  CHECK(g_access_count == 2);
  // Only the pool strategy keeps such a device's cuMemAllocAsync in the program's pool.
  CHECK_FALSE(runtimes.keeps_program_pool(0));
  memtool::engine::StrategyOptions pool;
  pool.name = "pool";
  ContextRuntimes pooled{pool, device, recorder.observer(), fake_current_context};
  CHECK_FALSE(pooled.keeps_program_pool(0));
  pooled.pool_shared(0);
  CHECK(pooled.keeps_program_pool(0));
  CHECK_FALSE(pooled.keeps_program_pool(1));
}
