// PlannedPool: the planned pool as a resource (see resources.hpp).
//
// States: OBSERVE → PLAN → APPLY → (drift) → OBSERVE.
//  - OBSERVE: everything goes to the upstream. At an iteration boundary the observer hands over
//    the window of the last complete iteration; if it has buffers to pool, PLAN starts.
//  - PLAN: the planner runs on a worker thread (or inline with `synchronous_planning`) while
//    calls pass through. A plan serves from a boundary on, so one still being made when its
//    boundary comes would serve a whole step late: the boundary waits for it, up to
//    `plan_wait_seconds` in all per plan (never longer than planning on the calling thread
//    would have stalled the program; 0: never); a longer plan goes on while the program runs.
//    At the first boundary after the plan is ready the pool is allocated —
//    the observer puts boundaries where the fewest bytes are live, so the observed iterations'
//    memory is gone by then and the pool takes its place rather than adding to the peak — or
//    the current pool is reused when it is big enough.
//  - APPLY: the k-th allocation of each iteration is served from entries[k] when size, kind
//    and stream match and the planned range is free (invariant 1, checked at every hand-out
//    whatever the plan says); otherwise the upstream serves it and a miss is counted. A small
//    lookahead re-synchronises k after a dropped allocation; k wraps at the end of the plan
//    (or at an explicit mark). Too many misses in one iteration, or a run of them, drop the
//    plan: if it never served a whole iteration its period was not the program's (the
//    observer rules it out and grows), otherwise the program changed (the observer starts
//    over). A dropped pool is given back once none of its buffers is live.
// Invariant 2: a pooled free records one event per stream that used the buffer (touched it, or
// allocated/freed it stream-ordered); the next buffer in that range inherits the events and
// every stream that touches it waits on those recorded on other streams — once, at its first
// touch (an async allocation waits at once on its own stream). No host synchronisation.
// Events whose work has completed are dropped instead of waited on, and are reused.
// Memory pressure: an upstream allocation that fails with kOutOfMemory is served from a gap of
// the pool if one fits, else after idle pools are given back (a program must never fail an
// allocation because of the pool).
//
// An Adaptor: what it does not serve, observe or report itself reaches its upstream.
// Thread-safe: one mutex; upstream allocations and frees, and the hooks forwarded, are called
// outside it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "memtool/engine/debug_assert.hpp"
#include "memtool/engine/log.hpp"
#include "memtool/engine/resources.hpp"
#include "plan_task.hpp"
#include "pool_arena.hpp"
#include "spare_events.hpp"

namespace memtool::engine {
namespace {

enum class State : std::uint8_t { observe, plan, apply, disabled };

std::string_view to_string(State state) {
  switch (state) {
    case State::observe:
      return "observe";
    case State::plan:
      return "plan";
    case State::apply:
      return "apply";
    case State::disabled:
      return "disabled";
  }
  return "unknown";
}

// Events whose release records died wait here to be recorded again.
using EventRecycler = detail::SpareEvents;

constexpr std::size_t kNoEntry = ~std::size_t{0};

struct PooledBuffer {
  std::uint64_t size = 0;
  std::uint64_t footprint = 0;
  std::uint64_t id = 0;
  MemoryKind kind = MemoryKind::device;
  PoolArena* arena = nullptr;
  std::uint64_t offset = 0;
  std::size_t entry = kNoEntry;  // plan_.entries index when served by plan `plan_serial`
  std::uint64_t plan_serial = 0;
  std::vector<StreamId> used_on;    // streams ordered after every pending release event
  std::vector<ReleaseRef> pending;  // release records of earlier users of the range
};

bool contains(const std::vector<StreamId>& streams, StreamId stream) {
  return std::find(streams.begin(), streams.end(), stream) != streams.end();
}

std::uint64_t footprint_of(std::uint64_t size) { return (std::max<std::uint64_t>(size, 1) + 511) / 512 * 512; }

class PlannedPool final : public Adaptor {
 public:
  PlannedPool(Device& device, std::unique_ptr<Resource> upstream, PoolOptions options, PeriodFeedback* feedback)
      : Adaptor(std::move(upstream)),
        device_(device),
        options_(std::move(options)),
        feedback_(feedback),
        recycler_(std::make_shared<EventRecycler>()) {}

  ~PlannedPool() override {
    shutdown(true);
    // Live pools stay allocated (their memory may still be in use); drop our bookkeeping, then
    // the events it held.
    pooled_.clear();
    arenas_.clear();
    recycler_->destroy_all(device_);
  }

