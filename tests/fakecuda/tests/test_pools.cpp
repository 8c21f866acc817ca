// Stream-ordered memory pools: default and current pools per device, created pools and their
// properties, every attribute, what a pool keeps after a free (reserved, counted as used, reused
// per the reuse attributes) and when it lets go (synchronisation past the release threshold,
// cuMemPoolTrimTo, a device running short), maxSize.
#include "devices_fixture.hpp"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace fakecuda_test;

namespace {

CUmemPoolProps pool_props(int dev) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  return props;
}

cuuint64_t figure(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t value = 0;
  REQUIRE(cuMemPoolGetAttribute(pool, attr, &value) == CUDA_SUCCESS);
  return value;
}

cuuint64_t reserved(CUmemoryPool pool) { return figure(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); }
cuuint64_t used(CUmemoryPool pool) { return figure(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT); }

void set_threshold(CUmemoryPool pool, cuuint64_t bytes) {
  REQUIRE(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &bytes) == CUDA_SUCCESS);
}

void set_flag(CUmemoryPool pool, CUmemPool_attribute attr, int value) {
  REQUIRE(cuMemPoolSetAttribute(pool, attr, &value) == CUDA_SUCCESS);
}

size_t free_bytes() {
  size_t free = 0;
  size_t total = 0;
  REQUIRE(cuMemGetInfo(&free, &total) == CUDA_SUCCESS);
  return free;
}

// A pool of its own on `dev`, destroyed at the end of the scope.
class OwnPool {
 public:
  explicit OwnPool(int dev, std::size_t max_size = 0) {
    CUmemPoolProps props = pool_props(dev);
    props.maxSize = max_size;
    REQUIRE(cuMemPoolCreate(&pool_, &props) == CUDA_SUCCESS);
  }
  ~OwnPool() { cuMemPoolDestroy(pool_); }
  OwnPool(const OwnPool&) = delete;
  OwnPool& operator=(const OwnPool&) = delete;
  CUmemoryPool get() const { return pool_; }

 private:
  CUmemoryPool pool_ = nullptr;
};

class OwnStream {
 public:
  OwnStream() { REQUIRE(cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS); }
  ~OwnStream() { cuStreamDestroy(s_); }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  CUstream get() const { return s_; }

 private:
  CUstream s_ = nullptr;
};

}  // namespace

