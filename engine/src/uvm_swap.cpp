// UvmSwap: MEMTOOL_STRATEGY=swap in UVM mode (see resources.hpp).
//
// Allocations of at least `min_bytes` are served as managed memory instead of device memory.
// The program's pointer never changes and every access, seen or not, reads the right bytes:
// the driver migrates pages on demand. What memtool adds is *when* they move, so that the
// device-resident bytes stay within the budget without the program waiting on page faults:
//  - Time is counted in work items (launches, copies, memsets: before_work), restarting at each
//    iteration boundary; buffers are known across iterations by their allocation's ordinal in
//    the iteration (a buffer allocated before the first boundary by its address).
//  - Swap-out (Belady's rule, with the last iteration as the oracle): when the resident bytes
//    pass the budget, the resident buffer whose next use lies farthest ahead is prefetched to
//    the host on a side stream, after an event recorded where it was last used.
//  - Swap-in, ahead: at each work item, the buffers the last iteration used within the next
//    `lookahead` items are prefetched to the device on another side stream if they fit (or by
//    evicting only buffers needed later than they are); their consumer's stream waits on that
//    prefetch's event. Swap-in on demand: a buffer touched while on the host is prefetched on
//    the consumer's own stream, in stream order, before the work (counted: the plan missed).
// Stream-ordered frees of managed buffers are deferred until an event recorded at the free has
// completed (polled; never a host wait), so in-flight work never loses its memory.
//
// Thread-safe: one mutex around the bookkeeping; driver calls are made under it (they are
// asynchronous enqueues, except allocation and free).
#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"
#include "memtool/engine/resources.hpp"
#include "spare_events.hpp"

namespace memtool::engine {
namespace {

constexpr std::uint64_t kFar = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kPersistentKey = std::uint64_t{1} << 63;

struct Managed {
  std::uint64_t size = 0;
  std::uint64_t key = 0;
  bool resident = true;
  StreamId last_stream = 0;
  std::uint64_t last_work = 0;  // absolute work counter of its last use
  EventId arrival = 0;          // a swap-in ahead in flight: its consumer waits on this
  bool arrival_pending = false;
};

struct DeferredFree {
  DevicePtr ptr = 0;
  std::uint64_t size = 0;
  EventId event = 0;
};

class UvmSwap final : public Adaptor {
 public:
  UvmSwap(Device& device, std::unique_ptr<Resource> upstream, SwapOptions options)
      : Adaptor(std::move(upstream)), device_(device), options_(options) {}

  ~UvmSwap() override {
    std::lock_guard lock(mutex_);
    spare_events_.destroy_all(device_);
  }

  std::string_view name() const override { return "uvm-swap"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    const bool candidate = (request.kind == MemoryKind::device || request.kind == MemoryKind::async) &&
                           request.memory_pool == 0 && request.size >= options_.min_bytes &&
                           !managed_unavailable_.load(std::memory_order_relaxed);
    if (!candidate) return Adaptor::allocate(request, out);
    std::lock_guard lock(mutex_);
    collect_deferred_frees();
    make_room(request.size, 0, nullptr);
    DevicePtr ptr = 0;
    Status status = device_.allocate_managed(request.size, &ptr);
    if (status == kNotSupported) {
      managed_unavailable_.store(true, std::memory_order_relaxed);
      log(LogLevel::warn, "memtool swap: the driver has no managed memory; swapping is off, allocations pass through");
    }
    if (status != kSuccess) {
      ++counters_.allocation_failures;
      // Managed memory is out too: the device allocation the program asked for (what the
      // driver would have answered without memtool).
      return Adaptor::allocate(request, out);
    }
    // First touch on the device, in the allocation's stream order, so the first kernel does
    // not fault it in page by page.
    (void)device_.prefetch(ptr, request.size, Residence::device, request.stream);
    Managed m;
    m.size = request.size;
    m.key = iteration_started_ ? next_ordinal_++ : (kPersistentKey | ptr);
    m.last_stream = request.stream;
    m.last_work = work_;
    managed_.emplace(ptr, m);
    resident_bytes_ += request.size;
    live_bytes_ += request.size;
    update_peaks();
    *out = ptr;
    return kSuccess;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    std::unique_lock lock(mutex_);
    const auto it = managed_.find(ptr);
    if (it == managed_.end()) {
      lock.unlock();
      return Adaptor::deallocate(ptr, kind, stream);
    }
    const Managed m = it->second;
    managed_.erase(it);
    live_bytes_ -= m.size;
    if (m.arrival_pending) recycle(m.arrival);
    if (m.resident) {
      resident_bytes_ -= m.size;
    } else {
      counters_.host_bytes_now -= std::min(counters_.host_bytes_now, m.size);
    }
    if (kind == MemoryKind::async) {
      // The free is in stream order: work queued before it may still use the memory.
      bool ok = false;
      const EventId e = take_event(ok);
      if (ok && device_.record_event(e, stream) == kSuccess) {
        const std::uint64_t on_device = m.resident ? m.size : 0;
        deferred_.push_back(DeferredFree{ptr, on_device, e});
        deferred_bytes_ += on_device;
        collect_deferred_frees();
        return kSuccess;
      }
      if (ok) recycle(e);
      // No event: cuMemFree of managed memory waits for the device's work itself.
    }
    collect_deferred_frees();
    return device_.free(ptr, MemoryKind::managed, stream);
  }

