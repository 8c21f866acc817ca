// Resources and adaptors, in the spirit of rmm's memory resources: a strategy is a stack of
// them (strategy.hpp). A resource serves the program's device allocations — from the device
// (DeviceResource), from a planned pool (PlannedPool), from a simulated allocator (the
// baselines of `memtool simulate`); an adaptor wraps an upstream resource and adds one thing —
// planning, swapping, a cache, statistics, a budget limit (FailOpen holds two stacks, a primary
// it forwards to and a fallback). The handlers of libmemtool.so only ever talk to the top of
// the stack, through the Runtime; they never know which strategy runs.
//
// What a resource must implement is small: name, allocate and deallocate. The rest is
// optional, grouped by concern, each member with a default that is right for a resource that
// takes no part in it (a new leaf resource is those three functions):
//  - observing work (wants_accesses, before_item, on_host_sync): by default not wanted, nothing
//    done;
//  - observing iterations (wants_windows, on_boundary): by default no window, nothing done;
//  - reporting (memory_use, summarize, extent_of): by default nothing held, nothing to add,
//    no sub-allocated buffers;
//  - lifecycle (pin_for_export, reclaim, set_graph_memory, shutdown): by default nothing served
//    to pin, nothing to give back, no graph memory counted, nothing to stop.
// An Adaptor forwards every one of them to its upstream, so a hook reaches the bottom of any
// stack (tests/unit/engine/test_forwarding.cpp checks each adaptor); one that adds to a member
// calls Adaptor's too.
//
// Contract:
//  - allocate writes *out only on success and returns the driver's status (or
//    kOutOfMemory where a resource refuses memory, as the driver would);
//  - deallocate of a pointer a resource did not hand out itself goes to its upstream, and at the
//    bottom to the device, whose status is returned unchanged;
//  - before_item is called before one launch, copy or memset is queued on its stream, with the
//    buffers it touches (launch arguments, copy and memset ranges) and what the interposer knows
//    of those it may reach besides (pointer tables, DESIGN.md §5): a resource that reuses memory
//    across streams orders the stream after the memory's earlier users there (DESIGN.md
//    invariant 2); before_work and before_access are the same for an item of bare buffers;
//  - on_boundary is called at each iteration boundary the observer found, with the last
//    complete iteration's window when the stack asked for windows;
//  - all members may be called from many threads; a resource serialises what it shares.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "memtool/engine/device.hpp"
#include "memtool/engine/summary.hpp"
#include "memtool/engine/window.hpp"

