// Every optional member of resource.hpp reaches the bottom of a stack through every kind of
// adaptor: a probe at the bottom records each call and answers with values of its own, and the
// top of the stack must hear those answers. An adaptor that forgot to forward one member (or
// answered for it without asking its upstream) fails here, for that member and that adaptor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "memtool/engine/baselines.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/engine/sim_device.hpp"

using namespace memtool::engine;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// The probe's answers, chosen so that no adaptor could make them up.
constexpr DevicePtr kProbeBuffer = 0x7e00'0000'0000;  // a buffer only the probe knows
constexpr std::uint64_t kProbeBufferId = 77;
constexpr std::uint64_t kProbeReclaims = 4096;
constexpr std::uint64_t kProbeTrims = 3 * MiB;
constexpr std::uint64_t kProbeLiveBytes = 1000;
constexpr std::uint64_t kProbeGrowth = 200;  // above the 64 B request asked about, below any cache's growth
constexpr std::uint64_t kGraphBytes = 3 * MiB;
constexpr StreamId kStream = 5;
constexpr std::uint64_t kBoundaryTick = 42;
constexpr std::uint64_t kSyncWaitNs = 1234;

// What reached the probe.
struct ProbeLog {
  int allocations = 0;
  std::vector<DevicePtr> frees;
  std::vector<StreamId> item_streams;
  std::vector<DevicePtr> touched;
  std::vector<DevicePtr> reached;
  std::vector<std::pair<StreamId, std::uint64_t>> syncs;  // stream, waited ns
  std::vector<std::uint64_t> boundaries;                  // ticks
  int summaries = 0;
  std::uint64_t graph_bytes = 0;
  int shutdowns = 0;
};

// A leaf resource that takes part in everything. Its allocations are addresses nothing reads.
class Probe final : public Resource {
 public:
  explicit Probe(ProbeLog& log) : log_(log) {}
  std::string_view name() const override { return "probe"; }
  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    ++log_.allocations;
    *out = next_;
    next_ += std::max(request.size, MiB);
    return kSuccess;
  }
  Status deallocate(DevicePtr ptr, MemoryKind, StreamId) override {
    log_.frees.push_back(ptr);
    return kSuccess;
  }
  bool wants_accesses() const override { return true; }
  void before_item(const WorkItem& item) override {
    log_.item_streams.push_back(item.stream);
    log_.touched.insert(log_.touched.end(), item.touched.begin(), item.touched.end());
    log_.reached.insert(log_.reached.end(), item.reached.begin(), item.reached.end());
  }
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) override { log_.syncs.emplace_back(stream, waited_ns); }
  bool wants_windows() const override { return true; }
  void on_boundary(const Boundary& boundary) override { log_.boundaries.push_back(boundary.tick); }
  MemoryUse memory_use() const override { return MemoryUse{kProbeLiveBytes + log_.graph_bytes, kProbeLiveBytes, 0, 0}; }
  void summarize(Summary&) const override { ++log_.summaries; }
  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    if (ptr < kProbeBuffer || ptr >= kProbeBuffer + MiB) return std::nullopt;
    return BufferExtent{kProbeBuffer, MiB, kProbeBufferId};
  }
  ExportPin pin_for_export(DevicePtr ptr) override {
    return ptr == kProbeBuffer ? ExportPin::mapped : ExportPin::not_served;
  }
  std::uint64_t reclaim() override { return kProbeReclaims; }
  std::uint64_t trim_pools(PoolTrim) override { return kProbeTrims; }
  std::uint64_t growth_of(const AllocationRequest&) const override { return kProbeGrowth; }
  void set_graph_memory(std::uint64_t bytes) override { log_.graph_bytes = bytes; }
  void shutdown(bool) override { ++log_.shutdowns; }

 private:
  ProbeLog& log_;
  DevicePtr next_ = 0x7f00'0000'0000;
};

PoolOptions inline_pool() {
  PoolOptions o;
  o.synchronous_planning = true;
  o.plan_time_limit_seconds = 0.02;
  return o;
}

std::unique_ptr<Resource> swap_over(SimDevice& d, std::unique_ptr<Resource> bottom) {
  SwapOptions o;
  o.budget_bytes = 0;  // nothing moves: every buffer stays the upstream's
  return make_swap(d, std::move(bottom), o);
}

// --- one factory per adaptor kind, and the strategies' stacks ---------------------------------
struct StatisticsOver {
  static std::unique_ptr<Resource> make(SimDevice&, std::unique_ptr<Resource> p) {
    return make_statistics(std::move(p));
  }
};
struct BudgetOver {
  static std::unique_ptr<Resource> make(SimDevice&, std::unique_ptr<Resource> p) {
    return make_budget_limit(std::move(p), 1024 * MiB);
  }
};
struct FailOpenOver {  // the probe as the primary
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return make_fail_open(std::move(p), make_device_resource(d));
  }
};
struct PlannedPoolOver {
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return make_planned_pool(d, std::move(p), inline_pool(), nullptr);
  }
};
struct SwapOver {
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return swap_over(d, std::move(p));
  }
};
struct PytorchOver {  // the block cache both baselines are
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return make_pytorch_caching(d, std::move(p));
  }
};
struct CnmemOver {
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return make_cnmem_like(d, std::move(p));
  }
};
struct PoolStrategyOver {  // strategy.cpp's pool stack, with a budget
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return BudgetOver::make(d, FailOpenOver::make(d, make_statistics(PlannedPoolOver::make(d, std::move(p)))));
  }
};
struct SwapStrategyOver {  // strategy.cpp's swap stack
  static std::unique_ptr<Resource> make(SimDevice& d, std::unique_ptr<Resource> p) {
    return FailOpenOver::make(d, make_statistics(swap_over(d, std::move(p))));
  }
};