  void before_work(std::span<const DevicePtr> bases, StreamId stream) override {
    Adaptor::before_work(bases, stream);
    std::lock_guard lock(mutex_);
    ++work_;
    const std::uint64_t now = work_ - iteration_begin_;
    collect_deferred_frees();
    current_.clear();
    for (const DevicePtr base : bases) {
      const auto it = managed_.find(base);
      if (it != managed_.end()) current_.push_back(base);
    }
    for (const DevicePtr base : current_) {
      Managed& m = managed_.at(base);
      log_use(m.key, now);
      if (m.arrival_pending) {
        if (device_.stream_wait_event(stream, m.arrival) == kSuccess) ++counters_.stream_waits;
        recycle(m.arrival);
        m.arrival_pending = false;
      } else if (!m.resident) {
        // The plan did not bring it back in time: in the consumer's stream order, before the work.
        make_room(m.size, 0, &current_);
        (void)device_.prefetch(base, m.size, Residence::device, stream);
        m.resident = true;
        resident_bytes_ += m.size;
        counters_.host_bytes_now -= std::min(counters_.host_bytes_now, m.size);
        counters_.bytes_swapped_in += m.size;
        ++counters_.swap_ins_on_demand;
      }
      m.last_stream = stream;
      m.last_work = work_;
    }
    make_room(0, 0, &current_);
    prefetch_ahead(now);
    update_peaks();
  }

  void on_boundary(const Boundary& boundary) override {
    Adaptor::on_boundary(boundary);
    std::lock_guard lock(mutex_);
    // The iteration that just ended is the oracle of the next one.
    if (iteration_started_) {
      last_uses_.clear();
      for (const auto& [key, when] : uses_) last_uses_[key].push_back(when);
      last_length_ = work_ - iteration_begin_;
      ++counters_.iterations_planned;
    }
    uses_.clear();
    iteration_started_ = true;
    iteration_begin_ = work_;
    next_ordinal_ = 0;
  }

  bool wants_accesses() const override { return true; }

  MemoryUse memory_use() const override {
    MemoryUse use = Adaptor::memory_use();
    std::lock_guard lock(mutex_);
    use.reserved += resident_bytes_ + deferred_bytes_;
    use.in_use += live_bytes_;
    return use;
  }

  void summarize(Summary& s) const override {
    Adaptor::summarize(s);
    std::lock_guard lock(mutex_);
    s.strategy = "swap";
    s.state = managed_unavailable_.load(std::memory_order_relaxed) ? "disabled" : (last_length_ != 0 ? "apply" : "observe");
    s.budget_bytes = options_.budget_bytes;
    s.bytes_swapped_out += counters_.bytes_swapped_out;
    s.bytes_swapped_in += counters_.bytes_swapped_in;
    s.swap_ins_on_demand += counters_.swap_ins_on_demand;
    s.swap_ins_ahead += counters_.swap_ins_ahead;
    s.host_bytes = std::max(s.host_bytes, counters_.host_bytes);
    s.stream_waits += counters_.stream_waits;
    s.iterations_planned += counters_.iterations_planned;
    s.peak_device_bytes = std::max(s.peak_device_bytes, counters_.peak_device_bytes);
    s.peak_device_bytes_with_pool = std::max(s.peak_device_bytes_with_pool, counters_.peak_device_bytes);
    s.peak_device_bytes_without_pool = std::max(s.peak_device_bytes_without_pool, counters_.peak_device_bytes_without_pool);
    s.allocation_failures += counters_.allocation_failures;
  }

