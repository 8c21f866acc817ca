// SwapAdaptor: MEMTOOL_STRATEGY=swap (see resources.hpp). The policy — which buffer leaves the
// device and when it comes back — over a mover that does the moving (swap_mover.hpp: explicit
// copies with VMM, or UVM prefetches). The program's pointer never changes.
//  - Time is counted in work items (launches, copies, memsets: before_work), restarting at each
//    iteration boundary; buffers are known across iterations by their allocation's ordinal in
//    the iteration (a buffer allocated before the first boundary by its address).
//  - Swap-out (Belady's rule, with the last iteration as the oracle): when the device bytes
//    would pass the budget, the resident buffer whose next use lies farthest ahead leaves, on a
//    side stream, after an event recorded where it was last used. It leaves early: at each work
//    item, room is made for what the last iteration allocated in the next `lookahead` items,
//    so the copies are done before the memory is needed (swap/room.hpp).
//  - Swap-in: ahead, what the last iteration used within each buffer's learned lead; on demand,
//    in the consumer's stream order, or read where it is (swap/rule_swap_ins.hpp).
//  - A schedule planned on a learned iteration applies where the selector says
//    (swap/schedule_driver.hpp), with the rule as the safety net.
// A work item's buffers are issued by the real call only after before_work returns: until the
// same thread calls in again (its calls are sequential), they stay pinned on the device, so
// another thread's eviction cannot record its "last use" event before that work is queued; what
// it may reach besides them is kept still under it in explicit mode (swap/reach_guard.hpp).
// Every free of a swapped buffer is deferred until an event recorded at the free (or at the
// buffer's last use, for a synchronous free) has completed: polled, never a host wait.
// Every host wait for the GPU goes through HostWaits (host_waits.hpp): none is made while a stream
// waits for a value that work not yet issued may write; each site then has its stream-ordered
// alternative or its fallback (docs/swapping.md).
//
// The rule's choices are made by swapper's EvictionRule (memtool/swapper/eviction_rule.hpp), the
// one the simulator runs too. Each concern is a file under swap/ (docs/swapping.md lists them):
// the moves (swap_out.hpp, swap_in.hpp, frees.hpp, schedule_applier.hpp, over move_context.hpp)
// and the decisions (room.hpp, rule_swap_ins.hpp, reach_guard.hpp, schedule_driver.hpp); this
// file is the Resource adaptor that feeds them the program's calls, under one lock.
//
// Thread-safe: one mutex around the bookkeeping; driver calls are made under it (they are
// asynchronous enqueues, except allocation, mapping and free).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "host_waits.hpp"
#include "memtool/engine/log.hpp"
#include "memtool/engine/resources.hpp"
#include "memtool/swapper/eviction_rule.hpp"
#include "schedule_learner.hpp"
#include "spare_events.hpp"
#include "swap/buffer_names.hpp"
#include "swap/counters.hpp"
#include "swap/host_delay.hpp"
#include "swap/frees.hpp"
#include "swap/in_flight.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/reach_guard.hpp"
#include "swap/room.hpp"
#include "swap/rule_swap_ins.hpp"
#include "swap/schedule_applier.hpp"
#include "swap/schedule_driver.hpp"
#include "swap/selector.hpp"
#include "swap/side_streams.hpp"
#include "swap/stream_joins.hpp"
#include "swap/swap_in.hpp"
#include "swap/swap_out.hpp"
#include "swap/verify_hooks.hpp"
#include "swap_mover.hpp"
#include "swap_verify.hpp"

