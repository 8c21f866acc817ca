// PoolEngine: the state machine (observe → plan → apply → drift), the hand-out path with its
// occupancy check, and the event bookkeeping of stream-ordered reuse. See engine.hpp.
#include "memtool/pool/engine.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "memtool/pool/arena.hpp"
#include "memtool/pool/steady_state.hpp"
#include "memtool/trace/iteration_detector.hpp"
#include "memtool/trace/signature.hpp"
#include "plan_task.hpp"

namespace memtool::pool {

std::string_view to_string(EngineState state) {
  switch (state) {
    case EngineState::observe: return "observe";
    case EngineState::plan: return "plan";
    case EngineState::apply: return "apply";
    case EngineState::disabled: return "disabled";
  }
  return "unknown";
}

namespace {

// Events whose release records died wait here to be recorded again: creating an event per
// pooled free would cost a driver call on the hot path.
struct EventRecycler {
  std::vector<EventId> spare;
};

struct LiveBuffer {
  std::uint64_t record_id = 0;
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;
  PoolArena* arena = nullptr;  // set when the buffer came from a pool
  std::uint64_t offset = 0;
  std::vector<StreamId> used_on;    // streams ordered after every pending release event
  std::vector<ReleaseRef> pending;  // release records of earlier users of the range
};

bool contains(const std::vector<StreamId>& streams, StreamId stream) {
  return std::find(streams.begin(), streams.end(), stream) != streams.end();
}

}  // namespace

struct PoolEngine::Impl {
  Impl(DeviceOps& d, PoolOptions o)
      : device(d),
        options(std::move(o)),
        detector(trace::IterationDetectorOptions{
            4, std::max<std::uint64_t>(options.max_period, 8),
            std::max<std::uint32_t>(options.confirm_periods, 2), 0.02}),
        recorder(4 * std::max<std::uint64_t>(options.max_period, 8)),
        recycler(std::make_shared<EventRecycler>()) {
    if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0) {
      options.alignment = 512;
    }
  }

  DeviceOps& device;
  PoolOptions options;
  mutable std::mutex mutex;
  std::condition_variable planner_done;
  EngineState state = EngineState::observe;

  // Observe.
  trace::IterationDetector detector;
  std::uint64_t detector_base = 0;  // tick of the detector's token 0
  SteadyStateRecorder recorder;
  std::vector<std::uint64_t> mark_ticks;  // last few explicit marks
  std::uint64_t next_attempt_tick = 0;

  // Plan: the iteration phase the window was cut at, and the plan once it is ready.
  std::uint64_t period = 0;
  std::uint64_t phase_tick = 0;  // a boundary tick (token mode)
  bool boundaries_by_marks = false;
  bool at_boundary = false;  // no allocation since the last iteration boundary
  std::optional<detail::ReadyPlan> ready;
  std::thread worker;
  bool worker_running = false;
  std::uint64_t generation = 0;

  // Apply.
  detail::ReadyPlan plan;
  std::size_t k = 0;
  std::uint64_t iteration_misses = 0;
  std::uint64_t consecutive_misses = 0;

  // Memory.
  std::vector<std::unique_ptr<PoolArena>> arenas;
  PoolArena* current = nullptr;
  std::unordered_map<DevicePtr, LiveBuffer> live;
  std::shared_ptr<EventRecycler> recycler;
  std::atomic<std::uint64_t> pooled_live{0};
  std::uint64_t program_live = 0;
  std::uint64_t passthrough_live = 0;
  std::uint64_t pool_reserved = 0;
  Summary counters;

  void log(std::string_view line) const {
    if (options.log) options.log(line);
  }

  void update_peaks() {
    counters.peak_device_bytes_with_pool =
        std::max(counters.peak_device_bytes_with_pool, pool_reserved + passthrough_live);
    counters.peak_device_bytes_without_pool =
        std::max(counters.peak_device_bytes_without_pool, program_live);
  }

  // --- ticks and boundaries -----------------------------------------------------------------

  // Called before an event takes tick recorder.ticks(): notes an iteration boundary there.
  void note_tick_boundary() {
    if (state != EngineState::plan || boundaries_by_marks || period == 0) return;
    const std::uint64_t t = recorder.ticks();
    if (t >= phase_tick && (t - phase_tick) % period == 0) at_boundary = true;
  }

  void push_token(std::uint64_t token) {
    if (state != EngineState::observe) return;
    detector.push(token);
    maybe_plan();
  }