  std::uint64_t reclaim() override {
    std::uint64_t freed = Adaptor::reclaim();
    std::lock_guard lock(mutex_);
    const std::uint64_t before = resident_bytes_;
    make_room(before, 0, nullptr);  // everything idle to the host
    return freed + (before - resident_bytes_);
  }

 private:
  void log_use(std::uint64_t key, std::uint64_t when) { uses_.emplace_back(key, when); }

  // When the last iteration next used `key` after work item `now` (relative); kFar if never.
  std::uint64_t next_use(std::uint64_t key, std::uint64_t now) const {
    const auto it = last_uses_.find(key);
    if (it == last_uses_.end() || it->second.empty()) return kFar;
    const auto& when = it->second;  // ascending
    const auto later = std::upper_bound(when.begin(), when.end(), now);
    if (later != when.end()) return *later - now;
    return last_length_ - now + when.front();  // next iteration's first use
  }

  std::uint64_t device_budget() const {
    const std::uint64_t others = Adaptor::memory_use().reserved;
    return options_.budget_bytes > others ? options_.budget_bytes - others : 0;
  }

  std::uint64_t host_limit() const { return options_.host_limit_bytes == 0 ? kFar : options_.host_limit_bytes; }

  // Swap out resident buffers, farthest next use first, until `incoming` more bytes fit in the
  // budget; only buffers needed later than `needed_in` (work items from now) and not used by the
  // current work item (`busy`) go. `optional`: the caller gives up when there is no room (a
  // swap-in ahead), so falling short is not worth a word.
  void make_room(std::uint64_t incoming, std::uint64_t needed_in, const std::vector<DevicePtr>* busy,
                 bool optional = false) {
    if (options_.budget_bytes == 0) return;
    const std::uint64_t budget = device_budget();
    if (resident_bytes_ + deferred_bytes_ + incoming <= budget) return;
    const std::uint64_t now = work_ - iteration_begin_;
    struct Victim {
      std::uint64_t distance;
      std::uint64_t last_work;
      DevicePtr ptr;
    };
    std::vector<Victim> victims;
    for (const auto& [ptr, m] : managed_) {
      if (!m.resident || m.arrival_pending) continue;
      if (busy != nullptr && std::find(busy->begin(), busy->end(), ptr) != busy->end()) continue;
      const std::uint64_t distance = next_use(m.key, now);
      if (distance != kFar && distance <= needed_in) continue;
      victims.push_back(Victim{distance, m.last_work, ptr});
    }
    // Farthest next use first; unknown futures by least recent use.
    std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
      if (a.distance != b.distance) return a.distance > b.distance;
      return a.last_work < b.last_work;
    });
    for (const Victim& v : victims) {
      if (resident_bytes_ + deferred_bytes_ + incoming <= budget) break;
      Managed& m = managed_.at(v.ptr);
      if (counters_.host_bytes_now + m.size > host_limit()) continue;
      swap_out(v.ptr, m);
    }
    if (resident_bytes_ + deferred_bytes_ + incoming > budget && !optional && !said_over_budget_) {
      said_over_budget_ = true;
      log(LogLevel::warn,
          fmt::format("memtool swap: the budget of {} B cannot be met here ({} B must stay on the device); the "
                      "driver's own paging keeps the program running",
                      options_.budget_bytes, resident_bytes_ + deferred_bytes_ + incoming + Adaptor::memory_use().reserved));
    }
  }

  void swap_out(DevicePtr ptr, Managed& m) {
    StreamId side = 0;
    if (!side_stream(out_stream_, side)) return;
    bool ok = false;
    const EventId e = take_event(ok);
    // After the last work that used it, on the side stream: the compute stream never waits.
    if (ok && device_.record_event(e, m.last_stream) == kSuccess) (void)device_.stream_wait_event(side, e);
    if (ok) recycle(e);
    if (device_.prefetch(ptr, m.size, Residence::host, side) != kSuccess) return;
    m.resident = false;
    resident_bytes_ -= m.size;
    counters_.bytes_swapped_out += m.size;
    counters_.host_bytes_now += m.size;
    counters_.host_bytes = std::max(counters_.host_bytes, counters_.host_bytes_now);
  }