namespace memtool::engine {
namespace {

using detail::Birth;
using detail::BufferName;
using detail::HostDelay;
using detail::InFlight;
using detail::Room;
using detail::SwapBuffer;
using swapper::EvictionRule;

static_assert(detail::IterationOracle::kNever == swapper::kUnknownUse, "the oracle's unknown use is the rule's");
// extent_of's ids are unique across the stack: the swapper's carry this bit, which the small
// cache's (counted from 1) never reach; below bit 48, which context_runtimes.cpp keeps for its own.
constexpr std::uint64_t kSwapIdTag = std::uint64_t{1} << 47;

class SwapAdaptor final : public Adaptor {
 public:
  SwapAdaptor(Device& device, std::unique_ptr<Resource> upstream, SwapOptions options)
      : Adaptor(std::move(upstream)),
        device_(device),
        options_(std::move(options)),
        copies_on_program_stream_(options_.policy == "save-on-cpu"),
        trial_on_(options_.schedule_trial && options_.policy == "ours"),
        mover_(make_mover(device_, options_, spare_events_, host_waits_)),
        remaps_(mover_->mode() == "explicit"),
        verify_(options_.verify
                    ? std::make_unique<detail::VerifyHooks>(device_, spare_events_, host_waits_, *mover_, remaps_)
                    : nullptr),
        selector_(detail::SelectorOptions{options_.selector_margin, options_.selector_window, trial_on_}),
        learner_(device, timing_events_, options_.policy, options_.link_bytes_per_second, options_.problem_path) {
    learner_.meter().host_costs().set_stalls([this] { return host_waits_.stall_ns(); });
    learner_.set_rule_lookahead(options_.lookahead);
    learner_.set_plan_with_host_times(options_.host_times);
    if (verify_) {
      mover_->set_leave_check([this](DevicePtr ptr, SwapBuffer& b, DevicePtr host_copy) {
        if (verify_->leaving_landed(ptr, b, host_copy, moves_.checked_after())) return true;
        counters_.off_host(b.size);  // it stays on the device
        return false;
      });
    }
  }

  ~SwapAdaptor() override {
    std::lock_guard lock(mutex_);
    learner_.release();
    driver_.forget_lateness();
    for (auto& [ptr, b] : buffers_) timing_events_.give(b.timed_arrival);
    user_marks_.release();
    timing_events_.destroy_all(device_);
    spare_events_.destroy_all(device_);
  }