  std::string_view name() const override { return "pool"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    if (out == nullptr) return kInvalidValue;
    std::unique_lock lock(mutex_);
    if (auto ptr = serve_from_pool(request)) {
      *out = *ptr;
      return kSuccess;
    }
    lock.unlock();
    DevicePtr ptr = 0;
    Status status = upstream().allocate(request, &ptr);
    lock.lock();
    if (status == kOutOfMemory) {
      // The pool must never be the reason a program fails an allocation: take a gap of a pool,
      // or give idle pools back and try again.
      if (auto gap = serve_from_gap(request)) {
        ++counters_.pool_reclaims;
        *out = *gap;
        return kSuccess;
      }
      if (release_idle_arenas(true) > 0) {
        ++counters_.pool_reclaims;
        if (state_ == State::apply) drop_plan("memory was short and the pool was given back");
        lock.unlock();
        status = upstream().allocate(request, &ptr);
        lock.lock();
      }
    }
    if (status != kSuccess) return status;
    ++counters_.allocs_passed_through;
    passthrough_[ptr] = request.size;
    passthrough_live_ += request.size;
    program_live_ += request.size;
    update_peaks();
    *out = ptr;
    return kSuccess;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    std::unique_lock lock(mutex_);
    if (const auto it = pooled_.find(ptr); it != pooled_.end()) {
      PooledBuffer buffer = std::move(it->second);
      pooled_.erase(it);
      program_live_ -= buffer.size;
      PoolArena* arena = buffer.arena;
      release_pooled(buffer, kind, stream);
      pooled_live_.fetch_sub(1, std::memory_order_relaxed);
      if (arena != current_ && arena->live_count() == 0) release_arena(arena);  // drained
      return kSuccess;
    }
    if (const auto it = passthrough_.find(ptr); it != passthrough_.end()) {
      passthrough_live_ -= it->second;
      program_live_ -= it->second;
      passthrough_.erase(it);
    }
    lock.unlock();
    return Adaptor::deallocate(ptr, kind, stream);  // not ours: the upstream decides
  }

  bool wants_accesses() const override { return true; }
  void before_item(const WorkItem& item) override {
    if (pooled_live_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard lock(mutex_);
      for (const DevicePtr base : item.touched) order_use(base, item.stream);
    }
    Adaptor::before_item(item);
  }

  void on_boundary(const Boundary& boundary) override {
    Adaptor::on_boundary(boundary);
    std::unique_lock lock(mutex_);
    // The observer found another step (warm-up iterations first, then the steady step: with
    // CUDA graphs the steady step is a few replays and eager work, nothing like the eager
    // warm-up): a plan of the old one would only miss. Plan the new one.
    if (!boundary.from_marks && boundary.period != 0) {
      if (state_ == State::plan && ready_ && ready_period_ != boundary.period) {
        log(LogLevel::info, fmt::format("memtool pool: the step is now {} events, not {}: planning it instead",
                                        boundary.period, ready_period_));
        ready_.reset();
        set_state(State::observe);
      } else if (state_ == State::apply && !boundaries_by_marks_ && plan_.period != boundary.period) {
        drop_plan(fmt::format("the step is now {} events, not {}", boundary.period, plan_.period), false);
      }
    }
    switch (state_) {
      case State::observe:
        // A planner still busy with a plan that was dropped meanwhile: wait for a later boundary.
        if (boundary.window && !boundary.window->problem.buffers.empty() && !worker_running_) {
          start_planning(boundary.window);
          apply_when_ready(lock, boundary.from_marks);
        }
        break;
      case State::plan:
        apply_when_ready(lock, boundary.from_marks);
        break;
      case State::apply:
        if (boundary.from_marks && boundaries_by_marks_ && (k_ != 0 || iteration_misses_ != 0)) end_iteration();
        break;
      case State::disabled:
        break;
    }
  }

  bool wants_windows() const override {
    return wants_windows_.load(std::memory_order_relaxed) || Adaptor::wants_windows();
  }

  MemoryUse memory_use() const override {
    MemoryUse use;
    {
      std::lock_guard lock(mutex_);
      use = MemoryUse{pool_reserved_ + passthrough_live_, program_live_, pool_reserved_, 0};
    }
    use.reserved += upstream_unused_bytes();
    return use;
  }