  void reset_detection() {
    detector.reset();
    detector_base = recorder.ticks();
    mark_ticks.clear();
    next_attempt_tick = 0;
  }

  // --- observe → plan ------------------------------------------------------------------------

  void maybe_plan() {
    const auto detected = detector.period();
    if (!detected) return;
    const std::uint64_t now = recorder.ticks();
    if (now < next_attempt_tick) return;
    std::uint64_t p = detected->period;
    std::uint64_t begin = 0;
    if (detected->from_marks) {
      if (mark_ticks.size() < 3) return;
      const std::uint64_t m1 = mark_ticks[mark_ticks.size() - 3];
      const std::uint64_t m2 = mark_ticks[mark_ticks.size() - 2];
      if (m2 <= m1) return;
      p = m2 - m1;
      begin = m1;
    } else {
      if (detected->explained < std::uint64_t{options.confirm_periods} * p) return;
      const std::uint64_t first = detector_base + detected->first_boundary;
      if (now < first + 2 * p) return;
      begin = first + ((now - first - 2 * p) / p) * p;
    }
    auto window = recorder.window(begin, p, options.alignment);
    if (!window || window->problem.buffers.empty()) {
      next_attempt_tick = now + p;  // nothing to pool in this shape; look again later
      return;
    }
    period = p;
    phase_tick = begin;
    boundaries_by_marks = detected->from_marks;
    at_boundary = false;
    start_planning(std::move(*window));
  }

  void start_planning(IterationWindow window) {
    state = EngineState::plan;
    ready.reset();
    const std::uint64_t gen = ++generation;
    log(fmt::format("memtool pool: iteration of {} allocs/frees detected ({} allocations, {} "
                    "pooled); planning",
                    window.period, window.entries.size(), window.problem.buffers.size()));
    if (options.synchronous_planning) {
      finish_planning(detail::make_plan(window, options));
      return;
    }
    if (worker.joinable()) worker.join();  // finished: it cleared worker_running under the lock
    worker_running = true;
    worker = std::thread([this, w = std::move(window), gen] {
      detail::PlanOutcome outcome = detail::make_plan(w, options);
      std::lock_guard<std::mutex> lock(mutex);
      if (gen == generation && state == EngineState::plan) finish_planning(std::move(outcome));
      worker_running = false;
      planner_done.notify_all();
    });
  }

  void finish_planning(detail::PlanOutcome outcome) {
    if (!outcome.plan) {
      ++counters.plan_failures;
      log(fmt::format("memtool pool: no plan ({}); observing again", outcome.error));
      state = EngineState::observe;
      reset_detection();
      return;
    }
    ++counters.plans_made;
    ready = std::move(outcome.plan);
  }

  // --- plan → apply --------------------------------------------------------------------------

  void release_arena(PoolArena* arena) {
    pool_reserved -= arena->size();
    device.free(arena->base(), MemoryKind::device, 0);
    if (current == arena) current = nullptr;
    std::erase_if(arenas, [arena](const auto& a) { return a.get() == arena; });
  }

  bool enter_apply() {
    detail::ReadyPlan next = std::move(*ready);
    ready.reset();
    if (current == nullptr || current->size() < next.pool_size) {
      if (current != nullptr) {
        // Too small. Never touch live memory: a pool with live buffers drains first.
        if (current->live_count() == 0) {
          release_arena(current);
        } else {
          current = nullptr;
        }
      }
      DevicePtr base = 0;
      if (device.allocate(next.pool_size, MemoryKind::device, 0, &base) != kSuccess) {
        ++counters.pool_alloc_failures;
        if (counters.pool_alloc_failures >= options.max_pool_alloc_failures) {
          state = EngineState::disabled;
          log("memtool pool: the pool could not be allocated; pool mode off, passing through");
        } else {
          state = EngineState::observe;
          reset_detection();
          log("memtool pool: the pool could not be allocated; observing again");
        }
        return false;
      }
      arenas.push_back(std::make_unique<PoolArena>(base, next.pool_size));
      current = arenas.back().get();
      pool_reserved += next.pool_size;
      update_peaks();
    }
    plan = std::move(next);
    counters.pool_bytes = current->size();
    counters.lower_bound_bytes = plan.lower_bound;
    state = EngineState::apply;
    k = 0;
    iteration_misses = 0;
    consecutive_misses = 0;
    log(fmt::format("memtool pool: plan applied: pool {} B, LB {} B ({:.1f}% above), {} "
                    "allocations per iteration",
                    plan.pool_size, plan.lower_bound,
                    plan.lower_bound == 0
                        ? 0.0
                        : 100.0 * (static_cast<double>(plan.pool_size) /
                                       static_cast<double>(plan.lower_bound) -
                                   1.0),
                    plan.entries.size()));
    return true;
  }