  std::string_view name() const override { return "swap"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    const bool candidate = (request.kind == MemoryKind::device || request.kind == MemoryKind::async) &&
                           request.memory_pool == 0 && request.size >= options_.min_bytes &&
                           !unavailable_.load(std::memory_order_relaxed);
    if (!candidate) return allocate_beside(request, out);
    std::unique_lock lock(mutex_);
    if (iteration_started_ && exported_.contains(next_ordinal_)) {
      // Exported last time (an IPC handle cannot name VMM memory): the driver's own memory.
      ++next_ordinal_;
      lock.unlock();
      return allocate_beside(request, out);
    }
    const HostDelay delay(host_waited_);  // ends before the lock does: the flag is the lock's
    const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
    queued_by_this_thread();
    collect_frees(false);
    if (iteration_started_) driver_.apply_outs(work_ - iteration_begin_);
    SwapBuffer b;
    b.size = request.size;
    room_.make(mover_->footprint_of(request.size), 0, Room::Mode::wait);
    DevicePtr ptr = 0;
    const Status status = room_.held(mover_->footprint_of(request.size)) ? place_held(b, request.stream, &ptr)
                                                                         : place(b, request.stream, &ptr);
    if (status == kNotSupported) {
      unavailable_.store(true, std::memory_order_relaxed);
      log(LogLevel::warn, fmt::format("memtool swap: the driver cannot back buffers for {} swapping (CUresult {}); "
                                      "swapping is off, allocations pass through",
                                      mover_->mode(), status));
    }
    if (status != kSuccess) {
      ++counters_.allocation_failures;
      // What the driver would have answered without memtool.
      room_.below_changed();
      return Adaptor::allocate(request, out);
    }
    if (iteration_started_) {
      names_.born(ptr, b, next_ordinal_++);
      if (learner_.logging()) learner_.log().allocated(b.ordinal, b.footprint, ptr, b.size);
      if (driver_.schedule() != nullptr && !driver_.schedule()->expects(b.ordinal, b.footprint))
        driver_.drop("an allocation differs from the plan's");
    }
    b.blank = true;  // nothing has written it yet
    b.id = kSwapIdTag | ++next_id_;
    b.streams.push_back(request.stream);
    b.last_work = work_;
    // Before the next item is issued (items count from 1 in an iteration, as the oracle's uses).
    if (iteration_started_) oracle_.allocated(work_ - iteration_begin_ + 1, b.footprint);
    buffers_.emplace(ptr, b);
    live_bytes_ += request.size;
    update_peaks();
    *out = ptr;
    return kSuccess;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    std::unique_lock lock(mutex_);
    queued_by_this_thread();
    const auto it = buffers_.find(ptr);
    if (it == buffers_.end()) {
      // Freed already, its free still under way: passed down, the driver would free (uvm:
      // managed memory) what the deferred free later frees again, maybe someone else's by then.
      if (frees_.holds(ptr)) return kInvalidValue;
      lock.unlock();
      room_.below_changed();
      if (kind != MemoryKind::device) return Adaptor::deallocate(ptr, kind, stream);
      // cuMemFree synchronises (below: the small cache waits for the program's streams, the
      // driver for the device), as it would without memtool: the program's synchronisation, for
      // the learned iteration's host times (a free memtool defers, below, is none).
      const std::uint64_t start = detail::HostCostMeter::steady_ns();
      const Status status = Adaptor::deallocate(ptr, kind, stream);
      const std::uint64_t waited = detail::HostCostMeter::steady_ns() - start;
      lock.lock();
      learner_.synced(waited);
      return status;
    }
    const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
    SwapBuffer& b = it->second;
    live_bytes_ -= b.size;
    forget_name(ptr, b);
    timing_events_.give(b.timed_arrival);
    if (b.blank && !b.leaving && !b.arrival_pending && !mover_->copies_blank()) {
      // No work has used it or may reach it (SwapBuffer::blank): none queued touches its memory,
      // which the explicit mover releases now, with no wait (the allocations a program frees
      // unused). Managed memory's free waits for the device: it keeps the ordered path.
      frees_.add_unordered(buffers_.extract(it));
      collect_frees(false);
      if (stopped_) mover_->trim();
      return kSuccess;
    }
    // Work queued before the free may still use the memory: a stream-ordered free on its
    // stream, a synchronous one (the driver would wait for the device) after every stream that
    // used it, joined on the frees' side stream, or on the swap-out stream while a copy out of
    // its own reads the memory (behind the copies out of other buffers its bytes would stay held
    // until those land; a stream-ordered free waits for that copy in the mover's free); and
    // after a copy back still under way (brought back ahead and freed before any use, it is in
    // no user's stream order: its memory released under it was written after the unmap, a fault
    // on fakecuda).
    StreamId after = stream;
    if (kind != MemoryKind::async &&
        (mover_->copy_out_reads(ptr, b) ? side_streams_.out(after) : side_streams_.frees(after)))
      join_all(b, after);
    EventId arrival = 0;
    if (b.arrival_pending) {
      (void)device_.stream_wait_event(after, b.arrival);
      arrival = b.arrival;
      b.arrival_pending = false;
    }
    bool ok = false;
    const EventId e = take_event(ok);
    if (ok && device_.record_event(e, after) == kSuccess) {
      if (arrival != 0) recycle(arrival);
      // The node moves whole: the mover's pointer to the buffer stays good.
      frees_.add_after(buffers_.extract(it), e);
      mover_->settle(false);
      if (stopped_) {  // no later call may come to collect it
        collect_frees(true);
        mover_->trim();
      }
      return kSuccess;
    }
    if (ok) recycle(e);
    // No event: only a host wait would order the free; the driver's free of managed memory does
    // that itself, explicit memory is released now (its last use was issued before the free),
    // once a copy back under way has landed. Where the host may not wait now, collect_frees
    // carries it out later.
    b.arrival = arrival;
    b.arrival_pending = arrival != 0;
    frees_.add_unordered(buffers_.extract(it));
    collect_frees(true);
    return kSuccess;
  }