namespace memtool::engine {

struct AllocationRequest {
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;  // device: cuMemAlloc; async: cuMemAllocAsync
  StreamId stream = 0;                   // async: the stream the allocation is ordered on
  std::uint64_t memory_pool = 0;         // cuMemAllocFromPoolAsync: the program's pool (0: none)
};

// One launch, copy or memset about to be queued, as the interposer saw it (DESIGN.md §5, §9).
struct WorkItem {
  StreamId stream = 0;
  // Its arguments point into these (bases), and so do the pointer tables among them whose
  // contents memtool read (an upload's host bytes): it reads or writes them.
  std::span<const DevicePtr> touched;
  // It may reach these too (a table a kernel wrote may hold their addresses): nothing may move
  // them while it runs, but it may not use them at all.
  std::span<const DevicePtr> reached;
  // Their addresses went where memtool cannot follow them (device memory it does not track, a
  // module's global): any later work may reach them, so they never move again.
  std::span<const DevicePtr> escaped;
  // It may reach any buffer: it reads memory memtool cannot follow (host-mapped memory the host
  // writes directly, an upload it could not read) or has no pointer argument at all (it can only
  // reach what an earlier launch left in a device global).
  bool reaches_all = false;
  std::string_view kernel;  // a launch's kernel name; empty for a copy or memset
};

// An iteration boundary: the first event of an iteration is the next one.
struct Boundary {
  std::uint64_t tick = 0;
  std::uint64_t period = 0;                       // ticks per iteration
  bool from_marks = false;                        // memtool_iteration_mark() / MEMTOOL_ITERATION_KERNEL
  std::shared_ptr<const IterationWindow> window;  // the last complete iteration, if asked for
};

struct MemoryUse {
  std::uint64_t reserved = 0;  // device bytes held for the program (pools, real allocations)
  // Bytes of the program's live buffers: among `reserved`, but for a swapper's buffers held off the
  // device, which count here too (and in off_device). cuMemGetInfo's free is reserved less in_use,
  // its total grows by off_device: counted as device bytes only, the device memory of a buffer
  // still leaving (and a footprint's rounding) showed as free, and free + live passed the total
  // (PyTorch's cudaMallocAsync assertion, apps.frameworks.pool_step_train_over_device).
  std::uint64_t in_use = 0;
  std::uint64_t pool_reserved = 0;  // of `reserved`, what pools hold (the rest: real allocations)
  std::uint64_t off_device = 0;     // bytes of the program's live buffers held off the device (swapped out)
};

// A sub-allocated buffer's own extent (pointer attribute queries answer with it).
struct BufferExtent {
  DevicePtr base = 0;
  std::uint64_t size = 0;
  std::uint64_t id = 0;  // unique among the buffers this resource handed out
};

// What exporting a buffer needs (cuIpcGetMemHandle, cuMemRetainAllocationHandle,
// cuMemGetHandleForAddressRange, cuMemPoolExportPointer): the resource that serves it has pinned
// it by then (never moved again, its memory not given to another buffer while it lives, and its
// allocation the driver's own from the next iteration on).
enum class ExportPin : std::uint8_t {
  not_served,    // not a buffer of this resource's: the driver's own, exported as it is
  in_place,      // ordinary device memory (cuMemAlloc), possibly a piece of a larger allocation
  mapped,        // one physical allocation (VMM) mapped whole at the buffer's address
  unexportable,  // memory no export can name (managed memory): the export must fail
};

// How a resource tells the observer what it learned about the iteration.
class PeriodFeedback {
 public:
  virtual ~PeriodFeedback() = default;
  // A plan of this period missed from its first iteration on: not the program's iteration.
  virtual void period_wrong(std::uint64_t period) = 0;
  // A plan that served whole iterations stopped matching: the program changed; look again.
  virtual void program_changed() = 0;
};

class Resource {
 public:
  virtual ~Resource() = default;

  // --- What every resource does ------------------------------------------------------------
  [[nodiscard]] virtual std::string_view name() const = 0;
  virtual Status allocate(const AllocationRequest& request, DevicePtr* out) = 0;
  virtual Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) = 0;

  // --- Observing the program's work (optional) ---------------------------------------------
  // Whether before_item matters to this stack (the handlers skip it otherwise).
  [[nodiscard]] virtual bool wants_accesses() const { return false; }
  // One launch, copy or memset is about to be queued (see the contract): the unit a swapper
  // counts time in.
  virtual void before_item(const WorkItem& item) { (void)item; }
  // The same for work that touches these buffers (their bases) and reaches nothing else.
  void before_work(std::span<const DevicePtr> bases, StreamId stream) {
    WorkItem item;
    item.stream = stream;
    item.touched = bases;
    before_item(item);
  }
  void before_access(DevicePtr base, StreamId stream) { before_work(std::span<const DevicePtr>(&base, 1), stream); }
  // The program waited on the host for the GPU in a synchronisation call (cuCtxSynchronize,
  // cuStreamSynchronize: `stream`; cuEventSynchronize: 0), which took `waited_ns`; called after
  // it returned, only where wants_accesses.
  virtual void on_host_sync(StreamId stream, std::uint64_t waited_ns) {
    (void)stream;
    (void)waited_ns;
  }

  // --- Observing iterations (optional) -----------------------------------------------------
  // Whether the observer should cut a window at boundaries for this stack.
  [[nodiscard]] virtual bool wants_windows() const { return false; }
  virtual void on_boundary(const Boundary& boundary) { (void)boundary; }

  // --- Reporting (optional) ----------------------------------------------------------------
  // The device bytes held for the program. A resource that holds memory of its own must say
  // so: a budget above it counts only what this reports.
  [[nodiscard]] virtual MemoryUse memory_use() const { return {}; }
  // Adds what this resource did to the summary.
  virtual void summarize(Summary& summary) const { (void)summary; }
  // A buffer this resource handed out as a piece of a larger allocation: its own extent.
  [[nodiscard]] virtual std::optional<BufferExtent> extent_of(DevicePtr ptr) const {
    (void)ptr;
    return std::nullopt;
  }

