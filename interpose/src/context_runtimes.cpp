// ContextRuntimes: a runtime per CUDA context (see context_runtimes.hpp).
#include "memtool/interpose/context_runtimes.hpp"

#include <fmt/format.h>

#include "memtool/interpose/log.hpp"

namespace memtool::interpose {
namespace {

// Instances are numbered so that a thread's cached runtime can never belong to an instance that
// was destroyed and whose address was reused (unit tests make many).
std::atomic<std::uint64_t> g_next_instance{1};

struct ThreadCache {
  CUcontext context = nullptr;
  std::uint64_t instance = 0;
  std::uint64_t generation = 0;
  engine::Runtime* runtime = nullptr;
};
thread_local ThreadCache t_cache;

void add(engine::Summary& into, const engine::Summary& s) {
  into.state = s.state;
  into.state_reason = s.state_reason;
  if (s.iterations_planned > 0) {
    into.worst_step_served =
        into.iterations_planned == 0 ? s.worst_step_served : std::min(into.worst_step_served, s.worst_step_served);
  }
  into.allocs_in_planned_steps += s.allocs_in_planned_steps;
  into.period_allocations = std::max(into.period_allocations, s.period_allocations);
  into.iterations_planned += s.iterations_planned;
  into.pool_bytes += s.pool_bytes;
  into.lower_bound_bytes += s.lower_bound_bytes;
  into.allocs_from_pool += s.allocs_from_pool;
  into.allocs_passed_through += s.allocs_passed_through;
  into.misses += s.misses;
  into.refusals += s.refusals;
  into.replans += s.replans;
  into.plans_made += s.plans_made;
  into.plan_failures += s.plan_failures;
  into.pool_alloc_failures += s.pool_alloc_failures;
  into.pool_reclaims += s.pool_reclaims;
  into.exports_refused += s.exports_refused;
  into.bytes_swapped_out += s.bytes_swapped_out;
  into.bytes_swapped_in += s.bytes_swapped_in;
  into.swap_ins_ahead += s.swap_ins_ahead;
  into.swap_ins_on_demand += s.swap_ins_on_demand;
  into.host_bytes = std::max(into.host_bytes, s.host_bytes);
  if (!s.swap_mode.empty()) into.swap_mode = s.swap_mode;
  into.swap_ins_late += s.swap_ins_late;
  into.swap_ins_failed += s.swap_ins_failed;
  into.allocations_on_host += s.allocations_on_host;
  into.stall_ns += s.stall_ns;
  if (!s.swap_policy.empty()) into.swap_policy = s.swap_policy;
  into.swap_schedules += s.swap_schedules;
  into.swap_schedule_drops += s.swap_schedule_drops;
  into.swap_schedules_rejected += s.swap_schedules_rejected;
  into.swap_outs_scheduled += s.swap_outs_scheduled;
  into.swap_ins_scheduled += s.swap_ins_scheduled;
  into.swap_candidates_timed += s.swap_candidates_timed;
  into.swap_iterations_selecting += s.swap_iterations_selecting;
  into.swap_leaves_called_off += s.swap_leaves_called_off;
  into.swap_pinned += s.swap_pinned;
  into.swap_items_reaching_all += s.swap_items_reaching_all;
  into.swap_host_waits_refused += s.swap_host_waits_refused;
  into.swap_held_for_value_waits += s.swap_held_for_value_waits;
  into.swap_verify_checks += s.swap_verify_checks;
  into.swap_verify_mismatches += s.swap_verify_mismatches;
  if (into.swap_verify_first_mismatch.empty()) into.swap_verify_first_mismatch = s.swap_verify_first_mismatch;
  if (!s.swap_schedule.empty()) into.swap_schedule = s.swap_schedule;
  if (!s.swap_link_source.empty()) {
    into.swap_link_to_host_bytes_per_s = s.swap_link_to_host_bytes_per_s;
    into.swap_link_to_device_bytes_per_s = s.swap_link_to_device_bytes_per_s;
    into.swap_link_source = s.swap_link_source;
  }
  into.peak_device_bytes = std::max(into.peak_device_bytes, s.peak_device_bytes);
  into.stream_waits += s.stream_waits;
  into.events_recorded += s.events_recorded;
  into.peak_device_bytes_with_pool += s.peak_device_bytes_with_pool;
  into.peak_device_bytes_without_pool += s.peak_device_bytes_without_pool;
  into.budget_bytes = std::max(into.budget_bytes, s.budget_bytes);
  into.budget_refusals += s.budget_refusals;
  into.allocation_failures += s.allocation_failures;
}

}  // namespace

ContextRuntimes::ContextRuntimes(engine::StrategyOptions options, engine::Device& device, engine::Observer& observer,
                                 CurrentContext current_context)
    : options_(std::move(options)),
      device_(device),
      observer_(observer),
      current_context_(current_context),
      max_runtimes_(8),
      instance_(g_next_instance.fetch_add(1, std::memory_order_relaxed)) {
  entries_.reserve(max_runtimes_);
}

engine::Runtime& ContextRuntimes::make_locked(CUcontext context) {
  for (Entry& e : entries_) {
    if (e.context == context && !e.ended) return *e.runtime;
  }
  if (entries_.size() >= max_runtimes_) {
    MEMTOOL_LOG_ONCE(LogLevel::warn, "more than {} CUDA contexts: the later ones share the last one's strategy",
                     max_runtimes_);
    return *entries_.back().runtime;
  }
  const auto id = static_cast<std::uint32_t>(entries_.size());
  auto stack = engine::build_strategy(options_, device_, &observer_);
  Entry entry;
  entry.context = context;
  entry.runtime = std::make_unique<engine::Runtime>(id, options_.name, std::move(stack), observer_);
  if (entry.runtime->wants_accesses()) wants_accesses_.store(true, std::memory_order_relaxed);
  entries_.push_back(std::move(entry));
  count_.store(entries_.size(), std::memory_order_release);
  return *entries_.back().runtime;
}

engine::Runtime& ContextRuntimes::current() {
  CUcontext context = nullptr;
  if (current_context_ != nullptr) (void)current_context_(&context);
  ThreadCache& cache = t_cache;
  const std::uint64_t generation = generation_.load(std::memory_order_acquire);
  if (cache.runtime != nullptr && cache.context == context && cache.instance == instance_ &&
      cache.generation == generation) {
    return *cache.runtime;
  }
  std::lock_guard lock(mutex_);
  engine::Runtime& runtime = make_locked(context);
  cache = ThreadCache{context, instance_, generation, &runtime};
  return runtime;
}

engine::Runtime& ContextRuntimes::owner(std::uint32_t id) {
  if (id < count_.load(std::memory_order_acquire)) return *entries_[id].runtime;
  return current();
}

ContextRuntimes::Scope::Scope(const ContextRuntimes& runtimes, std::size_t i) : runtimes_(runtimes) {
  if (runtimes.count_.load(std::memory_order_acquire) < 2 || runtimes.push_ == nullptr || runtimes.pop_ == nullptr ||
      runtimes.current_context_ == nullptr) {
    return;  // one context: it is the current one
  }
  const CUcontext own = runtimes.entries_[i].context;
  CUcontext current = nullptr;
  (void)runtimes.current_context_(&current);
  if (own == nullptr || own == current) return;
  pushed_ = runtimes.push_(own) == CUDA_SUCCESS;
}

ContextRuntimes::Scope::~Scope() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  (void)runtimes_.pop_(&popped);
}