  void before_item(const WorkItem& item) override {
    Adaptor::before_item(item);
    std::lock_guard lock(mutex_);
    const StreamId stream = item.stream;
    const auto entered = std::chrono::steady_clock::now();
    const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().op();
    ++work_;
    in_item_ = true;
    user_marks_.queued();  // this thread's previous work is queued by now
    const std::uint64_t now = work_ - iteration_begin_;
    InFlight& in_flight = in_flight_.begin(stream);  // this thread's previous work is queued by now
    std::vector<DevicePtr>& current = in_flight.bases;
    last_item_thread_ = std::this_thread::get_id();
    joins_.note(stream);
    learner_.meter().host_costs().copying(false, [&] { mover_->settle(false); });
    collect_frees(false);
    for (const DevicePtr base : item.touched) {
      if (buffers_.contains(base)) current.push_back(base);
    }
    unblank(item);
    // Work that may reach a buffer in motion waits for its copy: a wait of this iteration's swapping,
    // not the item's own time (op_timer.hpp).
    bool waits = remaps_ && reach_.keep_still_under(item, in_flight);  // the stream waits for a copy before this item
    if (learner_.logging()) learner_.item(stream, item.reaches_all);
    if (remaps_ && item.reaches_all) oracle_.reaches_all(now);  // where copies out not waited for end
    // The schedule's copies for this item first: a copy-in due now is then waited for below.
    driver_.apply(now - 1, stream);
    for (const DevicePtr base : current) {
      SwapBuffer& b = buffers_.at(base);
      oracle_.used(key_of(base, b), now);
      if (learner_.logging()) learner_.log().used(name_of(base, b));
      if (!b.resident && !b.pinned) {
        learner_.meter().host_costs().copying(true, [&] { rule_ins_.now(base, b, stream); });
        waits = true;
      }
      b.blank = false;  // after its way back: a buffer no work has written comes back without a copy
      if (b.arrival_pending) {
        // Every stream waits for the copy back until it has arrived, not only the first user.
        const bool arrived_already = device_.event_completed(b.arrival);
        if (b.arrival_ahead && !arrived_already) {
          // The host may be far ahead of the GPU: the rule's own copy back ahead is judged on the
          // GPU's clock where it was timed (else its lead would double for copies on time).
          if (b.scheduled_in == 0 && b.timed_arrival != 0) {
            driver_.judge_rule_later(key_of(base, b), b, stream);
          } else {
            ++counters_.swap_ins_late;
            rule_ins_.grow_lead(key_of(base, b));
          }
        }
        if (b.scheduled_in == 0) timing_events_.give(b.timed_arrival);
        // A scheduled copy-in learns from the GPU's clock only: the host may be far ahead of the
        // GPU, so "not arrived yet" seen from here says little (without timing events, the
        // schedule keeps its triggers).
        if (b.scheduled_in != 0 && b.timed_arrival != 0) driver_.judge_later(b, stream);
        b.arrival_ahead = false;
        b.scheduled_in = 0;
        if (arrived_already) {
          recycle(b.arrival);
          b.arrival_pending = false;
        } else if (device_.stream_wait_event(stream, b.arrival) == kSuccess) {
          ++counters_.stream_waits;
          waits = true;
        }
      }
      user_marks_.user(b, stream);
      b.last_work = work_;
    }
    driver_.advance_planning();
    room_.make(0, 0, Room::Mode::warn);
    rule_ins_.ahead(now);
    // Leave early for what the next few items will allocate, so the copies out are done by then
    // (a schedule's own copies out make that room, at their times: the rule would send out more).
    const std::uint64_t early = EvictionRule::leave_early_horizon(driver_.schedule() != nullptr, options_.lookahead);
    if (early != 0 && EvictionRule::leaves_unwaited(oracle_.next_reaching_all(now), options_.lookahead)) {
      room_.make(oracle_.upcoming_allocations(now, early), early, Room::Mode::quiet);
    }
    // The GPU may have idled while the host waited or worked in memtool before this item (for
    // memory the iteration being learned had to swap: room, copies sent ahead, here or since the
    // last item): time it from its issue, as after a wait for a copy back. Decided last, so that
    // this item's own swapping (counted as host costs per copy) is not taken for its run time;
    // idle the program's own pace leaves stays in the times (copies can use it).
    if (learner_.logging() && (waits || host_waited_ || HostDelay::long_since(entered))) learner_.waited(stream);
    host_waited_ = false;
    update_peaks();
    if (verify_ && !item.kernel.empty()) verify_->verifier().launched(work_, item.kernel, stream);
    in_item_ = false;
  }

  // The program's own wait for the GPU: the item issued last syncs, and the wait is not its host
  // time (op_timer.hpp); its end is marked now, not after the program's host time that follows.
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) override {
    Adaptor::on_host_sync(stream, waited_ns);
    std::lock_guard lock(mutex_);
    const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
    queued_by_this_thread();
    learner_.synced(waited_ns);
  }

  void on_boundary(const Boundary& boundary) override {
    Adaptor::on_boundary(boundary);
    std::lock_guard lock(mutex_);
    const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
    // No work since the last boundary (as at teardown): not an iteration of its own.
    if (iteration_started_ && work_ == iteration_begin_) return;
    learner_.meter().host_costs().end_iteration();
    // The iteration that just ended is the oracle of the next one.
    if (iteration_started_) {
      oracle_.end_iteration(work_ - iteration_begin_);
      ++counters_.iterations_planned;
      names_.next_iteration(buffers_);
    }
    oracle_.begin_iteration();
    iteration_started_ = true;
    iteration_begin_ = work_;
    next_ordinal_ = 0;
    applier_.new_iteration();
    const auto now = std::chrono::steady_clock::now();
    const double iteration_ns = std::chrono::duration<double, std::nano>(now - iteration_started_at_).count();
    iteration_started_at_ = now;
    if (oracle_.length() != 0) say_iteration(iteration_ns);
    driver_.at_boundary(oracle_.length() != 0 ? iteration_ns : 0.0);
  }