  // --- apply ---------------------------------------------------------------------------------

  void drop_plan(std::string_view why) {
    ++counters.replans;
    log(fmt::format("memtool pool: plan dropped ({}); {} misses so far; re-planning", why,
                    counters.misses));
    state = EngineState::observe;
    reset_detection();
  }

  void end_iteration() {
    ++counters.iterations_planned;
    const double allowed =
        options.drift_miss_fraction * static_cast<double>(plan.entries.size());
    const bool drifted = static_cast<double>(iteration_misses) > allowed &&
                         iteration_misses >= options.drift_min_misses;
    k = 0;
    iteration_misses = 0;
    if (drifted) drop_plan("too many misses in one iteration");
  }

  void count_miss() {
    ++counters.misses;
    ++iteration_misses;
    if (++consecutive_misses >= options.drift_consecutive_misses) {
      drop_plan("consecutive misses");
    }
  }

  // The plan entry this request is, if any: entries[k], or a little further on when the program
  // skipped allocations (possibly into the next iteration).
  std::optional<std::size_t> match(std::uint64_t size, MemoryKind kind, StreamId stream) {
    const std::size_t n = plan.entries.size();
    const std::size_t reach = static_cast<std::size_t>(std::min<std::uint64_t>(options.lookahead, n - 1));
    for (std::size_t d = 0; d <= reach; ++d) {
      // With explicit marks only a mark ends an iteration: allocations past the plan's last
      // entry are misses, not the next iteration's first ones.
      if (boundaries_by_marks && k + d >= n) break;
      const std::size_t index = (k + d) % n;
      const detail::PlannedEntry& e = plan.entries[index];
      if (e.size == size && e.kind == kind && e.stream == stream) {
        if (k + d >= n) end_iteration();
        return index;
      }
    }
    return std::nullopt;
  }

  // Streams that touch the buffer wait once on the release events recorded on other streams.
  std::size_t order_on(LiveBuffer& buffer, StreamId stream) {
    if (contains(buffer.used_on, stream)) return 0;
    buffer.used_on.push_back(stream);
    std::size_t waits = 0;
    for (const ReleaseRef& ref : buffer.pending) {
      for (const auto& [recorded_on, event] : ref->events) {
        if (recorded_on == stream) continue;  // same stream: ordered by the stream itself
        if (device.stream_wait_event(stream, event) == kSuccess) ++waits;
      }
    }
    counters.stream_waits += waits;
    return waits;
  }

  // Tries to serve the request from the pool; nullopt → the real allocator.
  std::optional<DevicePtr> serve_from_pool(std::uint64_t size, MemoryKind kind,
                                           StreamId stream) {
    if (state == EngineState::plan && ready) {
      note_tick_boundary();
      if (at_boundary && !enter_apply()) return std::nullopt;
    }
    if (state != EngineState::apply) return std::nullopt;
    const auto index = match(size, kind, stream);
    if (state != EngineState::apply) return std::nullopt;  // end_iteration may have dropped it
    if (!index) {
      count_miss();
      return std::nullopt;
    }
    k = *index + 1;
    const detail::PlannedEntry entry = plan.entries[*index];
    std::optional<DevicePtr> result;
    if (!entry.pooled) {
      consecutive_misses = 0;  // never freed in the window: the plan says real memory
    } else if (auto offset = free_slot(entry)) {
      result = hand_out(*offset, entry.footprint, size, kind, stream);
      consecutive_misses = 0;
    } else {
      ++counters.refusals;  // invariant 1: every planned range is (partly) live
      count_miss();
    }
    if (state == EngineState::apply && k == plan.entries.size() && !boundaries_by_marks) {
      end_iteration();
    }
    return result;
  }

  // Invariant 1, checked at every hand-out whatever the plan says.
  std::optional<std::uint64_t> free_slot(const detail::PlannedEntry& entry) const {
    if (current == nullptr) return std::nullopt;
    for (std::uint64_t offset : entry.offsets) {
      if (current->range_free(offset, entry.footprint)) return offset;
    }
    return std::nullopt;
  }