TEST_CASE("each device has a default pool, current until another is set", "[fakecuda][pools]") {
  two_devices_ready(1);
  CUmemoryPool default0 = nullptr;
  CUmemoryPool default1 = nullptr;
  CUmemoryPool current = nullptr;
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&default0, 0));
  CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&default1, 1));
  CHECK(default0 != default1);
  CU_REQUIRE_OK(cuDeviceGetMemPool(&current, 1));
  CHECK(current == default1);
  CU_CHECK_IS(cuDeviceGetDefaultMemPool(&current, 2), CUDA_ERROR_INVALID_DEVICE);

  CUmemoryPool created = nullptr;
  const CUmemPoolProps props = pool_props(1);
  CU_REQUIRE_OK(cuMemPoolCreate(&created, &props));
  CU_CHECK_IS(cuDeviceSetMemPool(0, created), CUDA_ERROR_INVALID_VALUE);  // not device 0's
  CU_REQUIRE_OK(cuDeviceSetMemPool(1, created));
  CU_REQUIRE_OK(cuDeviceGetMemPool(&current, 1));
  CHECK(current == created);
  // cuMemAllocAsync takes the current pool of the stream's device.
  OwnStream s;
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocAsync(&p, kMiB, s.get()));
  CUmemoryPool owner = nullptr;
  CU_REQUIRE_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
  CHECK(owner == created);
  // Destroying it with an allocation outstanding returns at once; the device's current pool is its
  // default again, and the allocation lives on until freed.
  const fakecuda_device_stats before = device_stats(1);
  CU_REQUIRE_OK(cuMemPoolDestroy(created));
  CU_REQUIRE_OK(cuDeviceGetMemPool(&current, 1));
  CHECK(current == default1);
  cuuint64_t value = 0;
  CU_CHECK_IS(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemPoolDestroy(created), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemPoolDestroy(default1), CUDA_ERROR_INVALID_VALUE);  // a default pool stays
  CU_REQUIRE_OK(cuMemsetD8Async(p, 1, kMiB, s.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(p, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CHECK(before.bytes_in_use - device_stats(1).bytes_in_use == kMiB);

  // A pool of device 1 serves a stream of device 0: the memory is device 1's.
  two_devices_ready(0);
  OwnStream s0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, kMiB, default1, s0.get()));
  int ordinal = -1;
  CU_REQUIRE_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  CHECK(ordinal == 1);
  CU_REQUIRE_OK(cuMemFreeAsync(p, s0.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s0.get()));

  // CUDA 13's location-and-type forms.
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = 1;
  CU_REQUIRE_OK(cuMemGetDefaultMemPool(&current, &where, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(current == default1);
  CU_REQUIRE_OK(cuMemGetMemPool(&current, &where, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(current == default1);
  CU_REQUIRE_OK(cuMemSetMemPool(&where, CU_MEM_ALLOCATION_TYPE_PINNED, default1));
  CU_CHECK_IS(cuMemGetDefaultMemPool(&current, &where, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_ERROR_NOT_SUPPORTED);
  where.type = CU_MEM_LOCATION_TYPE_HOST;
  CU_CHECK_IS(cuMemGetDefaultMemPool(&current, &where, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_CASE("cuMemPoolCreate checks the properties", "[fakecuda][pools]") {
  two_devices_ready(0);
  CUmemoryPool pool = nullptr;
  CU_CHECK_IS(cuMemPoolCreate(&pool, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUmemPoolProps props = pool_props(2);
  CU_CHECK_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_DEVICE);
  props = pool_props(0);
  props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
  CU_CHECK_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  props = pool_props(0);
  props.reserved[3] = 1;
  CU_CHECK_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  props = pool_props(0);
  props.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CU_CHECK_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
  props = pool_props(0);
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CU_CHECK_IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
  props = pool_props(0);
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CU_REQUIRE_OK(cuMemPoolCreate(&pool, &props));
  CU_REQUIRE_OK(cuMemPoolDestroy(pool));
}

TEST_CASE("every pool attribute reads and writes as documented", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
  for (const auto attr : {CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                          CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES}) {
    int value = -1;
    CU_REQUIRE_OK(cuMemPoolGetAttribute(pool.get(), attr, &value));
    CHECK(value == 1);  // enabled by default
    set_flag(pool.get(), attr, 0);
    CU_REQUIRE_OK(cuMemPoolGetAttribute(pool.get(), attr, &value));
    CHECK(value == 0);
    set_flag(pool.get(), attr, 1);
  }
  set_threshold(pool.get(), kMiB);
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == kMiB);
  cuuint64_t value = 5;
  CU_CHECK_IS(cuMemPoolSetAttribute(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value),
              CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemPoolSetAttribute(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH, &value), CUDA_ERROR_INVALID_VALUE);
  CU_CHECK_IS(cuMemPoolGetAttribute(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH, nullptr), CUDA_ERROR_INVALID_VALUE);

  CUdeviceptr big = 0;
  CUdeviceptr small = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&big, 3 * kMiB, pool.get(), s.get()));
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&small, kMiB, pool.get(), s.get()));
  CHECK(used(pool.get()) == 4 * kMiB);
  CHECK(reserved(pool.get()) == 4 * kMiB);
  CU_REQUIRE_OK(cuMemFreeAsync(big, s.get()));
  CHECK(used(pool.get()) == 4 * kMiB);  // the stream has not reached the free yet
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  // Freed, and past the 1 MiB threshold at the synchronisation: the 3 MiB went back.
  CHECK(used(pool.get()) == kMiB);
  CHECK(reserved(pool.get()) == kMiB);
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 4 * kMiB);
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 4 * kMiB);
  value = 0;
  CU_REQUIRE_OK(cuMemPoolSetAttribute(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH, &value));
  CU_REQUIRE_OK(cuMemPoolSetAttribute(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &value));
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_USED_MEM_HIGH) == kMiB);
  CHECK(figure(pool.get(), CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == kMiB);
  CU_REQUIRE_OK(cuMemFreeAsync(small, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
}

TEST_CASE("freed memory stays reserved up to the threshold, counted as used, and is reused", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  set_threshold(pool.get(), 64 * kMiB);
  const size_t baseline = free_bytes();
  CUdeviceptr first = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&first, 8 * kMiB, pool.get(), s.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(first, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CHECK(used(pool.get()) == 0);
  CHECK(reserved(pool.get()) == 8 * kMiB);
  CHECK(baseline - free_bytes() == 8 * kMiB);  // held by the pool: not free on the device
  CHECK(device_stats(1).pool_reserved_bytes >= 8 * kMiB);
  // The next allocation of the size reuses the block: the same memory, no new reservation.
  CUdeviceptr second = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&second, 8 * kMiB, pool.get(), s.get()));
  CHECK(second == first);
  CHECK(reserved(pool.get()) == 8 * kMiB);
  CHECK(used(pool.get()) == 8 * kMiB);
  CU_REQUIRE_OK(cuMemFreeAsync(second, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 0));
  CHECK(reserved(pool.get()) == 0);
  CHECK(free_bytes() == baseline);

  SECTION("a device pool at the default threshold gives it all back at the next synchronisation") {
    CUmemoryPool default1 = nullptr;
    CU_REQUIRE_OK(cuDeviceGetDefaultMemPool(&default1, 1));
    CUdeviceptr p = 0;
    CU_REQUIRE_OK(cuMemAllocAsync(&p, 8 * kMiB, s.get()));
    CHECK(baseline - free_bytes() == 8 * kMiB);
    CU_REQUIRE_OK(cuMemFreeAsync(p, s.get()));
    CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
    CHECK(free_bytes() == baseline);
    CHECK(reserved(default1) == 0);
  }
}

TEST_CASE("reuse across streams follows the reuse attributes", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream a;
  OwnStream b;
  set_threshold(pool.get(), 64 * kMiB);
  set_flag(pool.get(), CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
  set_flag(pool.get(), CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0);
  CUdeviceptr on_a = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&on_a, 2 * kMiB, pool.get(), a.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(on_a, a.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(a.get()));
  // Another stream may not take a block freed on `a` without a dependency it could see.
  CUdeviceptr on_b = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&on_b, 2 * kMiB, pool.get(), b.get()));
  CHECK(on_b != on_a);
  CHECK(reserved(pool.get()) == 4 * kMiB);
  // The freeing stream itself may: stream order makes it safe.
  CUdeviceptr again_a = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&again_a, 2 * kMiB, pool.get(), a.get()));
  CHECK(again_a == on_a);
  CU_REQUIRE_OK(cuMemFreeAsync(again_a, a.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(a.get()));
  // Opportunistic reuse of a completed free is allowed once enabled.
  set_flag(pool.get(), CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 1);
  CUdeviceptr second_b = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&second_b, 2 * kMiB, pool.get(), b.get()));
  CHECK(second_b == on_a);
  CHECK(reserved(pool.get()) == 4 * kMiB);
  CU_REQUIRE_OK(cuMemFreeAsync(on_b, b.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(second_b, b.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(b.get()));
}

TEST_CASE("cuMemPoolTrimTo keeps at least what it is asked to keep", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  set_threshold(pool.get(), 64 * kMiB);
  CUdeviceptr four = 0;
  CUdeviceptr two = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&four, 4 * kMiB, pool.get(), s.get()));
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&two, 2 * kMiB, pool.get(), s.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(four, s.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(two, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CHECK(reserved(pool.get()) == 6 * kMiB);
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 3 * kMiB));
  CHECK(reserved(pool.get()) >= 3 * kMiB);
  CHECK(reserved(pool.get()) < 6 * kMiB);
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 0));
  CHECK(reserved(pool.get()) == 0);
  CU_CHECK_IS(cuMemPoolTrimTo(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("maxSize bounds what a pool reserves", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1, 8 * kMiB);
  OwnStream s;
  set_threshold(pool.get(), 64 * kMiB);
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&a, 6 * kMiB, pool.get(), s.get()));
  CU_CHECK_IS(cuMemAllocFromPoolAsync(&b, 4 * kMiB, pool.get(), s.get()), CUDA_ERROR_OUT_OF_MEMORY);
  CU_REQUIRE_OK(cuMemFreeAsync(a, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  // The idle 6 MiB block is too big to serve 2.5 MiB (more than twice it), and the pool may not
  // grow past 8 MiB beside it: the idle block goes.
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&b, 5 * kMiB / 2, pool.get(), s.get()));
  CHECK(reserved(pool.get()) == 5 * kMiB / 2);
  CU_REQUIRE_OK(cuMemFreeAsync(b, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
}

TEST_CASE("a device running short takes back what its pools keep idle", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  set_threshold(pool.get(), 1ULL << 40);
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, 100 * kMiB, pool.get(), s.get()));
  CU_REQUIRE_OK(cuMemFreeAsync(p, s.get()));
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CHECK(reserved(pool.get()) == 100 * kMiB);
  // Device 1 has 128 MiB: this only fits once the pool lets go of its idle block.
  CUdeviceptr q = 0;
  CU_REQUIRE_OK(cuMemAlloc(&q, 100 * kMiB));
  CHECK(reserved(pool.get()) == 0);
  CU_REQUIRE_OK(cuMemFree(q));
}