  bool wants_accesses() const override { return true; }

  // The buffer itself, with an id that survives its moves (the driver's would change with each
  // remap, and a registration cache keyed by it would see a new buffer).
  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    {
      std::lock_guard lock(mutex_);
      auto it = buffers_.upper_bound(ptr);
      if (it != buffers_.begin()) {
        --it;
        if (ptr - it->first < it->second.size) return BufferExtent{it->first, it->second.size, it->second.id};
      }
    }
    return Adaptor::extent_of(ptr);
  }

  // An exported buffer is pinned: brought back if it is out, never sent out again (swap_out),
  // and its allocation the driver's own from the next iteration on. Explicit swapping backs it
  // with one physical allocation mapped whole at its address, which the handler exports; managed
  // memory (uvm) cannot be exported by any call, so that export fails.
  ExportPin pin_for_export(DevicePtr ptr) override {
    {
      std::lock_guard lock(mutex_);
      const auto it = buffers_.find(ptr);
      if (it != buffers_.end()) {
        SwapBuffer& b = it->second;
        if (b.birth != Birth::persistent) exported_.insert(b.ordinal);
        if (mover_->mode() == "uvm") {
          ++counters_.exports_refused;
          return ExportPin::unexportable;
        }
        if (!b.pinned) {
          // Brought back before it is pinned (a pinned buffer never moves); one pinned already
          // because its address escaped stays where it is, and if that is the host, the export fails.
          if (!b.resident) rule_ins_.now(ptr, b, 0, false);
          b.pinned = true;
          ++counters_.exports_pinned;
        }
        // The export names the device memory: every copy back has landed before it is made. Not
        // while a stream waits for a value (HostWaits): the copy lands in the stream order of the
        // work that brought it back, and a peer reading before that work ran sees stale bytes.
        if (b.arrival_pending) (void)host_waits_.wait(b.arrival);
        if (!b.resident) return ExportPin::unexportable;  // no device memory for it now
        return ExportPin::mapped;
      }
    }
    return Adaptor::pin_for_export(ptr);
  }

  MemoryUse memory_use() const override {
    MemoryUse use = Adaptor::memory_use();
    std::lock_guard lock(mutex_);
    use.reserved += mover_->device_bytes();
    // Buffers on the host count in in_use too (resource.hpp: cuMemGetInfo's free must not grow by
    // the device memory a buffer leaving still holds).
    use.in_use += live_bytes_;
    use.off_device += counters_.host_bytes_now;
    return use;
  }

  void summarize(Summary& s) const override {
    Adaptor::summarize(s);
    std::lock_guard lock(mutex_);
    s.strategy = "swap";
    const bool off = unavailable_.load(std::memory_order_relaxed);
    s.state = off ? "disabled" : (oracle_.length() != 0 ? "apply" : "observe");
    s.swap_mode = off ? "" : std::string(mover_->mode());
    s.budget_bytes = options_.budget_bytes;
    counters_.add_to(s);
    s.stall_ns += host_waits_.stall_ns();
    s.swap_policy = options_.policy;
    if (options_.budget_bytes != 0)
      s.swap_schedule = driver_.schedule() != nullptr ? driver_.schedule()->label() : "rule";
    if (!learner_.link_source().empty()) {
      s.swap_link_to_host_bytes_per_s = static_cast<std::uint64_t>(learner_.link().d2h_bytes_per_ns * 1e9);
      s.swap_link_to_device_bytes_per_s = static_cast<std::uint64_t>(learner_.link().h2d_bytes_per_ns * 1e9);
      s.swap_link_source = learner_.link_source();
    }
    s.swap_host_waits_refused += host_waits_.refused();
    if (verify_) {
      const detail::SwapVerifier& verifier = verify_->verifier();
      s.swap_verify_checks += verifier.checks();
      s.swap_verify_mismatches += verifier.mismatches();
      if (s.swap_verify_first_mismatch.empty()) s.swap_verify_first_mismatch = verifier.first_mismatch();
    }
  }