  // Bring back, on the swap-in stream, what the last iteration used in the next few work items.
  void prefetch_ahead(std::uint64_t now) {
    if (last_length_ == 0 || options_.lookahead == 0) return;
    for (auto& [ptr, m] : managed_) {
      if (m.resident) continue;
      const std::uint64_t distance = next_use(m.key, now);
      if (distance == kFar || distance > options_.lookahead) continue;
      make_room(m.size, distance, &current_, true);
      if (options_.budget_bytes != 0 && resident_bytes_ + deferred_bytes_ + m.size > device_budget()) continue;
      StreamId side = 0;
      if (!side_stream(in_stream_, side)) return;
      if (device_.prefetch(ptr, m.size, Residence::device, side) != kSuccess) continue;
      bool ok = false;
      const EventId e = take_event(ok);
      if (ok && device_.record_event(e, side) == kSuccess) {
        m.arrival = e;
        m.arrival_pending = true;
      } else if (ok) {
        recycle(e);
      }
      m.resident = true;
      resident_bytes_ += m.size;
      counters_.host_bytes_now -= std::min(counters_.host_bytes_now, m.size);
      counters_.bytes_swapped_in += m.size;
      ++counters_.swap_ins_ahead;
    }
  }

  bool side_stream(StreamId& slot, StreamId& out) {
    if (slot == 0 && device_.create_stream(&slot) != kSuccess) {
      slot = 0;
      return false;
    }
    out = slot;
    return true;
  }

  void collect_deferred_frees() {
    std::erase_if(deferred_, [this](const DeferredFree& d) {
      if (!device_.event_completed(d.event)) return false;
      (void)device_.free(d.ptr, MemoryKind::managed, 0);
      deferred_bytes_ -= d.size;
      recycle(d.event);
      return true;
    });
  }

  EventId take_event(bool& ok) { return spare_events_.take(device_, ok); }
  void recycle(EventId e) { spare_events_.give(e); }

  void update_peaks() {
    const std::uint64_t device = resident_bytes_ + deferred_bytes_ + Adaptor::memory_use().reserved;
    counters_.peak_device_bytes = std::max(counters_.peak_device_bytes, device);
    counters_.peak_device_bytes_without_pool =
        std::max(counters_.peak_device_bytes_without_pool, live_bytes_ + Adaptor::memory_use().in_use);
  }

  struct Counters {
    std::uint64_t bytes_swapped_out = 0;
    std::uint64_t bytes_swapped_in = 0;
    std::uint64_t swap_ins_on_demand = 0;
    std::uint64_t swap_ins_ahead = 0;
    std::uint64_t host_bytes = 0;      // peak bytes on the host
    std::uint64_t host_bytes_now = 0;
    std::uint64_t stream_waits = 0;
    std::uint64_t iterations_planned = 0;
    std::uint64_t peak_device_bytes = 0;
    std::uint64_t peak_device_bytes_without_pool = 0;
    std::uint64_t allocation_failures = 0;
  };

  Device& device_;
  const SwapOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<DevicePtr, Managed> managed_;
  std::vector<DeferredFree> deferred_;
  detail::SpareEvents spare_events_;
  std::vector<DevicePtr> current_;  // the managed buffers of the work item being issued
  std::vector<std::pair<std::uint64_t, std::uint64_t>> uses_;  // (key, relative work) this iteration
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> last_uses_;
  std::uint64_t last_length_ = 0;  // work items in the last complete iteration
  std::uint64_t work_ = 0;
  std::uint64_t iteration_begin_ = 0;
  std::uint64_t next_ordinal_ = 0;
  bool iteration_started_ = false;
  std::uint64_t resident_bytes_ = 0;
  std::uint64_t deferred_bytes_ = 0;
  std::uint64_t live_bytes_ = 0;
  StreamId out_stream_ = 0;
  StreamId in_stream_ = 0;
  std::atomic<bool> managed_unavailable_{false};
  bool said_over_budget_ = false;
  Counters counters_;
};

}  // namespace

std::unique_ptr<Resource> make_uvm_swap(Device& device, std::unique_ptr<Resource> upstream, SwapOptions options) {
  return std::make_unique<UvmSwap>(device, std::move(upstream), options);
}

}  // namespace memtool::engine
