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
//    so the copies are done before the memory is needed. Memory still held by a copy under way
//    is waited for only when an allocation or a late swap-in needs it now (counted: stall_ns).
//  - Swap-in, ahead: at each work item, the buffers the last iteration used within the next
//    few items (`lookahead`, learned per buffer) come back on another side stream if they fit
//    (or by evicting only buffers needed later than they are); their consumer's stream waits on
//    that copy's event. A copy not done when its consumer is issued was late: that buffer's
//    lead doubles for the next iteration. Swap-in on demand: a buffer touched while out comes
//    back in the consumer's own stream order, before the work (counted: the plan missed); with
//    no device memory for it, the consumer reads it where it is (host memory mapped at its
//    address, or managed memory), slower but right.
// A work item's buffers are issued by the real call only after before_work returns: until the
// same thread calls in again (its calls are sequential), they stay pinned on the device, so
// another thread's eviction cannot record its "last use" event before that work is queued.
// Every free of a swapped buffer is deferred until an event recorded at the free (or at the
// buffer's last use, for a synchronous free) has completed: polled, never a host wait.
// Every host wait for the GPU goes through HostWaits (host_waits.hpp): none is made while a stream
// waits for a value that work not yet issued may write; each site then has its stream-ordered
// alternative or its fallback (docs/swapping.md).
// What a work item may reach besides its arguments (WorkItem: pointer tables) matters in explicit
// mode, where a move remaps the buffer's address: a buffer it may reach is kept still under it
// (a copy out under way is called off, a copy back waited for, a host copy it may read stays
// mapped until it has run); a buffer whose address escaped never moves again; and a copy out is
// ordered after all work queued so far on every stream, not only its users'. UVM needs none of
// it: the driver migrates what any access touches.
//
// The rule's choices are made by swapper's EvictionRule (memtool/swapper/eviction_rule.hpp), the
// one the simulator runs too; the other concerns are files under swap/ (docs/swapping.md lists
// them): the moves themselves (swap_out.hpp, swap_in.hpp, frees.hpp, schedule_applier.hpp, over
// move_context.hpp) are carried out there; this file is the Resource adaptor that decides them
// (budget, rule, schedule) and ties the parts to the mover.
//
// Thread-safe: one mutex around the bookkeeping; driver calls are made under it (they are
// asynchronous enqueues, except allocation, mapping and free).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_set>
#include <thread>
#include <unordered_map>
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
#include "swap/frees.hpp"
#include "swap/in_flight.hpp"
#include "swap/lateness.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/schedule_applier.hpp"
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
using detail::InFlight;
using detail::IterationLog;
using detail::ScheduleLearner;
using detail::SwapBuffer;
using Issuing = detail::InFlightItems::Issuing;
using swapper::Arrival;
using swapper::DueIn;
using swapper::EvictionRule;
using swapper::Offer;
using swapper::RuleCandidate;

constexpr std::uint64_t kFar = std::numeric_limits<std::uint64_t>::max();
static_assert(detail::IterationOracle::kNever == swapper::kUnknownUse, "the oracle's unknown use is the rule's");
// extent_of's ids are unique across the stack: the swapper's carry this bit, which the small
// cache's (counted from 1) never reach; below bit 48, which context_runtimes.cpp keeps for its own.
constexpr std::uint64_t kSwapIdTag = std::uint64_t{1} << 47;