  // The driver takes graph memory at a graph's next upload or launch: room for it now.
  void set_graph_memory(std::uint64_t bytes) override {
    Adaptor::set_graph_memory(bytes);
    std::lock_guard lock(mutex_);
    room_.make(0, 0, Room::Mode::wait);
  }

  std::uint64_t reclaim() override {
    // The small cache's reclaim waits on the host for the frees it reaches (HostWaits).
    std::uint64_t freed = host_waits_.allowed() ? Adaptor::reclaim() : 0;
    std::lock_guard lock(mutex_);
    room_.below_changed();
    const std::uint64_t before = mover_->device_bytes();
    room_.make(before, 0, Room::Mode::quiet);  // everything idle to the host
    settle(true);
    return freed + (before - std::min(before, mover_->device_bytes()));
  }

  // Wait for the frees and copies in flight, give back what no buffer uses; from now on a free
  // gives its memory straight back (a primary context's release ends every runtime while the
  // context may live on, so live buffers stay). At exit only if no other thread is inside (it
  // may never return now); a call the ending driver refuses is harmless.
  void shutdown(bool release_memory) override {
    Adaptor::shutdown(release_memory);
    std::unique_lock lock(mutex_, std::defer_lock);
    if (release_memory)
      lock.lock();
    else if (!lock.try_lock())
      return;
    stopped_ = true;
    settle(true);
    mover_->trim();
  }

 private:
  // Work that may write a buffer without touching it by an argument (it may reach it, or reach
  // every buffer): its bytes may mean something from now on (SwapBuffer::blank; those it touches
  // are marked as it uses them).
  void unblank(const WorkItem& item) {
    if (item.reaches_all) {
      for (auto& [ptr, b] : buffers_) b.blank = false;
      return;
    }
    for (const DevicePtr base : item.reached) {
      const auto it = buffers_.find(base);
      if (it != buffers_.end()) it->second.blank = false;
    }
  }

  // Explicit copies where asked for and the driver can, else managed memory.
  static std::unique_ptr<detail::SwapMover> make_mover(Device& device, const SwapOptions& options,
                                                       detail::SpareEvents& events, detail::HostWaits& waits) {
    std::unique_ptr<detail::SwapMover> mover;
    if (options.mode == SwapMechanism::explicit_copies) {
      mover = detail::make_vmm_mover(device, events, waits, options.host_limit_bytes);
      if (!mover) {
        log(LogLevel::warn,
            "memtool swap: the driver cannot map host memory into the device (VMM with "
            "CU_MEM_LOCATION_TYPE_HOST, CUDA 12.2 on); swapping through managed memory instead");
      }
    }
    if (!mover) mover = detail::make_uvm_mover(device, events, waits);
    return mover;
  }

  // An allocation that is not swapped (small, pitched, from the program's pool) still counts
  // against the budget: room is made for it first, and a refusal of the driver's is retried once
  // what swapping can free is free.
  Status allocate_beside(const AllocationRequest& request, DevicePtr* out) {
    if (options_.budget_bytes != 0) {
      std::lock_guard lock(mutex_);
      const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
      queued_by_this_thread();
      if (iteration_started_) driver_.apply_outs(work_ - iteration_begin_);
      // Room for what the upstream would take (a cache's new segment, not the request's bytes),
      // made before the driver is asked: copies out under way are waited for if need be. (Not
      // Room::Mode::wait: memory memtool never moves past the budget is said below, with its option.)
      const std::uint64_t grows = Adaptor::growth_of(request);
      if (grows != 0) {
        room_.make(grows, 0, Room::Mode::quiet);
        room_.settle_until_fits(grows, room_.device_budget());
      }
    }
    Status status = Adaptor::allocate(request, out);
    // The driver rounds what it charges, so memtool's count may be a little short: free more,
    // twice as much each time, while there is something to free.
    std::uint64_t extra = std::max<std::uint64_t>(request.size, 1 << 20);
    for (int attempt = 0; status == kOutOfMemory && options_.budget_bytes != 0 && attempt < 8; ++attempt, extra *= 2) {
      {
        std::lock_guard lock(mutex_);
        const detail::HostCostMeter::Scope host_cost = learner_.meter().host_costs().other();
        const std::uint64_t before = mover_->device_bytes();
        room_.make(request.size + extra, 0, Room::Mode::quiet);
        settle(true);
        if (mover_->device_bytes() == before && attempt > 0) break;  // nothing more to free
      }
      status = Adaptor::allocate(request, out);
    }
    if (status == kSuccess && options_.budget_bytes != 0) {
      std::lock_guard lock(mutex_);
      room_.below_changed();
      room_.say_unmovable_over_budget();
    }
    return status;
  }