  DevicePtr hand_out(std::uint64_t offset, std::uint64_t footprint, std::uint64_t size,
                     MemoryKind kind, StreamId stream) {
    std::vector<ReleaseRef> inherited = current->occupy(offset, footprint);
    LiveBuffer buffer;
    buffer.record_id = recorder.on_alloc(size, kind, stream);
    buffer.size = size;
    buffer.kind = kind;
    buffer.arena = current;
    buffer.offset = offset;
    for (ReleaseRef& ref : inherited) {
      const bool done = std::all_of(ref->events.begin(), ref->events.end(), [this](const auto& e) {
        return device.event_completed(e.second);
      });
      if (!done) buffer.pending.push_back(std::move(ref));
    }
    const DevicePtr ptr = current->base() + offset;
    auto [it, inserted] = live.insert_or_assign(ptr, std::move(buffer));
    (void)inserted;
    // cuMemAllocAsync: the memory is ordered on its stream from the allocation on.
    if (kind == MemoryKind::async) order_on(it->second, stream);
    ++counters.allocs_from_pool;
    pooled_live.fetch_add(1, std::memory_order_relaxed);
    program_live += size;
    update_peaks();
    return ptr;
  }

  void record_pass_through(DevicePtr ptr, std::uint64_t size, MemoryKind kind, StreamId stream) {
    at_boundary = false;  // an allocation since the boundary: APPLY waits for the next one
    LiveBuffer buffer;
    buffer.record_id = recorder.on_alloc(size, kind, stream);
    buffer.size = size;
    buffer.kind = kind;
    live.insert_or_assign(ptr, std::move(buffer));
    ++counters.allocs_passed_through;
    passthrough_live += size;
    program_live += size;
    update_peaks();
    push_token(trace::SignatureBuilder::alloc_token(size, kind));
  }

  // --- pooled free ---------------------------------------------------------------------------

  EventId take_event(bool& ok) {
    if (!recycler->spare.empty()) {
      const EventId e = recycler->spare.back();
      recycler->spare.pop_back();
      ok = true;
      return e;
    }
    EventId e = 0;
    ok = device.create_event(&e) == kSuccess;
    return e;
  }

  ReleaseRef make_release(const std::vector<std::pair<StreamId, EventId>>& own,
                          std::vector<std::pair<StreamId, EventId>> carried_events,
                          std::vector<ReleaseRef> carried) {
    std::weak_ptr<EventRecycler> weak = recycler;
    const std::size_t own_count = own.size();
    auto* record = new ReleaseEvents{own, std::move(carried)};
    record->events.insert(record->events.end(), carried_events.begin(), carried_events.end());
    return ReleaseRef(record, [weak, own_count](const ReleaseEvents* r) {
      if (auto shared = weak.lock()) {
        for (std::size_t i = 0; i < own_count; ++i) shared->spare.push_back(r->events[i].second);
      }
      delete r;
    });
  }

  // Records the events that order the next user of the range after this buffer's work.
  // False when an event could not be made: the range then stays occupied (safe, never reused).
  bool release_pooled(LiveBuffer& buffer, MemoryKind kind, StreamId stream) {
    if (kind == MemoryKind::async && !contains(buffer.used_on, stream)) {
      buffer.used_on.push_back(stream);  // cuMemFreeAsync: ordered on its stream
    }
    std::vector<std::pair<StreamId, EventId>> own;
    for (StreamId s : buffer.used_on) {
      bool ok = false;
      const EventId e = take_event(ok);
      if (!ok || device.record_event(e, s) != kSuccess) {
        for (const auto& [_, spare] : own) recycler->spare.push_back(spare);
        if (ok) recycler->spare.push_back(e);
        return false;
      }
      ++counters.events_recorded;
      own.emplace_back(s, e);
    }
    // A buffer no stream used leaves the earlier users' work unordered: pass their events on.
    std::vector<std::pair<StreamId, EventId>> carried_events;
    std::vector<ReleaseRef> carried;
    if (buffer.used_on.empty()) {
      for (const ReleaseRef& ref : buffer.pending) {
        for (const auto& e : ref->events) {
          if (!device.event_completed(e.second)) carried_events.push_back(e);
        }
        carried.push_back(ref);
      }
    }
    ReleaseRef record;
    if (!own.empty() || !carried_events.empty()) {
      record = make_release(own, std::move(carried_events), std::move(carried));
    }
    return buffer.arena->release(buffer.offset, std::move(record));
  }
};

// --- public interface ------------------------------------------------------------------------

PoolEngine::PoolEngine(DeviceOps& device, PoolOptions options)
    : impl_(std::make_unique<Impl>(device, std::move(options))) {}