  // --- Lifecycle and memory pressure (optional) --------------------------------------------
  // The program exports the buffer holding `ptr`: pin it (see ExportPin) and say how its
  // memory can be named.
  virtual ExportPin pin_for_export(DevicePtr ptr) {
    (void)ptr;
    return ExportPin::not_served;
  }
  // Memory is short: give back reserved memory no live buffer uses; returns the bytes given back.
  virtual std::uint64_t reclaim() { return 0; }
  // Room is being made under a budget: the driver's stream-ordered pools this resource allocates
  // from give back what they keep after frees the GPU has reached (cuMemPoolTrimTo: no wait, no
  // stream touched). `beyond_threshold`: only what exceeds each pool's release threshold, which the
  // driver would release at the next synchronisation anyway; `all`: also what the program asked a
  // pool to keep (a threshold it raised), for when the budget cannot be held otherwise;
  // `all_after_frees`: `all`, once the host has waited for the GPU to reach the stream-ordered
  // frees into those pools (their memory is the pool's only from then on), where the host may wait
  // (no stream waits for a value), for bytes needed now. Returns the bytes given back.
  enum class PoolTrim : std::uint8_t { beyond_threshold, all, all_after_frees };
  virtual std::uint64_t trim_pools(PoolTrim how) {
    (void)how;
    return 0;
  }
  // The most new device memory serving `request` now could take (0: it fits in memory already
  // held), so that a budget can make room before the driver is asked, not after. Never below
  // the truth: a cache that may carve a segment says the segment.
  [[nodiscard]] virtual std::uint64_t growth_of(const AllocationRequest& request) const { return request.size; }
  // The device bytes the driver holds for the program's CUDA graphs now (graph memory: the
  // allocations of their mem-alloc nodes, never served, moved or reused by a resource). They
  // count against a budget like everything else on the device: the resource at the bottom of a
  // stack adds them to its memory_use().reserved, and a resource that keeps a budget makes room.
  virtual void set_graph_memory(std::uint64_t bytes) { (void)bytes; }
  // The context is ending, or the process: stop serving new allocations and join background
  // work. With `release_memory`, give idle reserved memory back now (at a context's end, while
  // it can still be freed); without (at exit: the driver may be half gone), only stop.
  virtual void shutdown(bool release_memory) { (void)release_memory; }
};

// Forwards everything to its upstream; adaptors override what they add, and call Adaptor's
// member from their own so that the upstream still hears of it.
class Adaptor : public Resource {
 public:
  explicit Adaptor(std::unique_ptr<Resource> upstream) : upstream_(std::move(upstream)) {}

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    return upstream_->allocate(request, out);
  }
  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    return upstream_->deallocate(ptr, kind, stream);
  }

  [[nodiscard]] bool wants_accesses() const override { return upstream_->wants_accesses(); }
  void before_item(const WorkItem& item) override { upstream_->before_item(item); }
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) override { upstream_->on_host_sync(stream, waited_ns); }

  [[nodiscard]] bool wants_windows() const override { return upstream_->wants_windows(); }
  void on_boundary(const Boundary& boundary) override { upstream_->on_boundary(boundary); }

  [[nodiscard]] MemoryUse memory_use() const override { return upstream_->memory_use(); }
  void summarize(Summary& summary) const override { upstream_->summarize(summary); }
  [[nodiscard]] std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    return upstream_->extent_of(ptr);
  }

  ExportPin pin_for_export(DevicePtr ptr) override { return upstream_->pin_for_export(ptr); }
  std::uint64_t reclaim() override { return upstream_->reclaim(); }
  std::uint64_t trim_pools(PoolTrim how) override { return upstream_->trim_pools(how); }
  [[nodiscard]] std::uint64_t growth_of(const AllocationRequest& request) const override {
    return upstream_->growth_of(request);
  }
  void set_graph_memory(std::uint64_t bytes) override { upstream_->set_graph_memory(bytes); }
  void shutdown(bool release_memory) override { upstream_->shutdown(release_memory); }

 protected:
  Resource& upstream() const { return *upstream_; }
  // What the upstream reserves beyond the buffers it serves (graph memory, memory it caches):
  // an adaptor that counts its own buffers' bytes adds this to its reserved bytes.
  [[nodiscard]] std::uint64_t upstream_unused_bytes() const {
    const MemoryUse use = upstream_->memory_use();
    return use.reserved > use.in_use ? use.reserved - use.in_use : 0;
  }

 private:
  std::unique_ptr<Resource> upstream_;
};

}  // namespace memtool::engine