  // A new buffer's memory where room was made for it: on the device, once what still holds room
  // there is waited for (copies under way, frees not yet reached), then what the memory for
  // buffers memtool does not swap holds idle (the small cache's: it waits on the host for the
  // frees it reaches, so not while the host may not wait); else on the host.
  Status place(SwapBuffer& b, StreamId stream, DevicePtr* ptr) {
    Status status = mover_->allocate(b, stream, ptr);
    if (status == kOutOfMemory) {
      settle(true);
      status = mover_->allocate(b, stream, ptr);
    }
    if (status == kOutOfMemory && host_waits_.allowed() && Adaptor::reclaim() != 0) {
      room_.below_changed();
      status = mover_->allocate(b, stream, ptr);
    }
    if (status == kOutOfMemory && start_on_host(b, stream, ptr)) status = kSuccess;
    return status;
  }

  // No room, and none can be waited for (hold_budget): the buffer starts on the host, or, where
  // the mover cannot start it there, on the device.
  Status place_held(SwapBuffer& b, StreamId stream, DevicePtr* ptr) {
    if (start_on_host(b, stream, ptr)) return kSuccess;
    return mover_->allocate(b, stream, ptr);
  }

  // The buffer starts on the host, mapped at its address (slower, never wrong).
  bool start_on_host(SwapBuffer& b, StreamId stream, DevicePtr* ptr) {
    if (mover_->allocate_on_host(b, stream, ptr) != kSuccess) return false;
    ++counters_.born_on_host;
    counters_.to_host(b.size);
    return true;
  }

  // The rule's name for a buffer (swap/buffer_names.hpp).
  static std::uint64_t key_of(DevicePtr ptr, const SwapBuffer& b) { return detail::BufferNames::key_of(ptr, b); }

  // At MEMTOOL_LOG=debug, what the iteration that just ended moved, and who moved it.
  void say_iteration(double iteration_ns) {
    const char* who = driver_.schedule() != nullptr ? "schedule" : (learner_.logging() ? "rule, learning" : "rule");
    log(LogLevel::debug, counters_.iteration_line(at_boundary_, who, iteration_ns,
                                                  static_cast<double>(host_waits_.stall_ns() - stall_at_boundary_)));
    at_boundary_ = counters_;
    stall_at_boundary_ = host_waits_.stall_ns();
  }

  // The calling thread's last work item is queued by now (a thread's calls are sequential): its
  // buffers may move, and the learner marks where the item ended if it was the last one issued.
  void queued_by_this_thread() {
    const std::thread::id self = std::this_thread::get_id();
    in_flight_.queued();
    user_marks_.queued();
    if (last_item_thread_ == self) learner_.issued();
  }

  // Orders `side` after the work queued so far on every stream the program used and every one
  // that used `b` (swap/stream_joins.hpp).
  bool join_all(const SwapBuffer& b, StreamId side) { return joins_.join_all(b.streams, side, remaps_); }

  static BufferName name_of(DevicePtr ptr, const SwapBuffer& b) { return detail::BufferNames::name_of(ptr, b); }

  void forget_name(DevicePtr ptr, const SwapBuffer& b) {
    if (learner_.logging()) learner_.log().freed(name_of(ptr, b));
    names_.forget(ptr, b);
  }

  // Frees the GPU has reached, carried out; settling also lets the mover release what copies out
  // that have landed held (swap/frees.hpp).
  void collect_frees(bool wait) { frees_.collect(wait); }
  void settle(bool wait) { frees_.settle(wait); }
  EventId take_event(bool& ok) { return spare_events_.take(device_, ok); }
  void recycle(EventId e) { spare_events_.give(e); }

  void update_peaks() {
    const std::uint64_t device = mover_->device_bytes() + Adaptor::memory_use().reserved;
    counters_.peak_device_bytes = std::max(counters_.peak_device_bytes, device);
    counters_.peak_device_bytes_without_pool =
        std::max(counters_.peak_device_bytes_without_pool, live_bytes_ + Adaptor::memory_use().in_use);
  }