  void summarize(Summary& s) const override {
    Adaptor::summarize(s);
    std::lock_guard lock(mutex_);
    const std::uint64_t peak_with = s.peak_device_bytes_with_pool;
    s = merge(s);
    s.peak_device_bytes_with_pool = std::max(peak_with, counters_.peak_device_bytes_with_pool);
  }

  std::optional<BufferExtent> extent_of(DevicePtr ptr) const override {
    if (std::optional<BufferExtent> extent = pooled_extent(ptr)) return extent;
    return Adaptor::extent_of(ptr);
  }

  // A pooled buffer is a piece of an arena (one cuMemAlloc): exported in place, the handler
  // naming the arena and the buffer's offset in it. It is pinned as it is: a live pooled buffer
  // never moves and no other buffer is placed over it while it lives; from the next iteration
  // on, its allocation is real memory of its own.
  ExportPin pin_for_export(DevicePtr ptr) override {
    if (pooled_live_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard lock(mutex_);
      if (const std::optional<ExportPin> pin = pin_pooled(ptr)) return *pin;
    }
    return Adaptor::pin_for_export(ptr);
  }

  std::uint64_t reclaim() override {
    std::uint64_t freed = 0;
    {
      std::lock_guard lock(mutex_);
      freed = release_idle_arenas(/*include_current=*/false);
    }
    return freed + Adaptor::reclaim();
  }

  // The driver is about to take more graph memory (an executable graph's first upload or
  // launch), which no plan of ours serves: the program's step now runs from graphs, not from the
  // eager allocations a plan was made of. An idle pool would sit next to that memory and add
  // its whole size to the device's peak, so it is given back first and its plan dropped; the
  // observer finds the new step and a plan of it allocates only what it proves it needs. A pool
  // with live buffers is given back as it drains (drop_plan).
  void set_graph_memory(std::uint64_t bytes) override {
    {
      std::lock_guard lock(mutex_);
      const bool grows = bytes > graph_bytes_;
      graph_bytes_ = bytes;
      if (grows) {
        if (state_ == State::apply && current_ != nullptr && current_->live_count() == 0) {
          drop_plan("the driver takes graph memory", /*feedback=*/false);
        }
        (void)release_idle_arenas(/*include_current=*/false);
      }
    }
    Adaptor::set_graph_memory(bytes);
  }

  void shutdown(bool release_memory) override {
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::disabled) {
        set_state(State::disabled, fmt::format("stopped in {}: {}", to_string(state_),
                                               release_memory ? "the CUDA context ended" : "the process exits"));
      }
      ++generation_;
      planner_done_.notify_all();  // a boundary waiting for the plan stops waiting
      ready_.reset();
      if (release_memory) release_idle_arenas(true);
      current_ = nullptr;
    }
    {
      // The planner thread must not outlive the process's exit handlers; it takes the lock last.
      std::lock_guard join_lock(join_mutex_);
      if (worker_.joinable()) worker_.join();
    }
    Adaptor::shutdown(release_memory);
  }

 private:
  // --- bookkeeping -------------------------------------------------------------------------

  // Work on `stream` touches the buffer at `base`: a pooled one orders the stream after its
  // range's earlier users.
  void order_use(DevicePtr base, StreamId stream) {
    for (const auto& arena : arenas_) {
      if (!arena->contains(base)) continue;
      const auto range = arena->live_range_at(base);
      if (!range) return;
      const auto it = pooled_.find(arena->base() + range->first);
      if (it != pooled_.end()) order_on(it->second, stream);
      return;
    }
  }

  // The live pooled buffer holding `ptr`, if any.
  std::optional<BufferExtent> pooled_extent(DevicePtr ptr) const {
    if (pooled_live_.load(std::memory_order_relaxed) == 0) return std::nullopt;
    std::lock_guard lock(mutex_);
    for (const auto& arena : arenas_) {
      if (!arena->contains(ptr)) continue;
      const auto range = arena->live_range_at(ptr);
      if (!range) return std::nullopt;
      const auto it = pooled_.find(arena->base() + range->first);
      if (it == pooled_.end()) return std::nullopt;
      return BufferExtent{it->first, it->second.size, it->second.id};
    }
    return std::nullopt;
  }