template <class Over>
struct Stack {
  Stack() : top(Over::make(device, std::make_unique<Probe>(log))) {}
  ProbeLog log;
  SimDevice device{SimDevice::Options{256 * MiB}};
  std::unique_ptr<Resource> top;
};

}  // namespace

TEMPLATE_TEST_CASE("forwarding: every optional member reaches the bottom of the stack", "[engine][forwarding]",
                   StatisticsOver, BudgetOver, FailOpenOver, PlannedPoolOver, SwapOver, PytorchOver, CnmemOver,
                   PoolStrategyOver, SwapStrategyOver) {
  Stack<TestType> stack;
  Resource& top = *stack.top;
  const ProbeLog& log = stack.log;

  SECTION("allocations, and frees of what the adaptor did not hand out") {
    DevicePtr ptr = 0;
    REQUIRE(top.allocate(AllocationRequest{4096, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
    CHECK(log.allocations >= 1);
    CHECK(top.deallocate(kProbeBuffer, MemoryKind::device, 0) == kSuccess);
    CHECK(std::count(log.frees.begin(), log.frees.end(), kProbeBuffer) == 1);
  }

  SECTION("observing work: wanted, and each item whole") {
    CHECK(top.wants_accesses());
    const DevicePtr touched[] = {kProbeBuffer};
    const DevicePtr reached[] = {kProbeBuffer + 64};
    WorkItem item;
    item.stream = kStream;
    item.touched = touched;
    item.reached = reached;
    top.before_item(item);
    CHECK(std::count(log.item_streams.begin(), log.item_streams.end(), kStream) >= 1);
    CHECK(std::count(log.touched.begin(), log.touched.end(), kProbeBuffer) == 1);
    CHECK(std::count(log.reached.begin(), log.reached.end(), kProbeBuffer + 64) == 1);
    top.before_access(kProbeBuffer, kStream);  // the one-buffer form is an item too
    CHECK(std::count(log.touched.begin(), log.touched.end(), kProbeBuffer) == 2);
  }

  SECTION("observing work: the program's synchronisations, with their waits") {
    top.on_host_sync(kStream, kSyncWaitNs);
    CHECK(log.syncs == std::vector<std::pair<StreamId, std::uint64_t>>{{kStream, kSyncWaitNs}});
  }

  SECTION("observing iterations") {
    CHECK(top.wants_windows());
    Boundary boundary;
    boundary.tick = kBoundaryTick;
    top.on_boundary(boundary);
    CHECK(std::count(log.boundaries.begin(), log.boundaries.end(), kBoundaryTick) == 1);
  }

  SECTION("reporting") {
    Summary summary;
    top.summarize(summary);
    CHECK(log.summaries == 1);
    const std::optional<BufferExtent> extent = top.extent_of(kProbeBuffer + 100);
    REQUIRE(extent);
    CHECK(extent->base == kProbeBuffer);
    CHECK(extent->id == kProbeBufferId);
  }

  SECTION("the device memory a request would take") {
    // An adaptor passes the probe's answer up; a cache answers for the segment it would carve.
    CHECK(top.growth_of(AllocationRequest{64, MemoryKind::device, 0, 0}) >= kProbeGrowth);
  }

  SECTION("graph memory set at the top is counted in the top's memory use") {
    top.set_graph_memory(kGraphBytes);
    CHECK(log.graph_bytes == kGraphBytes);
    CHECK(top.memory_use().reserved >= kGraphBytes);
  }

  SECTION("lifecycle") {
    CHECK(top.pin_for_export(kProbeBuffer) == ExportPin::mapped);
    CHECK(top.reclaim() >= kProbeReclaims);
    CHECK(top.trim_pools(Resource::PoolTrim::beyond_threshold) >= kProbeTrims);
    top.shutdown(true);
    CHECK(log.shutdowns >= 1);
  }
}

// The defaults: a leaf that implements only what every resource must is a whole resource.
TEST_CASE("forwarding: a leaf of name, allocate and deallocate takes the documented defaults", "[engine][forwarding]") {
  class Minimal final : public Resource {
   public:
    std::string_view name() const override { return "minimal"; }
    Status allocate(const AllocationRequest&, DevicePtr* out) override {
      *out = 0x1000;
      return kSuccess;
    }
    Status deallocate(DevicePtr, MemoryKind, StreamId) override { return kSuccess; }
  };
  auto stack = make_statistics(std::make_unique<Minimal>());
  DevicePtr ptr = 0;
  REQUIRE(stack->allocate(AllocationRequest{64, MemoryKind::device, 0, 0}, &ptr) == kSuccess);
  CHECK(ptr == 0x1000);
  CHECK_FALSE(stack->wants_accesses());
  CHECK_FALSE(stack->wants_windows());
  CHECK(stack->memory_use().reserved == 0);
  CHECK_FALSE(stack->extent_of(ptr));
  CHECK(stack->pin_for_export(ptr) == ExportPin::not_served);
  CHECK(stack->reclaim() == 0);
  CHECK(stack->trim_pools(Resource::PoolTrim::all) == 0);
  CHECK(stack->growth_of(AllocationRequest{64, MemoryKind::device, 0, 0}) == 64);
  stack->before_access(ptr, 1);
  stack->on_host_sync(1, 10);
  stack->on_boundary(Boundary{});
  stack->set_graph_memory(MiB);
  stack->shutdown(true);
  CHECK(stack->deallocate(ptr, MemoryKind::device, 0) == kSuccess);
}
