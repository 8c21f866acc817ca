// Pool mode in the handlers, on a fake driver (a bump allocator that remembers every real call):
// once the iteration is planned, allocations come from the pool and pooled frees never reach the
// real cuMemFree; cuMemGetInfo counts the pool's unused part as free; after pool mode is
// disabled (fail-open) new allocations go to the driver while live pooled buffers still return
// to their pool.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/handlers.hpp"
#include "memtool/interpose/pool_mode.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;

namespace {

struct FakeDevice {
  CUdeviceptr next = 0x10000000;
  std::vector<std::pair<CUdeviceptr, size_t>> allocations;  // every real cuMemAlloc_v2
  std::vector<CUdeviceptr> frees;                          // every real cuMemFree_v2
  std::uintptr_t events = 0;
  std::size_t waits = 0;
};
FakeDevice* g_device = nullptr;

CUresult real_alloc(CUdeviceptr* dptr, size_t bytes) {
  *dptr = g_device->next;
  g_device->next += (bytes + 511) / 512 * 512 + 512;
  g_device->allocations.emplace_back(*dptr, bytes);
  return CUDA_SUCCESS;
}
CUresult real_free(CUdeviceptr ptr) {
  g_device->frees.push_back(ptr);
  return CUDA_SUCCESS;
}
CUresult event_create(CUevent* event, unsigned) {
  *event = reinterpret_cast<CUevent>(++g_device->events);
  return CUDA_SUCCESS;
}
CUresult event_record(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult event_query(CUevent) { return CUDA_SUCCESS; }
CUresult event_destroy(CUevent) { return CUDA_SUCCESS; }
CUresult stream_wait(CUstream, CUevent, unsigned) {
  ++g_device->waits;
  return CUDA_SUCCESS;
}
CUresult mem_get_info(size_t* free, size_t* total) {
  *free = 1000000;
  *total = 1100000;
  return CUDA_SUCCESS;
}

struct Fixture {
  FakeDevice device;
  CollectingSink::Shared shared;
  Recorder recorder{default_options(), std::make_unique<CollectingSink>(shared)};
  std::unique_ptr<PoolMode> pool;

  Fixture() {
    g_device = &device;
    DriverFunctions f;
    f.mem_alloc = real_alloc;
    f.mem_free = real_free;
    f.event_create = event_create;
    f.event_record = event_record;
    f.event_query = event_query;
    f.event_destroy = event_destroy;
    f.stream_wait_event = stream_wait;
    REQUIRE(f.complete());
    PoolModeSettings settings;
    settings.synchronous_planning = true;  // deterministic: the plan is ready at once
    pool = std::make_unique<PoolMode>(f, std::move(settings));
    recorder.set_driver_queries(fake_queries());
  }
  ~Fixture() { (void)pool->finish(); }

  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    REQUIRE(handle_cuMemAlloc_v2(Call<fn::cuMemAlloc_v2>{real_alloc, Variant::plain, recorder, pool.get()}, &p,
                                 bytes) == CUDA_SUCCESS);
    return p;
  }
  void free(CUdeviceptr p) {
    REQUIRE(handle_cuMemFree_v2(Call<fn::cuMemFree_v2>{real_free, Variant::plain, recorder, pool.get()}, p) ==
            CUDA_SUCCESS);
  }
  // One training iteration: overlapping temporaries, then an explicit boundary.
  std::vector<CUdeviceptr> iteration() {
    const CUdeviceptr a = alloc(1000);
    const CUdeviceptr b = alloc(2000);
    free(a);
    const CUdeviceptr c = alloc(3000);
    free(b);
    free(c);
    pool->mark_iteration();
    return {a, b, c};
  }
};

}  // namespace

TEST_CASE("pool mode serves a repeating iteration from the pool; pooled frees stay ours",
          "[interpose][pool]") {
  Fixture f;
  const CUdeviceptr weights = f.alloc(4096);  // persistent: passed through
  for (int i = 0; i < 6; ++i) (void)f.iteration();
  const std::size_t real_allocs = f.device.allocations.size();
  std::set<CUdeviceptr> handed_out;
  for (int i = 0; i < 6; ++i) {
    for (const CUdeviceptr p : f.iteration()) handed_out.insert(p);
  }
  const memtool::pool::Summary summary = f.pool->summary();
  CHECK(summary.iterations_planned >= 5);
  CHECK(summary.allocs_from_pool >= 15);
  CHECK(summary.misses == 0);
  CHECK(f.device.allocations.size() == real_allocs);  // no real allocation once served
  for (const CUdeviceptr p : f.device.frees) CHECK(handed_out.count(p) == 0);
  // The recorder saw the pooled addresses: they are in the index that launch scanning uses.
  CHECK(f.recorder.stats().allocations == 1 + 12 * 3);

  // cuMemGetInfo: nothing pooled is live now, so the whole pool counts as free (capped at total).
  size_t free_bytes = 0;
  size_t total = 0;
  REQUIRE(handle_cuMemGetInfo_v2(Call<fn::cuMemGetInfo_v2>{mem_get_info, Variant::plain, f.recorder, f.pool.get()},
                                 &free_bytes, &total) == CUDA_SUCCESS);
  CHECK(free_bytes == std::min<size_t>(1000000 + summary.pool_bytes, 1100000));
  f.free(weights);
  CHECK(f.device.frees.back() == weights);
}

TEST_CASE("pool mode fails open: new allocations pass through, live pooled buffers return to the pool",
          "[interpose][pool]") {
  Fixture f;
  for (int i = 0; i < 8; ++i) (void)f.iteration();
  REQUIRE(f.pool->summary().allocs_from_pool > 0);
  const CUdeviceptr pooled = f.alloc(1000);  // the plan's first entry: from the pool
  REQUIRE(f.pool->summary().allocs_from_pool > 0);
  const std::size_t real_allocs = f.device.allocations.size();
  f.pool->disable("test");
  CHECK_FALSE(f.pool->serving());
  const CUdeviceptr after = f.alloc(2000);
  CHECK(f.device.allocations.size() == real_allocs + 1);
  CHECK(f.device.allocations.back().first == after);
  const std::size_t real_frees = f.device.frees.size();
  const std::uint64_t pool_bytes = f.pool->summary().pool_bytes;
  f.free(pooled);
  // Returned to its pool; the pool, now drained and no longer serving, goes back to the driver
  // as the one allocation it is (never the buffer's interior address).
  REQUIRE(f.device.frees.size() == real_frees + 1);
  const CUdeviceptr released = f.device.frees.back();
  const auto real = std::find_if(f.device.allocations.begin(), f.device.allocations.end(),
                                 [&](const auto& a) { return a.first == released; });
  REQUIRE(real != f.device.allocations.end());
  CHECK(real->second == pool_bytes);
  f.free(after);
  CHECK(f.device.frees.back() == after);
}