  // pin_for_export of a pointer into one of the pool's arenas; nothing for any other pointer.
  std::optional<ExportPin> pin_pooled(DevicePtr ptr) {
    for (const auto& arena : arenas_) {
      if (!arena->contains(ptr)) continue;
      const auto range = arena->live_range_at(ptr);
      if (!range) return ExportPin::not_served;  // a freed range of the pool: the driver answers for it
      const auto it = pooled_.find(arena->base() + range->first);
      if (it == pooled_.end()) return ExportPin::not_served;
      const PooledBuffer& buffer = it->second;
      if (buffer.entry != kNoEntry && buffer.plan_serial == plan_serial_ && buffer.entry < plan_.entries.size() &&
          plan_.entries[buffer.entry].pooled) {
        plan_.entries[buffer.entry].pooled = false;  // from the next iteration on: real memory
        log(LogLevel::info,
            fmt::format("memtool pool: a pooled buffer ({} B) is exported: exported in place, pinned; this "
                        "allocation is the driver's own from the next iteration on",
                        buffer.size));
      }
      return ExportPin::in_place;
    }
    return std::nullopt;
  }

  Summary merge(Summary s) const {
    s.strategy = s.strategy.empty() ? "pool" : s.strategy;
    s.state = std::string(to_string(state_));
    s.state_reason = reason_;
    s.allocs_in_planned_steps = counters_.allocs_in_planned_steps;
    s.worst_step_served = counters_.worst_step_served;
    s.iterations_planned = counters_.iterations_planned;
    s.pool_bytes = current_ != nullptr ? current_->size() : counters_.pool_bytes;
    s.lower_bound_bytes = counters_.lower_bound_bytes;
    s.allocs_from_pool = counters_.allocs_from_pool;
    s.allocs_passed_through = counters_.allocs_passed_through;
    s.misses = counters_.misses;
    s.refusals = counters_.refusals;
    s.replans = counters_.replans;
    s.plans_made = counters_.plans_made;
    s.plan_failures = counters_.plan_failures;
    s.pool_alloc_failures = counters_.pool_alloc_failures;
    s.pool_reclaims = counters_.pool_reclaims;
    s.exports_refused = counters_.exports_refused;
    s.stream_waits = counters_.stream_waits;
    s.events_recorded = counters_.events_recorded;
    s.peak_device_bytes_without_pool =
        std::max(s.peak_device_bytes_without_pool, counters_.peak_device_bytes_without_pool);
    if (plan_.period != 0) s.period_allocations = plan_.entries.size();
    return s;
  }

  // `why`: what the summary says about a state that does not serve (empty in APPLY).
  void set_state(State state, std::string why = {}) {
    state_ = state;
    reason_ = std::move(why);
    wants_windows_.store(state == State::observe, std::memory_order_relaxed);
  }

  void update_peaks() {
    counters_.peak_device_bytes_with_pool =
        std::max(counters_.peak_device_bytes_with_pool, pool_reserved_ + passthrough_live_);
    counters_.peak_device_bytes_without_pool = std::max(counters_.peak_device_bytes_without_pool, program_live_);
  }

  // --- observe → plan ----------------------------------------------------------------------