// The driver's documentation of CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: a pool holding more than its
// threshold tries to release memory "on the next call to stream, event or context synchronize";
// cuMemPoolTrimTo: allocations "asynchronously freed but whose completion has not been observed
// on the host ... can count as outstanding" (here: a free not reached yet is outstanding).
TEST_CASE("a pool gives back beyond its threshold at each kind of synchronisation, and only then",
          "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  set_threshold(pool.get(), 4 * kMiB);
  // Frees `blocks` allocations of `bytes`, and waits until the stream reached the frees without
  // synchronising (a query is no synchronisation point).
  const auto freed_and_reached = [&](int blocks, size_t bytes) {
    std::vector<CUdeviceptr> ptrs(static_cast<size_t>(blocks));
    for (CUdeviceptr& p : ptrs) CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, bytes, pool.get(), s.get()));
    for (CUdeviceptr p : ptrs) CU_REQUIRE_OK(cuMemFreeAsync(p, s.get()));
    CUevent done = nullptr;
    CU_REQUIRE_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CU_REQUIRE_OK(cuEventRecord(done, s.get()));
    while (cuEventQuery(done) == CUDA_ERROR_NOT_READY) {}
    return done;
  };
  CUevent a = freed_and_reached(2, 8 * kMiB);
  CHECK(reserved(pool.get()) == 16 * kMiB);  // reached, kept until a synchronisation
  CHECK(used(pool.get()) == 0);

  SECTION("cuEventSynchronize") { CU_REQUIRE_OK(cuEventSynchronize(a)); }
  SECTION("cuCtxSynchronize") { CU_REQUIRE_OK(cuCtxSynchronize()); }
  SECTION("cuStreamSynchronize") { CU_REQUIRE_OK(cuStreamSynchronize(s.get())); }
  // Down to the threshold, keeping at least it (cuMemPoolTrimTo's rule): one block of two goes.
  CHECK(reserved(pool.get()) == 8 * kMiB);
  CU_REQUIRE_OK(cuEventDestroy(a));
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 0));
  CHECK(reserved(pool.get()) == 0);

  // At or under the threshold, a synchronisation keeps what the pool holds.
  set_threshold(pool.get(), 16 * kMiB);
  CUevent b = freed_and_reached(1, 8 * kMiB);
  CU_REQUIRE_OK(cuEventSynchronize(b));
  CHECK(reserved(pool.get()) == 8 * kMiB);
  CU_REQUIRE_OK(cuEventDestroy(b));
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 0));
  CHECK(reserved(pool.get()) == 0);
}

TEST_CASE("cuMemPoolTrimTo leaves a free the stream has not reached", "[fakecuda][pools]") {
  two_devices_ready(1);
  OwnPool pool(1);
  OwnStream s;
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAllocFromPoolAsync(&p, 2 * kMiB, pool.get(), s.get()));
  // The stream waits for an event nobody has recorded yet... then a free behind it.
  CUevent gate = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&gate, CU_EVENT_DISABLE_TIMING));
  OwnStream other;
  CU_REQUIRE_OK(cuLaunchHostFunc(
      other.get(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr));
  CU_REQUIRE_OK(cuEventRecord(gate, other.get()));
  CU_REQUIRE_OK(cuStreamWaitEvent(s.get(), gate, 0));
  CU_REQUIRE_OK(cuMemFreeAsync(p, s.get()));
  CU_REQUIRE_OK(cuMemPoolTrimTo(pool.get(), 0));
  CHECK(reserved(pool.get()) == 2 * kMiB);  // outstanding until the stream gets there
  CU_REQUIRE_OK(cuStreamSynchronize(s.get()));
  CHECK(reserved(pool.get()) == 0);  // the default threshold, 0: released at the synchronisation
  CU_REQUIRE_OK(cuEventDestroy(gate));
}