PoolEngine::~PoolEngine() {
  shutdown();
  if (impl_->worker.joinable()) impl_->worker.join();
  // Live pools stay allocated (their memory may still be in use); drop our bookkeeping, then
  // the events it held.
  impl_->live.clear();
  impl_->arenas.clear();
  for (EventId e : impl_->recycler->spare) impl_->device.destroy_event(e);
  impl_->recycler->spare.clear();
}

DriverStatus PoolEngine::allocate(std::uint64_t size, MemoryKind kind, StreamId stream,
                                  DevicePtr* out) {
  if (out == nullptr) return kInvalidValue;
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (auto ptr = s.serve_from_pool(size, kind, stream)) {
    *out = *ptr;
    return kSuccess;
  }
  lock.unlock();
  DevicePtr ptr = 0;
  const DriverStatus status = s.device.allocate(size, kind, stream, &ptr);
  if (status != kSuccess) return status;  // nothing recorded: a failed call leaves no trace
  lock.lock();
  s.record_pass_through(ptr, size, kind, stream);
  *out = ptr;
  return kSuccess;
}

DriverStatus PoolEngine::release(DevicePtr ptr, MemoryKind kind, StreamId stream) {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  auto it = s.live.find(ptr);
  if (it == s.live.end()) {
    lock.unlock();
    return s.device.free(ptr, kind, stream);  // not ours: the driver decides
  }
  LiveBuffer buffer = std::move(it->second);
  s.live.erase(it);
  s.note_tick_boundary();
  s.recorder.on_free(buffer.record_id);
  s.program_live -= buffer.size;
  const std::uint64_t token = trace::SignatureBuilder::free_token(buffer.size);
  if (buffer.arena != nullptr) {
    PoolArena* arena = buffer.arena;
    s.release_pooled(buffer, kind, stream);
    s.pooled_live.fetch_sub(1, std::memory_order_relaxed);
    if (arena != s.current && arena->live_count() == 0) s.release_arena(arena);  // drained
    s.push_token(token);
    return kSuccess;
  }
  s.passthrough_live -= buffer.size;
  s.push_token(token);
  lock.unlock();
  return s.device.free(ptr, kind, stream);
}

std::size_t PoolEngine::touch(DevicePtr ptr, StreamId stream) {
  Impl& s = *impl_;
  if (s.pooled_live.load(std::memory_order_relaxed) == 0) return 0;
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const auto& arena : s.arenas) {
    if (!arena->contains(ptr)) continue;
    const auto range = arena->live_range_at(ptr);
    if (!range) return 0;
    auto it = s.live.find(arena->base() + range->first);
    if (it == s.live.end()) return 0;
    return s.order_on(it->second, stream);
  }
  return 0;
}

void PoolEngine::mark_iteration() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  switch (s.state) {
    case EngineState::observe:
      s.mark_ticks.push_back(s.recorder.ticks());
      if (s.mark_ticks.size() > 4) s.mark_ticks.erase(s.mark_ticks.begin());
      s.detector.mark();
      s.maybe_plan();
      break;
    case EngineState::plan:
      if (s.boundaries_by_marks) s.at_boundary = true;
      break;
    case EngineState::apply:
      if (s.boundaries_by_marks) {
        if (s.k != 0 || s.iteration_misses != 0) s.end_iteration();
      } else if (s.k != 0) {
        s.end_iteration();  // marks after a token-detected period: a boundary all the same
      }
      break;
    case EngineState::disabled: break;
  }
}

void PoolEngine::shutdown() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.state = EngineState::disabled;
  ++s.generation;
  s.ready.reset();
  std::vector<PoolArena*> idle;
  for (const auto& arena : s.arenas) {
    if (arena->live_count() == 0) idle.push_back(arena.get());
  }
  for (PoolArena* arena : idle) s.release_arena(arena);
  s.current = nullptr;
}

EngineState PoolEngine::state() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->state;
}

MemInfo PoolEngine::mem_info() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  MemInfo info;
  info.pool_reserved = s.pool_reserved;
  for (const auto& arena : s.arenas) info.pool_in_use += arena->live_bytes();
  info.passed_through_live = s.passthrough_live;
  return info;
}

Summary PoolEngine::summary() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  Summary summary = s.counters;
  summary.state = std::string(to_string(s.state));
  summary.pool_bytes = s.current != nullptr ? s.current->size() : s.counters.pool_bytes;
  return summary;
}

void PoolEngine::wait_for_planner() {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  s.planner_done.wait(lock, [&s] { return !s.worker_running; });
}

}  // namespace memtool::pool