  void start_planning(const std::shared_ptr<const IterationWindow>& window) {
    set_state(State::plan, "planning the step found");
    ready_.reset();
    wait_left_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::max(options_.plan_wait_seconds, 0.0)));
    const std::uint64_t gen = ++generation_;
    log(LogLevel::info, fmt::format("memtool pool: planning an iteration of {} allocations ({} to pool, {} events)",
                                    window->entries.size(), window->problem.buffers.size(), window->period));
    if (options_.synchronous_planning) {
      finish_planning(detail::make_plan(*window, options_), window->period);
      return;
    }
    std::lock_guard join_lock(join_mutex_);
    if (worker_.joinable()) worker_.join();  // finished: it cleared worker_running_ under the lock
    worker_running_ = true;
    worker_ = std::thread([this, window, gen] {
      detail::PlanOutcome outcome = detail::make_plan(*window, options_);
      std::lock_guard lock(mutex_);
      if (gen == generation_ && state_ == State::plan) finish_planning(std::move(outcome), window->period);
      worker_running_ = false;
      planner_done_.notify_all();
    });
  }

  // At a boundary, with the plan still being made on the planner thread: wait for it (the lock
  // is released meanwhile: other threads' calls pass through), out of what is left of the
  // plan's wait. The plan serves from this boundary on if it is ready by then.
  void wait_for_plan(std::unique_lock<std::mutex>& lock) {
    if (state_ != State::plan || ready_ || !worker_running_ ||
        wait_left_ <= std::chrono::steady_clock::duration::zero())
      return;
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t gen = generation_;
    planner_done_.wait_until(lock, start + wait_left_, [&] { return !worker_running_ || generation_ != gen; });
    const auto waited = std::chrono::steady_clock::now() - start;
    wait_left_ -= std::min(waited, wait_left_);
    log(LogLevel::info, fmt::format("memtool pool: the step boundary waited {:.1f} ms for the plan{}",
                                    std::chrono::duration<double, std::milli>(waited).count(),
                                    ready_ ? "" : ": not ready, it goes on while the program runs"));
  }

  // At a boundary in PLAN: the plan serves from here on if it is ready, waited for as above.
  void apply_when_ready(std::unique_lock<std::mutex>& lock, bool from_marks) {
    wait_for_plan(lock);
    if (state_ == State::plan && ready_) enter_apply(from_marks);
  }

  void finish_planning(detail::PlanOutcome outcome, std::uint64_t period) {
    if (!outcome.plan) {
      ++counters_.plan_failures;
      log(LogLevel::info, fmt::format("memtool pool: no plan ({}); observing again", outcome.error));
      set_state(State::observe, "no plan: " + outcome.error);
      return;
    }
    ++counters_.plans_made;
    ready_ = std::move(outcome.plan);
    ready_period_ = period;
  }

  // --- plan → apply ------------------------------------------------------------------------

  void release_arena(PoolArena* arena) {
    pool_reserved_ -= arena->size();
    (void)device_.free(arena->base(), MemoryKind::device, 0);
    if (current_ == arena) current_ = nullptr;
    std::erase_if(arenas_, [arena](const auto& a) { return a.get() == arena; });
  }

  std::uint64_t release_idle_arenas(bool include_current) {
    std::vector<PoolArena*> idle;
    for (const auto& arena : arenas_) {
      if (arena->live_count() == 0 && (include_current || arena.get() != current_ || state_ != State::apply)) {
        idle.push_back(arena.get());
      }
    }
    std::uint64_t freed = 0;
    for (PoolArena* arena : idle) {
      freed += arena->size();
      release_arena(arena);
    }
    return freed;
  }

  void enter_apply(bool from_marks) {
    detail::ReadyPlan next = std::move(*ready_);
    ready_.reset();
    if (current_ == nullptr || current_->size() < next.pool_size) {
      if (current_ != nullptr) {
        // Too small. Never touch live memory: a pool with live buffers drains first.
        if (current_->live_count() == 0) {
          release_arena(current_);
        } else {
          current_ = nullptr;
        }
      }
      settle_stream_ordered_frees(next);
      DevicePtr base = 0;
      if (device_.allocate(next.pool_size, MemoryKind::device, 0, &base) != kSuccess) {
        ++counters_.pool_alloc_failures;
        if (counters_.pool_alloc_failures >= options_.max_pool_alloc_failures) {
          set_state(State::disabled, "the pool could not be allocated: passing through");
          log(LogLevel::info, "memtool pool: the pool could not be allocated; pool mode off, passing through");
        } else {
          set_state(State::observe, "the pool could not be allocated: observing again");
          log(LogLevel::info, "memtool pool: the pool could not be allocated; observing again");
        }
        return;
      }
      arenas_.push_back(std::make_unique<PoolArena>(base, next.pool_size));
      current_ = arenas_.back().get();
      pool_reserved_ += next.pool_size;
      update_peaks();
    }
    plan_ = std::move(next);
    ++plan_serial_;
    plan_.period = ready_period_;
    counters_.pool_bytes = current_->size();
    counters_.lower_bound_bytes = plan_.lower_bound;
    boundaries_by_marks_ = from_marks;
    set_state(State::apply);
    k_ = 0;
    iteration_misses_ = 0;
    consecutive_misses_ = 0;
    iterations_this_plan_ = 0;
    step_asked_ = 0;
    step_served_ = 0;
    log(LogLevel::info,
        fmt::format("memtool pool: plan applied: pool {} B, LB {} B ({:.2f}% above), {} allocations per iteration",
                    plan_.pool_size, plan_.lower_bound,
                    plan_.lower_bound == 0
                        ? 0.0
                        : 100.0 * (static_cast<double>(plan_.pool_size) / static_cast<double>(plan_.lower_bound) - 1.0),
                    plan_.entries.size()));
  }

  // Memory the observed iterations freed stream-ordered (cuMemFreeAsync) stays reserved by the
  // driver's pool until its stream reaches the free and a synchronisation releases it; a pool
  // allocated before that would sit next to it and raise the device's peak above the plain
  // run's. So, once per new pool, wait for the streams of the plan's stream-ordered entries
  // (an event each: cuEventSynchronize releases the reserve above the release threshold).
  void settle_stream_ordered_frees(const detail::ReadyPlan& plan) {
    std::vector<StreamId> streams;
    for (const detail::PlannedEntry& e : plan.entries) {
      if (e.kind == MemoryKind::async && !contains(streams, e.stream)) streams.push_back(e.stream);
    }
    for (StreamId stream : streams) {
      bool ok = false;
      const EventId event = take_event(ok);
      if (!ok) return;
      if (device_.record_event(event, stream) == kSuccess) (void)device_.synchronize_event(event);
      recycler_->give(event);
    }
  }

  // --- apply -------------------------------------------------------------------------------

  // `feedback`: tell the observer what the drop says of its step (false when the observer moved
  // on to another step already).
  void drop_plan(std::string_view why, bool feedback = true) {
    // A plan that never served two whole iterations had the wrong period (a loop inside the
    // step that ran out); one that did saw the program change.
    const bool at_once = iterations_this_plan_ < 2;
    log(LogLevel::info,
        fmt::format("memtool pool: plan dropped ({}) after {} iterations; {}", why, iterations_this_plan_,
                    !feedback ? "planning the step found now"
                    : at_once ? "its period was not the program's iteration: looking for a longer one"
                              : "the program changed: observing again"));
    if (!feedback) {
      if (!at_once) ++counters_.replans;
    } else if (at_once) {
      if (feedback_ != nullptr) feedback_->period_wrong(plan_.period);
    } else {
      ++counters_.replans;
      if (feedback_ != nullptr) feedback_->program_changed();
    }
    set_state(State::observe,
              fmt::format("plan dropped ({}): {}", why, at_once ? "looking for a longer step" : "the program changed"));
    // Give the pool back once it drains; a new plan allocates what it proves it needs.
    if (current_ != nullptr && current_->live_count() == 0) release_arena(current_);
    current_ = nullptr;
  }

  void end_iteration() {
    ++counters_.iterations_planned;
    // The share of this step's allocations the plan served (a step that asked for none: all).
    const double served = step_asked_ == 0 ? 1.0 : static_cast<double>(step_served_) / static_cast<double>(step_asked_);
    counters_.worst_step_served =
        counters_.iterations_planned == 1 ? served : std::min(counters_.worst_step_served, served);
    counters_.allocs_in_planned_steps += step_asked_;
    step_asked_ = 0;
    step_served_ = 0;
    const double allowed = options_.drift_miss_fraction * static_cast<double>(plan_.entries.size());
    const bool drifted =
        static_cast<double>(iteration_misses_) > allowed && iteration_misses_ >= options_.drift_min_misses;
    k_ = 0;
    iteration_misses_ = 0;
    if (drifted) {
      drop_plan("too many misses in one iteration");
    } else {
      ++iterations_this_plan_;
    }
  }

  void count_miss() {
    ++counters_.misses;
    ++iteration_misses_;
    if (++consecutive_misses_ >= options_.drift_consecutive_misses) drop_plan("consecutive misses");
  }

  // The plan entry this request is, if any: entries[k], or a little further on when the program
  // skipped allocations (possibly into the next iteration).
  std::optional<std::size_t> match(const AllocationRequest& r) {
    const std::size_t n = plan_.entries.size();
    if (n == 0) return std::nullopt;
    const std::size_t reach = static_cast<std::size_t>(std::min<std::uint64_t>(options_.lookahead, n - 1));
    for (std::size_t d = 0; d <= reach; ++d) {
      // With explicit marks only a mark ends an iteration: allocations past the plan's last
      // entry are misses, not the next iteration's first ones.
      if (boundaries_by_marks_ && k_ + d >= n) break;
      const std::size_t index = (k_ + d) % n;
      const detail::PlannedEntry& e = plan_.entries[index];
      if (e.size == r.size && e.kind == r.kind && e.stream == r.stream) {
        if (k_ + d >= n) end_iteration();
        return index;
      }
    }
    return std::nullopt;
  }

  // Streams that touch the buffer wait once on the release events recorded on other streams.
  void order_on(PooledBuffer& buffer, StreamId stream) {
    if (contains(buffer.used_on, stream)) return;
    buffer.used_on.push_back(stream);
    std::size_t waits = 0;
    for (const ReleaseRef& ref : buffer.pending) {
      for (const auto& [recorded_on, event] : ref->events) {
        if (recorded_on == stream) continue;  // same stream: ordered by the stream itself
        if (device_.stream_wait_event(stream, event) == kSuccess) {
          ++waits;
          continue;
        }
        // No device-side wait: the host waits instead (slower, still ordered).
        const bool ordered = device_.synchronize_event(event) == kSuccess || device_.event_completed(event);
        MEMTOOL_ASSERT(ordered, "invariant 2: pooled memory reused on a stream not ordered after its last use");
      }
    }
    counters_.stream_waits += waits;
  }

  // Tries to serve the request from the pool; nullopt → the upstream.
  std::optional<DevicePtr> serve_from_pool(const AllocationRequest& r) {
    if (state_ != State::apply) return std::nullopt;
    const auto index = match(r);
    if (state_ != State::apply) return std::nullopt;  // end_iteration may have dropped it
    ++step_asked_;
    if (!index) {
      count_miss();
      return std::nullopt;
    }
    k_ = *index + 1;
    // From a memory pool of the program's (cuMemAllocFromPoolAsync): the pool's own memory, with
    // its device, peer access and exportability; the pool counts it in its statistics and
    // cuMemPoolTrimTo acts on it. Never placed in an arena.
    if (r.memory_pool != 0) plan_.entries[*index].pooled = false;
    const detail::PlannedEntry entry = plan_.entries[*index];
    std::optional<DevicePtr> result;
    if (!entry.pooled) {
      consecutive_misses_ = 0;  // never freed in the window: the plan says real memory
    } else if (auto offset = free_slot(entry)) {
      result = hand_out(*current_, *offset, entry.footprint, r, *index);
      ++step_served_;
      consecutive_misses_ = 0;
    } else {
      ++counters_.refusals;  // invariant 1: every planned range is (partly) live
      count_miss();
    }
    if (state_ == State::apply && k_ == plan_.entries.size() && !boundaries_by_marks_) end_iteration();
    return result;
  }

  // Invariant 1, checked at every hand-out whatever the plan says.
  std::optional<std::uint64_t> free_slot(const detail::PlannedEntry& entry) const {
    if (current_ == nullptr) return std::nullopt;
    for (std::uint64_t offset : entry.offsets) {
      if (current_->range_free(offset, entry.footprint)) return offset;
    }
    return std::nullopt;
  }

  DevicePtr hand_out(PoolArena& arena, std::uint64_t offset, std::uint64_t footprint, const AllocationRequest& r,
                     std::size_t entry = kNoEntry) {
    std::vector<ReleaseRef> inherited = arena.occupy(offset, footprint);
    PooledBuffer buffer;
    buffer.size = r.size;
    buffer.footprint = footprint;
    buffer.id = ++next_buffer_id_;
    buffer.kind = r.kind;
    buffer.arena = &arena;
    buffer.offset = offset;
    buffer.entry = entry;
    buffer.plan_serial = plan_serial_;
    for (ReleaseRef& ref : inherited) {
      const bool done = std::all_of(ref->events.begin(), ref->events.end(),
                                    [this](const auto& e) { return device_.event_completed(e.second); });
      if (!done) buffer.pending.push_back(std::move(ref));
    }
    const DevicePtr ptr = arena.base() + offset;
    auto [it, inserted] = pooled_.insert_or_assign(ptr, std::move(buffer));
    (void)inserted;
    // cuMemAllocAsync: the memory is ordered on its stream from the allocation on.
    if (r.kind == MemoryKind::async) order_on(it->second, r.stream);
    ++counters_.allocs_from_pool;
    pooled_live_.fetch_add(1, std::memory_order_relaxed);
    program_live_ += r.size;
    update_peaks();
    return ptr;
  }

  // Any free range of a pool that fits, planned or not (the occupancy check still holds).
  std::optional<DevicePtr> serve_from_gap(const AllocationRequest& r) {
    if (r.memory_pool != 0) return std::nullopt;  // the program's pool's (serve_from_pool)
    const std::uint64_t footprint = footprint_of(r.size);
    for (const auto& arena : arenas_) {
      if (const auto offset = arena->free_gap(footprint)) return hand_out(*arena, *offset, footprint, r);
    }
    return std::nullopt;
  }

  // --- pooled free ---------------------------------------------------------------------------

  EventId take_event(bool& ok) { return recycler_->take(device_, ok); }

  ReleaseRef make_release(const std::vector<std::pair<StreamId, EventId>>& own,
                          std::vector<std::pair<StreamId, EventId>> carried_events, std::vector<ReleaseRef> carried) {
    std::weak_ptr<EventRecycler> weak = recycler_;
    const std::size_t own_count = own.size();
    auto* record = new ReleaseEvents{own, std::move(carried)};
    record->events.insert(record->events.end(), carried_events.begin(), carried_events.end());
    return ReleaseRef(record, [weak, own_count](const ReleaseEvents* r) {
      if (auto shared = weak.lock()) {
        for (std::size_t i = 0; i < own_count; ++i) shared->give(r->events[i].second);
      }
      delete r;
    });
  }

  // Records the events that order the next user of the range after this buffer's work.
  // False when an event could not be made: the range then stays occupied (safe, never reused).
  bool release_pooled(PooledBuffer& buffer, MemoryKind kind, StreamId stream) {
    if (kind == MemoryKind::async && !contains(buffer.used_on, stream)) buffer.used_on.push_back(stream);
    std::vector<std::pair<StreamId, EventId>> own;
    for (StreamId s : buffer.used_on) {
      bool ok = false;
      const EventId e = take_event(ok);
      if (!ok || device_.record_event(e, s) != kSuccess) {
        for (const auto& [_, spare] : own) recycler_->give(spare);
        if (ok) recycler_->give(e);
        return false;
      }
      ++counters_.events_recorded;
      own.emplace_back(s, e);
    }
    // A buffer no stream used leaves the earlier users' work unordered: pass their events on.
    std::vector<std::pair<StreamId, EventId>> carried_events;
    std::vector<ReleaseRef> carried;
    if (buffer.used_on.empty()) {
      for (const ReleaseRef& ref : buffer.pending) {
        for (const auto& e : ref->events) {
          if (!device_.event_completed(e.second)) carried_events.push_back(e);
        }
        carried.push_back(ref);
      }
    }
    ReleaseRef record;
    if (!own.empty() || !carried_events.empty())
      record = make_release(own, std::move(carried_events), std::move(carried));
    return buffer.arena->release(buffer.offset, std::move(record));
  }

  Device& device_;
  PoolOptions options_;
  PeriodFeedback* feedback_;
  mutable std::mutex mutex_;
  std::condition_variable planner_done_;
  State state_ = State::observe;
  std::string reason_ = "no training step found yet";
  std::atomic<bool> wants_windows_{true};

  // Plan.
  std::optional<detail::ReadyPlan> ready_;
  std::uint64_t ready_period_ = 0;
  std::thread worker_;
  std::mutex join_mutex_;  // one joiner at a time (shutdown from several threads)
  bool worker_running_ = false;
  std::uint64_t generation_ = 0;
  std::chrono::steady_clock::duration wait_left_{};  // of plan_wait_seconds, for the plan being made

  // Apply.
  detail::ReadyPlan plan_;
  std::uint64_t plan_serial_ = 0;  // which plan_ a pooled buffer's entry index refers to
  bool boundaries_by_marks_ = false;
  std::size_t k_ = 0;
  std::uint64_t iteration_misses_ = 0;
  std::uint64_t consecutive_misses_ = 0;
  std::uint64_t iterations_this_plan_ = 0;
  std::uint64_t step_asked_ = 0;   // allocations of this planned step so far
  std::uint64_t step_served_ = 0;  // ... served from the pool

  // Memory.
  std::vector<std::unique_ptr<PoolArena>> arenas_;
  PoolArena* current_ = nullptr;
  std::unordered_map<DevicePtr, PooledBuffer> pooled_;
  std::unordered_map<DevicePtr, std::uint64_t> passthrough_;  // live buffers of the upstream, by size
  std::shared_ptr<EventRecycler> recycler_;
  std::atomic<std::uint64_t> pooled_live_{0};
  std::uint64_t next_buffer_id_ = 0;
  std::uint64_t program_live_ = 0;
  std::uint64_t passthrough_live_ = 0;
  std::uint64_t pool_reserved_ = 0;
  std::uint64_t graph_bytes_ = 0;  // the driver's graph memory, last told (set_graph_memory)
  Summary counters_;
};

}  // namespace

std::unique_ptr<Resource> make_planned_pool(Device& device, std::unique_ptr<Resource> upstream, PoolOptions options,
                                            PeriodFeedback* feedback) {
  return std::make_unique<PlannedPool>(device, std::move(upstream), std::move(options), feedback);
}

}  // namespace memtool::engine