// A call that kept the host in memtool long enough for the GPU to drain its queue (a wait, or
// fresh device memory mapped and faulted in) flags the next work item: its learned GPU time
// starts at its issue, so that idle is not taken for the program's own (op_timer.hpp).
class HostDelay {
 public:
  explicit HostDelay(bool& flag) : flag_(flag), start_(std::chrono::steady_clock::now()) {}
  ~HostDelay() { flag_ = flag_ || long_since(start_); }
  HostDelay(const HostDelay&) = delete;
  HostDelay& operator=(const HostDelay&) = delete;
  static bool long_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::steady_clock::now() - start > std::chrono::microseconds(50);
  }

 private:
  bool& flag_;
  std::chrono::steady_clock::time_point start_;
};

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
    forget_lateness();
    for (auto& [ptr, b] : buffers_) timing_events_.give(b.timed_arrival);
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
    queued_by_this_thread();
    collect_frees(false);
    if (iteration_started_) apply_outs(work_ - iteration_begin_);
    SwapBuffer b;
    b.size = request.size;
    make_room(mover_->footprint_of(request.size), 0, Room::wait);
    DevicePtr ptr = 0;
    const Status status = hold_budget(mover_->footprint_of(request.size)) ? place_held(b, request.stream, &ptr)
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
      return Adaptor::allocate(request, out);
    }
    if (iteration_started_) {
      names_.born(ptr, b, next_ordinal_++);
      if (learner_.logging()) learner_.log().allocated(b.ordinal, b.footprint, ptr);
      if (schedule_ && !schedule_->expects(b.ordinal, b.footprint))
        drop_schedule("an allocation differs from the plan's");
    }
    b.id = kSwapIdTag | ++next_id_;
    b.streams.push_back(request.stream);
    b.last_work = work_;
    if (iteration_started_) oracle_.allocated(work_ - iteration_begin_, b.footprint);
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
      return Adaptor::deallocate(ptr, kind, stream);
    }
    SwapBuffer& b = it->second;
    live_bytes_ -= b.size;
    forget_name(ptr, b);
    timing_events_.give(b.timed_arrival);
    // Work queued before the free may still use the memory: a stream-ordered free on its
    // stream, a synchronous one (the driver would wait for the device) after every stream that
    // used it, joined on the swap-out stream; and after a copy back still under way (brought
    // back ahead and freed before any use, it is in no user's stream order: its memory released
    // under it was written after the unmap, a fault on fakecuda).
    StreamId after = stream;
    if (kind != MemoryKind::async && side_streams_.out(after)) join_all(b, after);
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
    if (remaps_) keep_still_under(item, in_flight);
    if (learner_.logging()) learner_.item(stream);
    // The schedule's copies for this item first: a copy-in due now is then waited for below.
    apply_schedule(now - 1, stream);
    bool waits = false;  // the stream waits for a copy back before this item
    for (const DevicePtr base : current) {
      SwapBuffer& b = buffers_.at(base);
      oracle_.used(key_of(base, b), now);
      if (learner_.logging()) learner_.log().used(name_of(base, b));
      if (!b.resident && !b.pinned) {
        learner_.meter().host_costs().copying(true, [&] { bring_back_now(base, b, stream); });
        waits = true;
      }
      if (b.arrival_pending) {
        // Every stream waits for the copy back until it has arrived, not only the first user.
        const bool arrived_already = device_.event_completed(b.arrival);
        if (b.arrival_ahead && !arrived_already) {
          // The host may be far ahead of the GPU: the rule's own copy back ahead is judged on the
          // GPU's clock where it was timed (else its lead would double for copies on time).
          if (b.scheduled_in == 0 && b.timed_arrival != 0) {
            judge_rule_later(key_of(base, b), b, stream);
          } else {
            ++counters_.swap_ins_late;
            grow_lead(key_of(base, b));
          }
        }
        if (b.scheduled_in == 0) timing_events_.give(b.timed_arrival);
        // A scheduled copy-in learns from the GPU's clock only: the host may be far ahead of the
        // GPU, so "not arrived yet" seen from here says little (without timing events, the
        // schedule keeps its triggers).
        if (b.scheduled_in != 0 && b.timed_arrival != 0) judge_later(b, stream);
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
      if (std::find(b.streams.begin(), b.streams.end(), stream) == b.streams.end()) b.streams.push_back(stream);
      b.last_work = work_;
    }
    // The GPU may have idled while the host waited here or since the last item (for memory the
    // iteration being learned had to swap): time this item from its issue, as after a wait for
    // a copy back; idle the program's own pace leaves stays in the times (copies can use it).
    if (learner_.logging() && (waits || host_waited_ || HostDelay::long_since(entered))) learner_.waited(stream);
    host_waited_ = false;
    advance_planning();
    make_room(0, 0, Room::warn);
    prefetch_ahead(now);
    // Leave early for what the next few items will allocate, so the copies out are done by then
    // (a schedule's own copies out make that room, at their times: the rule would send out more).
    const std::uint64_t early = EvictionRule::leave_early_horizon(schedule_ != nullptr, options_.lookahead);
    if (early != 0) make_room(oracle_.upcoming_allocations(now, early), early, Room::quiet);
    update_peaks();
    if (verify_ && !item.kernel.empty()) verify_->verifier().launched(work_, item.kernel, stream);
    in_item_ = false;
  }

  void on_boundary(const Boundary& boundary) override {
    Adaptor::on_boundary(boundary);
    std::lock_guard lock(mutex_);
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
    schedule_at_boundary(oracle_.length() != 0 ? iteration_ns : 0.0);
    if (trial_on_) leads_at_start_ = lead_;  // what the next iteration starts with
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
          if (!b.resident) bring_back_now(ptr, b, 0, false);
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
    if (options_.budget_bytes != 0) s.swap_schedule = schedule_ ? schedule_->label() : "rule";
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
    make_room(0, 0, Room::wait);
  }

  std::uint64_t reclaim() override {
    // The small cache's reclaim waits on the host for the frees it reaches (HostWaits).
    std::uint64_t freed = host_waits_.allowed() ? Adaptor::reclaim() : 0;
    std::lock_guard lock(mutex_);
    const std::uint64_t before = mover_->device_bytes();
    make_room(before, 0, Room::quiet);  // everything idle to the host
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
      queued_by_this_thread();
      if (iteration_started_) apply_outs(work_ - iteration_begin_);
      // Room for what the upstream would take (a cache's new segment, not the request's bytes),
      // made before the driver is asked: copies out under way are waited for if need be. (Not
      // Room::wait: memory memtool never moves past the budget is said below, with its option.)
      const std::uint64_t grows = Adaptor::growth_of(request);
      if (grows != 0) {
        make_room(grows, 0, Room::quiet);
        settle_until_fits(grows, device_budget());
      }
    }
    Status status = Adaptor::allocate(request, out);
    // The driver rounds what it charges, so memtool's count may be a little short: free more,
    // twice as much each time, while there is something to free.
    std::uint64_t extra = std::max<std::uint64_t>(request.size, 1 << 20);
    for (int attempt = 0; status == kOutOfMemory && options_.budget_bytes != 0 && attempt < 8; ++attempt, extra *= 2) {
      {
        std::lock_guard lock(mutex_);
        const std::uint64_t before = mover_->device_bytes();
        make_room(request.size + extra, 0, Room::quiet);
        settle(true);
        if (mover_->device_bytes() == before && attempt > 0) break;  // nothing more to free
      }
      status = Adaptor::allocate(request, out);
    }
    if (status == kSuccess && options_.budget_bytes != 0) say_unmovable_over_budget();
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
      status = mover_->allocate(b, stream, ptr);
    }
    if (status == kOutOfMemory && start_on_host(b, ptr)) status = kSuccess;
    return status;
  }

  // No room, and none can be waited for (hold_budget): the buffer starts on the host, or, where
  // the mover cannot start it there, on the device.
  Status place_held(SwapBuffer& b, StreamId stream, DevicePtr* ptr) {
    if (start_on_host(b, ptr)) return kSuccess;
    return mover_->allocate(b, stream, ptr);
  }

  // The buffer starts on the host, mapped at its address (slower, never wrong).
  bool start_on_host(SwapBuffer& b, DevicePtr* ptr) {
    if (mover_->allocate_on_host(b, ptr) != kSuccess) return false;
    ++counters_.born_on_host;
    counters_.to_host(b.size);
    return true;
  }

  // What memtool never moves (allocations under MEMTOOL_SWAP_MIN_BYTES, pitched ones, the
  // program's pools) is past the budget by itself: no swapping can meet it (MEMTOOL_BUDGET=1 with
  // the default 1M). Said once, with the option to change.
  void say_unmovable_over_budget() {
    std::lock_guard lock(mutex_);
    const std::uint64_t unmovable = Adaptor::memory_use().reserved;
    if (unmovable <= options_.budget_bytes || said_over_budget_) return;
    said_over_budget_ = true;
    log(LogLevel::warn,
        fmt::format("memtool swap: the budget of {} B cannot be met: {} B are in allocations memtool never moves "
                    "(smaller than MEMTOOL_SWAP_MIN_BYTES={} B, pitched, or from the program's pools); memory beyond "
                    "it is used as the device allows",
                    options_.budget_bytes, unmovable, options_.min_bytes));
  }

  // The rule's name for a buffer (swap/buffer_names.hpp).
  static std::uint64_t key_of(DevicePtr ptr, const SwapBuffer& b) { return detail::BufferNames::key_of(ptr, b); }

  std::uint64_t lead_of(std::uint64_t key) const {
    const auto it = lead_.find(key);
    return it == lead_.end() ? options_.lookahead : it->second;
  }
  void grow_lead(std::uint64_t key) {
    if (!selector_.leads_learn()) return;
    auto [it, inserted] = lead_.emplace(key, options_.lookahead);
    (void)inserted;
    it->second = EvictionRule::grown_lead(it->second);
  }

  std::uint64_t device_budget() const {
    const std::uint64_t others = Adaptor::memory_use().reserved;
    return options_.budget_bytes > others ? options_.budget_bytes - others : 0;
  }

  std::uint64_t host_limit() const { return options_.host_limit_bytes == 0 ? kFar : options_.host_limit_bytes; }

  // Device bytes once the copies under way have finished and the GPU has reached the frees
  // queued so far: memory that comes back without a copy, only a wait, so nothing resident is
  // sent out for it (the program's own synchronous free would have waited there too).
  std::uint64_t committed() const {
    const std::uint64_t held = mover_->device_bytes() - mover_->leaving_bytes();
    return held - std::min(held, frees_.device_bytes());
  }

  // How make_room ends: `wait` — the bytes are needed now, so copies still under way are waited
  // for; `warn` — falling short of the budget is said (once); `quiet` — the caller gives up when
  // there is no room (a swap-in ahead, leaving early).
  enum class Room : std::uint8_t { wait, warn, quiet };

  // Swap out resident buffers, farthest next use first, until `incoming` more bytes fit in the
  // budget once their copies are done; only buffers needed later than `needed_in` (work items
  // from now) and not used by a work item still being issued (in_flight_, which holds the
  // current one's) go.
  void make_room(std::uint64_t incoming, std::uint64_t needed_in, Room room) {
    if (options_.budget_bytes == 0) return;
    std::uint64_t budget = device_budget();
    // What the driver's stream-ordered pools keep after reached frees goes before any buffer does
    // (and their figures are asked again: a synchronisation may have released some).
    if (committed() + incoming > budget) {
      (void)Adaptor::trim_pools(PoolTrim::beyond_threshold);
      budget = device_budget();
    }
    if (committed() + incoming <= budget) {
      // Enough once the copies out under way are done: wait for them if the bytes are needed now.
      if (room == Room::wait) settle_until_fits(incoming, budget);
      return;
    }
    const std::uint64_t now = work_ - iteration_begin_;
    // The rule's candidates (eviction_rule.hpp): those a work item being issued touches stay, and
    // so do those it may reach when the caller gives up without room; one needed within
    // `needed_in` is left out here (the rule stops only at one that does not leave at once).
    victims_.clear();
    for (const auto& [ptr, b] : buffers_) {
      if (!b.resident || b.pinned) continue;
      const Issuing use = issuing(ptr);
      if (use == Issuing::touched || (use == Issuing::reached && room == Room::quiet)) continue;
      const std::uint64_t distance = oracle_.next_use(key_of(ptr, b), now);
      if (EvictionRule::needed_within(distance, needed_in)) continue;
      victims_.push_back(RuleCandidate{distance, b.last_work, ptr, b.size, ptr, use == Issuing::reached});
    }
    EvictionRule::make_heap(victims_);
    const auto fits = [&] { return committed() + incoming <= budget; };
    const auto host_room = [&] { return host_limit() - std::min(host_limit(), counters_.host_bytes_now); };
    const EvictionRule::Pass pass =
        EvictionRule::send_out(victims_, needed_in, fits, host_room, [&](const RuleCandidate& v) {
          const DevicePtr ptr = v.handle;
          SwapBuffer& b = buffers_.at(ptr);
          // Leaving under work that may reach it: the copy (after all work queued so far) lands and the
          // address maps the host copy before that work is queued. Slow, never wrong. (While a stream
          // waits for a value, swap_out starts nothing: it stays.)
          if (!swap_out_.send(ptr, b)) return Offer::dropped;
          if (v.at_once) {
            settle(true);
            // That work reads the host copy through the address: no copy back may remap it under
            // the work (swap_out forgot the buffer's streams; table_train --table global faulted).
            const InFlight* mine = in_flight_.mine();
            if (mine != nullptr && std::find(b.streams.begin(), b.streams.end(), mine->stream) == b.streams.end()) {
              b.streams.push_back(mine->stream);
            }
          }
          return Offer::sent;
        });
    // Needed now and nothing else can leave: the pools keep nothing, whatever the program asked.
    if (needed_in == 0 && committed() + incoming > budget) {
      (void)Adaptor::trim_pools(PoolTrim::all);
      budget = device_budget();
    }
    if (pass.host_full && !said_host_limit_) {
      said_host_limit_ = true;
      log(LogLevel::warn, fmt::format("memtool swap: the host limit of {} B is reached (MEMTOOL_HOST_LIMIT); "
                                      "buffers that would pass it stay on the device",
                                      options_.host_limit_bytes));
    }
    if (room == Room::quiet) return;
    // Device memory still held by copies out under way, or by frees the GPU has not reached.
    if (room == Room::wait && (mover_->leaving_bytes() != 0 || !frees_.empty())) settle_until_fits(incoming, budget);
    if (committed() + incoming > budget && !said_over_budget_) {
      said_over_budget_ = true;
      log(LogLevel::warn,
          fmt::format("memtool swap: the budget of {} B cannot be met here ({} B must stay on the device); "
                      "memory beyond it is used as the device allows",
                      options_.budget_bytes, committed() + incoming + Adaptor::memory_use().reserved));
    }
  }

  // Whether `footprint` more device bytes would pass the budget while the host may not wait
  // (HostWaits: a stream waits for a value). The room copies out under way hold is then out of
  // reach until that value is written (they are ordered after every stream, the waiting one
  // included), so what does not fit stays off the device: a new buffer starts on the host, one
  // that is out is read there, across the link (slower, never wrong), and the budget holds.
  bool hold_budget(std::uint64_t footprint) {
    if (options_.budget_bytes == 0 || mover_->device_bytes_with(footprint) <= device_budget() ||
        host_waits_.allowed()) {
      return false;
    }
    ++counters_.held_for_value_waits;
    if (!said_held_) {
      said_held_ = true;
      log(LogLevel::info,
          "memtool swap: a stream waits for a value the program has not written yet, so memtool "
          "cannot wait for room; what does not fit the budget until then is served from host "
          "memory (swap_held_for_value_waits)");
    }
    return true;
  }

  // At MEMTOOL_LOG=debug, what the iteration that just ended moved, and who moved it.
  void say_iteration(double iteration_ns) {
    const char* who = schedule_ ? "schedule" : (learner_.logging() ? "rule, learning" : "rule");
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
    if (last_item_thread_ == self) learner_.issued();
  }

  Issuing issuing(DevicePtr ptr) const { return in_flight_.issuing(ptr); }

  // Orders `side` after the work queued so far on every stream the program used and every one
  // that used `b` (swap/stream_joins.hpp).
  bool join_all(const SwapBuffer& b, StreamId side) { return joins_.join_all(b.streams, side, remaps_); }

  // --- what a work item may reach besides its arguments (explicit mode) ---

  // The buffers `item` may reach without touching them are kept still under it: none is chosen
  // to leave while it is issued (in_flight), and none is in motion when it runs (keep_still).
  // Buffers whose address escaped never move again (pin).
  void keep_still_under(const WorkItem& item, InFlight& in_flight) {
    in_flight.reached.clear();
    for (const DevicePtr base : item.escaped) pin(base, item.stream);
    if (item.reaches_all) {
      in_flight.all = true;
      for (auto& [ptr, b] : buffers_) keep_still(ptr, b, item.stream);
      counters_.items_reaching_all += 1;
      return;
    }
    for (const DevicePtr base : item.reached) {
      const auto it = buffers_.find(base);
      if (it == buffers_.end()) continue;
      in_flight.reached.push_back(base);
      keep_still(base, it->second, item.stream);
    }
  }

  // Work that may reach `b` is about to be queued on `stream`. A copy out under way may miss what
  // it writes: called off (the device memory is still mapped and true), the work queued after
  // the copy, whose bytes are dropped. A copy back under way: the work waits for it. Out: it
  // reads and writes the host copy at the address, which stays mapped until the work has run
  // (mapped_users_done). Either way its stream joins b's users.
  void keep_still(DevicePtr ptr, SwapBuffer& b, StreamId stream) {
    if (b.leaving && device_.stream_wait_event(stream, b.left) == kSuccess && mover_->move_in(ptr, b, stream)) {
      counters_.off_host(b.size);
      b.held_out = false;
      b.digest_valid = false;
      ++counters_.leaves_called_off;
    }
    if (b.arrival_pending && device_.stream_wait_event(stream, b.arrival) == kSuccess) ++counters_.stream_waits;
    if (std::find(b.streams.begin(), b.streams.end(), stream) == b.streams.end()) b.streams.push_back(stream);
  }

  // Its address went where memtool cannot follow (device memory it does not track): any later
  // work may reach it, so it never moves again — left where it is, once no move is under way.
  void pin(DevicePtr ptr, StreamId stream) {
    const auto it = buffers_.find(ptr);
    if (it == buffers_.end() || it->second.pinned) return;
    SwapBuffer& b = it->second;
    b.pinned = true;
    ++counters_.pinned;
    if (b.leaving) keep_still(ptr, b, stream);
    if (b.arrival_pending) {
      // Rare: a host wait beats an unordered reader. Where the host may not wait, the escaping
      // work waits in its stream order, and every later item memtool sees touch or reach it
      // (before_item, keep_still) while the copy is pending.
      if (host_waits_.wait(b.arrival)) {
        recycle(b.arrival);
        b.arrival_pending = false;
      } else if (device_.stream_wait_event(stream, b.arrival) == kSuccess) {
        ++counters_.stream_waits;
      }
    }
  }

  // The plan did not bring it back in time: in the consumer's stream order, before the work. Its
  // lead grows only where a longer one would have helped: not in the first iteration (no
  // oracle yet), nor when it was within its lead and room was what it lacked.
  // `may_stay`: it may be read where it is when bringing it back would pass the budget while
  // the host may not wait (hold_budget); an export needs it on the device.
  void bring_back_now(DevicePtr base, SwapBuffer& b, StreamId stream, bool may_stay = true) {
    make_room(b.footprint, 0, Room::wait);
    if (may_stay && !b.leaving && hold_budget(b.footprint)) {
      b.kept_out = false;
      ++counters_.swap_ins_failed;  // read where it is
      return;
    }
    const bool kept_out = b.kept_out;
    (void)swap_in_.now(base, b, stream);  // swap/swap_in.hpp
    if (oracle_.length() != 0 && !kept_out) grow_lead(key_of(base, b));
  }

  // Bring back, on the swap-in stream, what the last iteration used in the next few work items,
  // the soonest needed first: one needed later makes room only from buffers needed after it, so
  // it never takes the room of one needed sooner (which would send it straight back out: lstm
  // and alexnet at 60% moved the same 64 MiB in and out at every item near the iteration's end).
  void prefetch_ahead(std::uint64_t now) {
    if (oracle_.length() == 0 || options_.lookahead == 0) return;
    due_in_.clear();
    for (const auto& [ptr, b] : buffers_) {
      if (b.resident || b.held_out || b.pinned) continue;
      const std::uint64_t key = key_of(ptr, b);
      const std::uint64_t distance = oracle_.next_use(key, now);
      if (EvictionRule::needed_within(distance, lead_of(key))) due_in_.push_back(DueIn{distance, ptr, ptr});
    }
    EvictionRule::bring_back(
        due_in_, [&](const DueIn& d) { return bring_back_ahead(d.handle, d.next_use, now); },
        // No room yet for the soonest needed: none for those needed later either (they would
        // take what it needs, and be sent out again for it).
        [&](const DueIn& d) { buffers_.at(d.handle).kept_out = true; });
  }

  // One buffer due `distance` items from `now` comes back ahead on the swap-in stream.
  Arrival bring_back_ahead(DevicePtr ptr, std::uint64_t distance, std::uint64_t now) {
    SwapBuffer& b = buffers_.at(ptr);
    // Room for it and for what is allocated before its use, from buffers needed after it only:
    // else the next item's early leaving would send it straight back (Belady, both ways).
    const std::uint64_t needs = b.footprint + oracle_.upcoming_allocations(now, distance);
    make_room(needs, distance, Room::quiet);
    if (options_.budget_bytes != 0 &&
        mover_->device_bytes_with(b.footprint) + (needs - b.footprint) > device_budget()) {
      return Arrival::no_room;
    }
    return swap_in_.ahead(ptr, b);  // swap/swap_in.hpp
  }

  // --- the swapper's schedule (swap_schedule.hpp) ---
  // Learning (schedule_learner.hpp) until a plan is made; which of its candidates applies, or
  // the rule alone, is the selector's choice (swap/selector.hpp), until drift drops it (learning
  // again).

  // A schedule's copy-ins and the rule's leads as an iteration ran with them.
  struct TimedState {
    std::vector<std::uint64_t> copy_ins;
    std::unordered_map<std::uint64_t, std::uint64_t> leads;
  };

  static BufferName name_of(DevicePtr ptr, const SwapBuffer& b) { return detail::BufferNames::name_of(ptr, b); }

  // The live buffer a schedule's name stands for, or 0.
  DevicePtr resolve(const BufferName& name) const { return names_.resolve(name, buffers_); }

  void forget_name(DevicePtr ptr, const SwapBuffer& b) {
    if (learner_.logging()) learner_.log().freed(name_of(ptr, b));
    names_.forget(ptr, b);
  }

  void start_log() {
    IterationLog& log = learner_.start();
    for (const auto& [ptr, b] : buffers_) log.alive(name_of(ptr, b), b.footprint, ptr);
  }

  // `iteration_ns`: the host time of the iteration that just ended (0: none).
  void schedule_at_boundary(double iteration_ns) {
    using State = detail::ScheduleSelector::State;
    learner_.meter().poll();
    judge_rule_lateness();
    if (selector_.state() == State::off && options_.budget_bytes != 0 && options_.policy != "belady") {
      selector_.begin();
    }
    if (selector_.applying() && oracle_.length() != schedule_->items()) {
      drop_schedule(
          fmt::format("an iteration of {} work items, the plan's had {}", oracle_.length(), schedule_->items()));
      start_log();
      return;
    }
    if (selector_.state() == State::learning) {
      if (learner_.end_iteration()) start_log();
      return;
    }
    const detail::ScheduleSelector::Step step = selector_.boundary(iteration_ns);
    if (!follow(step)) return;
    if (selector_.applying()) {
      judge_lateness();
      schedule_->rebuild();
    }
  }

  // While learning: the plan, once two iterations agreed and their GPU times are known. Its
  // candidates without swaps are the rule alone (applied, one would only stop the rule leaving
  // early for what is allocated next): the rule's baseline times them.
  void advance_planning() {
    if (selector_.state() != detail::ScheduleSelector::State::learning) return;
    std::string why;
    detail::PlanReply reply;
    switch (learner_.advance(device_budget(), reply, why)) {
      case ScheduleLearner::Progress::ready: {
        candidates_.clear();
        candidate_states_.clear();
        plan_applied_ = false;
        std::vector<std::unique_ptr<detail::SwapSchedule>> runners_up = std::move(reply.runners_up);
        if (!trial_on_) runners_up.clear();                                // a baseline applies as published
        runners_up.insert(runners_up.begin(), std::move(reply.schedule));  // the selector's ids in this order
        for (std::size_t i = 0; i < runners_up.size(); ++i) {
          if (runners_up[i]->size() != 0) {
            candidates_.push_back(std::move(runners_up[i]));
            continue;
          }
          const bool next = i + 1 < runners_up.size();  // timed against the rule's baseline
          // (A runner-up without swaps is skipped, said at debug: ours' own is the one said.)
          log(i == 0 ? LogLevel::info : LogLevel::debug,
              fmt::format("memtool swap: {} has no swaps: the rule alone{}", runners_up[i]->label(),
                          next ? ", as timed; the candidates after it are timed against it" : ""));
        }
        candidate_states_.resize(candidates_.size());
        std::vector<detail::StepPrediction> predicted;
        for (const auto& c : candidates_) predicted.push_back(c->prediction());
        selector_.planned(std::move(predicted), reply.rule_alone);  // chosen by the model, calibrated by timing
        return;
      }
      case ScheduleLearner::Progress::failed:
        log(LogLevel::warn,
            "memtool swap: no " + options_.policy + " schedule (" + why + "); swapping by its own rule");
        selector_.failed();
        return;
      default:
        return;
    }
  }

  // Carries out the selector's step (swap/selector.hpp): what the iteration just timed ran with
  // is kept first, then the schedule applies, goes back or goes. False when the schedule changed.
  bool follow(const detail::ScheduleSelector::Step& step) {
    using Action = detail::ScheduleSelector::Action;
    using Keep = detail::ScheduleSelector::Keep;
    if (step.keep == Keep::rule) rule_fastest_leads_ = leads_at_start_;
    if (step.keep == Keep::candidate && schedule_) candidate_states_[*selector_.applied()] = timed_state();
    if (step.verdict) {
      ++counters_.candidates_timed;
      if (step.checked) {
        log(LogLevel::info,
            fmt::format("memtool swap: {}: {:.1f} ms an iteration, {} its calibrated prediction {:.1f} ms ({:.1f} "
                        "predicted; the rule alone {:.1f} ms)",
                        schedule_->label(), step.figure / 1e6, step.kept ? "as" : "refuting", step.predicted / 1e6,
                        schedule_->prediction().step_ns / 1e6, step.rule / 1e6));
      } else {
        log(LogLevel::info,
            fmt::format("memtool swap: {}: {:.1f} ms an iteration, {} ({:.1f} ms; the rule alone {:.1f} ms)",
                        schedule_->label(), step.figure / 1e6, step.kept ? "the fastest so far" : "not faster than",
                        step.target / 1e6, step.rule / 1e6));
      }
    }
    if (step.by_model) say_model_choice(step);
    if (step.chosen) {
      counters_.iterations_selecting += step.timed_iterations;
      log(LogLevel::info,
          fmt::format("memtool swap: chosen after {} iterations timed since the plan", step.timed_iterations));
    }
    if (step.rejected) ++counters_.schedules_rejected;
    switch (step.action) {
      case Action::none:
        return true;
      case Action::apply:
        if (schedule_) clear_schedule();
        // The plan's first candidate applied counts, whichever the model chose first.
        install_schedule(step.candidate, !plan_applied_);
        plan_applied_ = true;
        return false;
      case Action::take_back:
        clear_schedule();
        // Taken back as it was in its fastest iteration, learning no more: what it learned after
        // that was its own trial's to show, and learning on (from the state the candidates after
        // it left) settled it slower (mobilenet_v2 at 60%: 1,142 ms in its trial, 1,146 ms taken
        // back, then 1,172-1,197 ms as it learned on).
        log(LogLevel::info, fmt::format("memtool swap: {} is the fastest: it applies from now on, as it was in its "
                                        "fastest iteration",
                                        candidates_[step.candidate]->label()));
        install_schedule(step.candidate, false);
        restore(candidate_states_[step.candidate]);
        return false;
      case Action::restore:
        // Slower than its trial's figure or its fastest since: its copy-ins and the rule's leads
        // go back to where they were in its fastest iteration (the rule's leads grow under a
        // schedule too, and a longer lead sends more out ahead), and neither learns any more.
        log(LogLevel::info, fmt::format("memtool swap: {}: {:.1f} ms an iteration, slower than it was ({:.1f} ms): "
                                        "its copy-ins and the rule's leads go back to where they were in its fastest "
                                        "iteration, and learn no more",
                                        schedule_->label(), step.figure / 1e6, step.target / 1e6));
        restore(candidate_states_[*selector_.applied()]);  // a fastest is timed before any restore
        return true;
      case Action::rule_alone:
        if (schedule_) {
          if (step.figure > 0 && !step.verdict) {
            log(LogLevel::info, fmt::format("memtool swap: {}: {:.1f} ms an iteration, slower than it was "
                                            "({:.1f} ms): the rule alone from now on",
                                            schedule_->label(), step.figure / 1e6, step.target / 1e6));
          }
          clear_schedule();
        }
        rule_from_now_on();
        return false;
      case Action::freeze_leads:
        log(LogLevel::info, fmt::format("memtool swap: the rule alone: {:.1f} ms an iteration, slower than it was "
                                        "({:.1f} ms): its leads go back to where they were then, and learn no more",
                                        step.figure / 1e6, step.target / 1e6));
        lead_ = rule_fastest_leads_;
        return true;
      case Action::free_leads:
        log(LogLevel::info, fmt::format("memtool swap: the rule alone: {:.1f} ms an iteration, slower than it was "
                                        "({:.1f} ms) with its leads put back: they learn again",
                                        step.figure / 1e6, step.target / 1e6));
        return true;
    }
    return true;
  }

  // The model's choice (swap/selector.hpp), with its calibration: the host time a step it missed
  // and per copy.
  void say_model_choice(const detail::ScheduleSelector::Step& step) {
    using Action = detail::ScheduleSelector::Action;
    const std::string who = step.action == Action::rule_alone ? std::string("the rule alone")
                            : step.action == Action::none     ? schedule_->label()
                                                              : candidates_[step.candidate]->label();
    const char* how = step.challenge                 ? "the rule alone's rival, checked against it"
                      : step.action == Action::apply ? "checked against its prediction"
                                                     : "as timed";
    // A rival of the rule alone is said with its own calibrated figure (choice_ns is the rule's).
    const double figure = step.challenge ? selector_.calibrated(step.candidate) : step.choice_ns;
    log(LogLevel::info,
        fmt::format("memtool swap: chosen by prediction: {}, {:.1f} ms an iteration calibrated, "
                    "{} (the rule alone {:.1f} ms; calibration: {:.1f} ms a step and {:.1f} us a copy the model "
                    "missed)",
                    who, figure / 1e6, how, selector_.rule_figure() / 1e6, selector_.unexplained_ns() / 1e6,
                    selector_.per_copy_ns() / 1e3));
  }

  // No candidate faster than the rule alone (or none with swaps): the rule from now on, starting
  // from the leads of its fastest timed iteration when it was timed. Its leads grow with every
  // copy back that arrives late, which can help (lstm at 60%: 1,940 ms an iteration, then
  // 1,815 ms 25 on) or not (longer leads send more out ahead: mobilenet_v2 at 60% ran 1,144 ms an
  // iteration with 49 buffers out, 1,200-1,246 ms with 54-60): so the selector watches it as a
  // committed candidate, against its fastest iteration.
  void rule_from_now_on() {
    if (selector_.state() != detail::ScheduleSelector::State::rule) return;
    lead_ = rule_fastest_leads_;
    log(LogLevel::info, fmt::format("memtool swap: the rule alone from now on, from its leads in its fastest "
                                    "iteration ({:.1f} ms)",
                                    selector_.rule_figure() / 1e6));
  }

  // What the iteration just timed ran with (this boundary's learning is still to come).
  TimedState timed_state() const { return TimedState{schedule_->copy_ins(), leads_at_start_}; }

  // The schedule's copy-ins and the rule's leads go back to `state`; the selector's state
  // (restored) says they learn no more.
  void restore(const TimedState& state) {
    schedule_->restore_copy_ins(state.copy_ins);
    lead_ = state.leads;
  }

  // Candidate `id` applies from the next iteration on; `counts`: the first of a new plan's
  // candidates to apply (not one coming after it in turn, nor the fastest taken back).
  void install_schedule(std::size_t id, bool counts) {
    schedule_ = candidates_[id].get();
    if (counts) {
      ++counters_.schedules;
      rule_leads_ = lead_;
    }
    for (auto& [ptr, b] : buffers_) {
      b.scheduled_in = 0;
      timing_events_.give(b.timed_arrival);
    }
  }

  void drop_schedule(const std::string& why) {
    log(LogLevel::info, "memtool swap: the schedule is dropped (" + why + "); learning again");
    ++counters_.schedule_drops;
    clear_schedule();
    candidates_.clear();
    candidate_states_.clear();
    selector_.drop();
    learner_.stop(true);
  }
  // The schedule and what the buffers held of it go; the rule alone until a state says otherwise,
  // with the leads it had learned before the plan applied (what a schedule left for it to bring
  // back on demand grew them, and longer leads make it send more out ahead: lstm at 60% then
  // moved 59 buffers an iteration where it had moved 42).
  void clear_schedule() {
    schedule_ = nullptr;
    std::size_t grown = 0;
    for (const auto& [key, lead] : lead_) {
      const auto it = rule_leads_.find(key);
      grown += lead > (it == rule_leads_.end() ? options_.lookahead : it->second) ? 1 : 0;
    }
    if (grown != 0)
      log(LogLevel::debug, fmt::format("memtool swap: the rule gets back its leads ({} had grown)", grown));
    lead_ = rule_leads_;
    forget_lateness();
    learner_.stop(false);  // a log starts at a boundary
    for (auto& [ptr, b] : buffers_) {
      b.scheduled_in = 0;
      b.held_out = false;
      timing_events_.give(b.timed_arrival);
    }
  }

  // A scheduled copy-in's consumer (without timing events, the schedule keeps its triggers).
  void judge_later(SwapBuffer& b, StreamId stream) {
    (void)lateness_.time(b.scheduled_in - 1, b.timed_arrival, stream);
  }

  // The rule's copy back ahead, not known to have arrived when its consumer is issued: read off
  // the GPU at the next boundary, or, without an event, taken as late (the host's view).
  void judge_rule_later(std::uint64_t key, SwapBuffer& b, StreamId stream) {
    if (rule_lateness_.time(key, b.timed_arrival, stream)) return;
    ++counters_.swap_ins_late;
    grow_lead(key);
  }

  // Scheduled copy-ins that were late start earlier from now on.
  void judge_lateness() {
    lateness_.judge([this](std::uint64_t swap) {
      if (schedule_) schedule_->late(static_cast<std::uint32_t>(swap));
    });
  }

  // The rule's copies back that were late: those buffers' leads grow.
  void judge_rule_lateness() {
    rule_lateness_.judge([this](std::uint64_t key) {
      ++counters_.swap_ins_late;
      grow_lead(key);
    });
  }

  void forget_lateness() {
    lateness_.forget();
    rule_lateness_.forget();
  }

  // The copies out due once the item before `item` was issued: at the first call after it (an
  // allocation between two items must find the room the plan made for it), once
  // (swap/schedule_applier.hpp).
  void apply_outs(std::uint64_t item) {
    if (schedule_) applier_.outs(*schedule_, item);
  }

  // The schedule's copies issued at work item `item`: out first, then in (swap/schedule_applier.hpp).
  void apply_schedule(std::uint64_t item, StreamId stream) {
    if (!schedule_) return;
    if (item >= schedule_->items()) {
      drop_schedule(fmt::format("an iteration longer than the plan's {} work items", schedule_->items()));
      return;
    }
    applier_.apply(*schedule_, item, stream, [&](const SwapBuffer& b, std::uint64_t lead) {
      make_room(b.footprint, lead, Room::wait);
      return mover_->device_bytes_with(b.footprint) <= device_budget();
    });
  }

  // Frees the GPU has reached, carried out; settling also lets the mover release what copies out
  // that have landed held (swap/frees.hpp).
  void collect_frees(bool wait) { frees_.collect(wait); }
  void settle(bool wait) { frees_.settle(wait); }
  // `incoming` more device bytes are needed now: the oldest copies out (and the frees they reach)
  // are waited for only until they fit in `budget`, not every copy under way (swap/frees.hpp):
  // waiting for the newest drains the GPU's queue (bench/RESULTS.md, the simulator against the
  // process).
  void settle_until_fits(std::uint64_t incoming, std::uint64_t budget) {
    if (mover_->device_bytes() + incoming <= budget) return;
    frees_.settle_until(budget - std::min(budget, incoming));
  }

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
  std::map<DevicePtr, SwapBuffer> buffers_;            // node-based: the mover keeps pointers to them
  detail::InFlightItems in_flight_;                    // per thread: its work item being issued
  detail::StreamJoins joins_{device_, spare_events_};  // every stream the program queued work on, joined by copies
  const bool remaps_;                                  // explicit mode: a move remaps the buffer's address
  bool in_item_ = false;                         // inside before_item: work_ is the item being issued, not yet queued
  std::unique_ptr<detail::VerifyHooks> verify_;  // MEMTOOL_SWAP_VERIFY
  std::thread::id last_item_thread_;             // who issued the last work item
  detail::IterationOracle oracle_;               // the last complete iteration: next uses, allocations ahead
  std::unordered_map<std::uint64_t, std::uint64_t> lead_;        // learned swap-in lead per key
  std::unordered_map<std::uint64_t, std::uint64_t> rule_leads_;  // lead_ when the last plan applied
  bool plan_applied_ = false;  // a candidate of the last plan has applied (the counters' schedules)
  std::unordered_map<std::uint64_t, std::uint64_t> rule_fastest_leads_;  // in the rule alone's fastest iteration
  std::uint64_t work_ = 0;
  std::uint64_t iteration_begin_ = 0;
  std::uint64_t next_ordinal_ = 0;
  bool iteration_started_ = false;
  std::uint64_t live_bytes_ = 0;
  detail::SideStreams side_streams_{device_};  // copies out and back, timed while learning
  std::atomic<bool> unavailable_{false};
  bool said_over_budget_ = false;
  bool said_host_limit_ = false;
  bool said_held_ = false;
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
  std::unordered_map<std::uint64_t, std::uint64_t> leads_at_start_;  // lead_ when this iteration began
  detail::CopyLateness lateness_{device_, timing_events_};       // scheduled copy-ins, judged once the GPU got there
  detail::CopyLateness rule_lateness_{device_, timing_events_};  // the rule's copies back ahead, likewise
  std::vector<DueIn> due_in_;                                    // scratch: (distance, buffer) to bring back
  std::vector<RuleCandidate> victims_;                           // scratch: the rule's candidates to send out
  // The plan's candidates with swaps, by the selector's id (ours' own first, then its runners-up).
  std::vector<std::unique_ptr<detail::SwapSchedule>> candidates_;
  // Each candidate's copy-ins and the rule's leads in its fastest iteration (its trial's, then its watch's).
  std::vector<TimedState> candidate_states_;
  detail::SwapSchedule* schedule_ = nullptr;  // the candidate applied now (owned by candidates_)
  detail::BufferNames names_;                 // which live buffer a schedule's name stands for
  detail::SwapCounters counters_;
  detail::SwapCounters at_boundary_;  // counters_ at the last boundary (say_iteration)
  std::uint64_t stall_at_boundary_ = 0;
  // The parts that move buffers (swap/*.hpp), over what the members above hold.
  detail::MoveContext moves_{device_,       *mover_,  spare_events_, timing_events_, host_waits_,
                             side_streams_, learner_, joins_,        counters_,      verify_.get(),
                             remaps_,       work_,    in_item_,      host_waited_};
  detail::DeferredFrees frees_{moves_};  // freed by the program, not yet reached
  detail::SwapOut swap_out_{moves_};
  detail::SwapIn swap_in_{moves_, frees_};
  detail::ScheduleApplier applier_{
      swap_out_, swap_in_, names_, buffers_, in_flight_, counters_, copies_on_program_stream_, host_limit()};
};

}  // namespace

std::unique_ptr<Resource> make_swap(Device& device, std::unique_ptr<Resource> upstream, const SwapOptions& options) {
  return std::make_unique<SwapAdaptor>(device, std::move(upstream), options);
}

}  // namespace memtool::engine