bool ContextRuntimes::device_of(CUcontext context, CUdevice* out) const {
  if (context_device_ == nullptr || out == nullptr) return false;
  if (context == nullptr) return context_device_(out) == CUDA_SUCCESS;
  if (push_ == nullptr || pop_ == nullptr || push_(context) != CUDA_SUCCESS) return false;
  const bool known = context_device_(out) == CUDA_SUCCESS;
  CUcontext popped = nullptr;
  (void)pop_(&popped);
  return known;
}

engine::Status ContextRuntimes::deallocate(std::uint32_t owner_id, std::uint64_t ptr, engine::MemoryKind kind,
                                           engine::StreamId stream) {
  if (owner_id < count_.load(std::memory_order_acquire)) {
    const Scope scope(*this, owner_id);
    return entries_[owner_id].runtime->deallocate(ptr, kind, stream);
  }
  return current().deallocate(ptr, kind, stream);
}

std::optional<engine::BufferExtent> ContextRuntimes::extent_of(std::uint64_t ptr) const {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    if (auto extent = entries_[i].runtime->extent_of(ptr)) {
      extent->id = (std::uint64_t{1} << 63) | (std::uint64_t{i} << 48) | (extent->id & ((std::uint64_t{1} << 48) - 1));
      return extent;
    }
  }
  return std::nullopt;
}

engine::ExportPin ContextRuntimes::pin_for_export(std::uint64_t ptr) {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    const Scope scope(*this, i);
    const engine::ExportPin pin = entries_[i].runtime->pin_for_export(ptr);
    if (pin != engine::ExportPin::not_served) return pin;
  }
  return engine::ExportPin::not_served;
}

void ContextRuntimes::before_access(std::span<const std::uint64_t> bases, engine::StreamId stream) {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    const Scope scope(*this, i);
    entries_[i].runtime->before_access(bases, stream);
  }
}

void ContextRuntimes::before_item(const engine::WorkItem& item) {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) entries_[i].runtime->before_item(item);
}

void ContextRuntimes::on_host_sync(engine::StreamId stream, std::uint64_t waited_ns) {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) entries_[i].runtime->on_host_sync(stream, waited_ns);
}

void ContextRuntimes::end_context(CUcontext context, const char* why) {
  std::lock_guard lock(mutex_);
  for (Entry& e : entries_) {
    if (e.ended || (context != nullptr && e.context != context)) continue;
    e.ended = true;
    e.runtime->shutdown(true);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    Log::write(LogLevel::info, "memtool {}: {} ends the context: its strategy stops, idle memory released",
               options_.name, why);
  }
}

void ContextRuntimes::end_all(const char* why) { end_context(nullptr, why); }

void ContextRuntimes::fail_all(const char* reason) {
  if (failed_.exchange(true)) return;
  Log::write(LogLevel::error, "memtool {} disabled, new allocations pass through to the driver: {}", options_.name,
             reason);
  shutdown_all(false);
}

engine::Summary ContextRuntimes::summary() {
  std::lock_guard lock(mutex_);
  engine::Summary total;
  total.strategy = options_.name;
  for (const Entry& e : entries_) add(total, e.runtime->summary());
  return total;
}

void ContextRuntimes::shutdown_all(bool release_memory) {
  std::lock_guard lock(mutex_);
  for (Entry& e : entries_) e.runtime->shutdown(release_memory);
}

}  // namespace memtool::interpose