  Device& device_;
  const SwapOptions options_;
  const bool copies_on_program_stream_;  // save-on-cpu: its copies run in the program's order
  const bool trial_on_;                  // ours' schedule earns its place; the baselines' apply as published
  mutable std::mutex mutex_;
  detail::SpareEvents spare_events_;       // before the mover, which borrows it
  detail::HostWaits host_waits_{device_};  // every host wait for the GPU; before the mover, which borrows it
  std::unique_ptr<detail::SwapMover> mover_;
  std::map<DevicePtr, SwapBuffer> buffers_;               // node-based: the mover keeps pointers to them
  detail::InFlightItems in_flight_;                       // per thread: its work item being issued
  detail::StreamJoins joins_{device_, spare_events_};     // every stream the program queued work on, joined by copies
  detail::UserMarks user_marks_{device_, spare_events_};  // where work that may read a host copy ends
  const bool remaps_;                                     // explicit mode: a move remaps the buffer's address
  bool in_item_ = false;                         // inside before_item: work_ is the item being issued, not yet queued
  std::unique_ptr<detail::VerifyHooks> verify_;  // MEMTOOL_SWAP_VERIFY
  std::thread::id last_item_thread_;             // who issued the last work item
  detail::IterationOracle oracle_;               // the last complete iteration: next uses, allocations ahead
  std::uint64_t work_ = 0;
  std::uint64_t iteration_begin_ = 0;
  std::uint64_t next_ordinal_ = 0;
  bool iteration_started_ = false;
  std::uint64_t live_bytes_ = 0;
  detail::SideStreams side_streams_{device_};  // copies out and back, timed while learning
  std::atomic<bool> unavailable_{false};
  bool stopped_ = false;  // shut down: frees are carried out at once
  // Since the last work item's before_work, the host waited for the device (settle(true)) or
  // spent long in memtool (mapping fresh memory): the GPU may have idled for it.
  bool host_waited_ = false;
  std::unordered_set<std::uint64_t> exported_;  // keys whose buffer the program exported
  std::uint64_t next_id_ = 0;
  // Which schedule applies, or the rule alone (its state machine).
  detail::ScheduleSelector selector_;
  detail::SpareTimingEvents timing_events_;  // before the learner, which borrows it
  detail::ScheduleLearner learner_;
  std::chrono::steady_clock::time_point iteration_started_at_ = std::chrono::steady_clock::now();
  detail::BufferNames names_;  // which live buffer a schedule's name stands for
  detail::SwapCounters counters_;
  detail::SwapCounters at_boundary_;  // counters_ at the last boundary (say_iteration)
  std::uint64_t stall_at_boundary_ = 0;
  // The parts that move buffers (swap/*.hpp), over what the members above hold.
  detail::MoveContext moves_{device_,       *mover_,  spare_events_, timing_events_, host_waits_,
                             side_streams_, learner_, joins_,        user_marks_,    counters_,
                             verify_.get(), remaps_,  work_,         in_item_,       host_waited_};
  detail::DeferredFrees frees_{moves_};  // freed by the program, not yet reached
  detail::SwapOut swap_out_{moves_};
  detail::SwapIn swap_in_{moves_, frees_};
  detail::ScheduleApplier applier_{swap_out_,
                                   swap_in_,
                                   names_,
                                   buffers_,
                                   in_flight_,
                                   counters_,
                                   copies_on_program_stream_,
                                   Room::host_limit(options_)};
  // The parts that decide (swap/*.hpp): room under the budget, the rule's copies back, what a
  // work item may reach, and the selector's schedule.
  Room room_{options_, moves_, frees_, swap_out_, buffers_, in_flight_, oracle_, upstream(), iteration_begin_};
  detail::RuleSwapIns rule_ins_{options_, moves_, room_, swap_in_, buffers_, oracle_, selector_};
  detail::ReachGuard reach_{moves_, buffers_};
  detail::ScheduleDriver driver_{options_, trial_on_, moves_, selector_, buffers_, oracle_, rule_ins_, room_, applier_};
};

}  // namespace

std::unique_ptr<Resource> make_swap(Device& device, std::unique_ptr<Resource> upstream, const SwapOptions& options) {
  return std::make_unique<SwapAdaptor>(device, std::move(upstream), options);
}

}  // namespace memtool::engine
