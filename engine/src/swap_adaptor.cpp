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
//
// Thread-safe: one mutex around the bookkeeping; driver calls are made under it (they are
// asynchronous enqueues, except allocation, mapping and free).
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_set>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"
#include "memtool/engine/resources.hpp"
#include "spare_events.hpp"
#include "swap_mover.hpp"

namespace memtool::engine {
namespace {

using detail::SwapBuffer;

constexpr std::uint64_t kFar = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kPersistentKey = std::uint64_t{1} << 63;
constexpr std::uint64_t kMaxLead = 1024;  // work items

class SwapAdaptor final : public Adaptor {
 public:
  SwapAdaptor(Device& device, std::unique_ptr<Resource> upstream, SwapOptions options)
      : Adaptor(std::move(upstream)), device_(device), options_(options) {
    if (options_.mode == SwapMechanism::explicit_copies) {
      mover_ = detail::make_vmm_mover(device_, spare_events_, options_.host_limit_bytes);
      if (!mover_) {
        log(LogLevel::warn, "memtool swap: the driver cannot map host memory into the device (VMM with "
                            "CU_MEM_LOCATION_TYPE_HOST, CUDA 12.2 on); swapping through managed memory instead");
      }
    }
    if (!mover_) mover_ = detail::make_uvm_mover(device_);
  }

  ~SwapAdaptor() override {
    std::lock_guard lock(mutex_);
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
    in_flight_.erase(std::this_thread::get_id());
    collect_frees(false);
    SwapBuffer b;
    b.size = request.size;
    make_room(mover_->footprint_of(request.size), 0, Room::wait);
    DevicePtr ptr = 0;
    Status status = mover_->allocate(b, request.stream, &ptr);
    if (status == kOutOfMemory) {
      // Device memory still held by copies under way or frees not yet reached: wait for them.
      settle(true);
      status = mover_->allocate(b, request.stream, &ptr);
    }
    if (status == kOutOfMemory && mover_->allocate_on_host(b, &ptr) == kSuccess) {
      // Still none: the buffer starts on the host, mapped at its address (slower, never wrong).
      status = kSuccess;
      ++counters_.born_on_host;
      counters_.host_bytes_now += b.size;
      counters_.host_bytes = std::max(counters_.host_bytes, counters_.host_bytes_now);
    }
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
    b.key = iteration_started_ ? next_ordinal_++ : (kPersistentKey | ptr);
    b.id = ++next_id_;
    b.streams.push_back(request.stream);
    b.last_work = work_;
    if (iteration_started_) allocations_.emplace_back(work_ - iteration_begin_, b.footprint);
    buffers_.emplace(ptr, b);
    live_bytes_ += request.size;
    update_peaks();
    *out = ptr;
    return kSuccess;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    std::unique_lock lock(mutex_);
    in_flight_.erase(std::this_thread::get_id());
    const auto it = buffers_.find(ptr);
    if (it == buffers_.end()) {
      lock.unlock();
      return Adaptor::deallocate(ptr, kind, stream);
    }
    SwapBuffer& b = it->second;
    live_bytes_ -= b.size;
    if (b.arrival_pending) {
      recycle(b.arrival);
      b.arrival_pending = false;
    }
    // Work queued before the free may still use the memory: a stream-ordered free on its
    // stream, a synchronous one (the driver would wait for the device) after every stream that
    // used it, joined on the swap-out stream.
    StreamId after = stream;
    if (kind != MemoryKind::async && side_stream(out_stream_, after)) join_uses(b, after);
    bool ok = false;
    const EventId e = take_event(ok);
    if (ok && device_.record_event(e, after) == kSuccess) {
      // The node moves whole: the mover's pointer to the buffer stays good.
      dying_.insert(buffers_.extract(it));
      free_events_.emplace(ptr, e);
      mover_->settle(false);
      if (stopped_) {  // no later call may come to collect it
        collect_frees(true);
        mover_->trim();
      }
      return kSuccess;
    }
    if (ok) recycle(e);
    // No event: only a host wait would order the free; the driver's free of managed memory does
    // that itself, explicit memory is released now (its last use was issued before the free).
    if (!b.resident) counters_.host_bytes_now -= std::min(counters_.host_bytes_now, b.size);
    mover_->free(ptr, b);
    buffers_.erase(it);
    return kSuccess;
  }

  void before_work(std::span<const DevicePtr> bases, StreamId stream) override {
    Adaptor::before_work(bases, stream);
    std::lock_guard lock(mutex_);
    ++work_;
    const std::uint64_t now = work_ - iteration_begin_;
    std::vector<DevicePtr>& current = in_flight_[std::this_thread::get_id()];
    current.clear();  // this thread's previous work is queued by now
    mover_->settle(false);
    collect_frees(false);
    for (const DevicePtr base : bases) {
      if (buffers_.contains(base)) current.push_back(base);
    }
    for (const DevicePtr base : current) {
      SwapBuffer& b = buffers_.at(base);
      uses_.emplace_back(b.key, now);
      if (!b.resident) bring_back_now(base, b, stream);
      if (b.arrival_pending) {
        // Every stream waits for the copy back until it has arrived, not only the first user.
        const bool arrived_already = device_.event_completed(b.arrival);
        if (b.arrival_ahead && !arrived_already) {
          ++counters_.swap_ins_late;
          grow_lead(b.key);
        }
        b.arrival_ahead = false;
        if (arrived_already) {
          recycle(b.arrival);
          b.arrival_pending = false;
        } else if (device_.stream_wait_event(stream, b.arrival) == kSuccess) {
          ++counters_.stream_waits;
        }
      }
      if (std::find(b.streams.begin(), b.streams.end(), stream) == b.streams.end()) b.streams.push_back(stream);
      b.last_work = work_;
    }
    make_room(0, 0, Room::warn);
    prefetch_ahead(now);
    // Leave early for what the next few items will allocate, so the copies out are done by then.
    make_room(upcoming_allocations(now, options_.lookahead), options_.lookahead, Room::quiet);
    update_peaks();
  }

  void on_boundary(const Boundary& boundary) override {
    Adaptor::on_boundary(boundary);
    std::lock_guard lock(mutex_);
    // The iteration that just ended is the oracle of the next one.
    if (iteration_started_) {
      last_uses_.clear();
      for (const auto& [key, when] : uses_) last_uses_[key].push_back(when);
      last_allocations_.assign(allocations_.begin(), allocations_.end());
      for (std::size_t i = 1; i < last_allocations_.size(); ++i) last_allocations_[i].second += last_allocations_[i - 1].second;
      last_length_ = work_ - iteration_begin_;
      ++counters_.iterations_planned;
    }
    uses_.clear();
    allocations_.clear();
    iteration_started_ = true;
    iteration_begin_ = work_;
    next_ordinal_ = 0;
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

  // cuIpcGetMemHandle cannot export a swapped buffer (VMM or managed memory): refused, and that
  // allocation is the driver's own from the next iteration on, when the export succeeds.
  bool refuse_export(DevicePtr ptr) override {
    {
      std::lock_guard lock(mutex_);
      const auto it = buffers_.find(ptr);
      if (it != buffers_.end()) {
        if ((it->second.key & kPersistentKey) == 0) exported_.insert(it->second.key);
        ++counters_.exports_refused;
        return true;
      }
    }
    return Adaptor::refuse_export(ptr);
  }

  MemoryUse memory_use() const override {
    MemoryUse use = Adaptor::memory_use();
    std::lock_guard lock(mutex_);
    use.reserved += mover_->device_bytes();
    use.in_use += live_bytes_;
    return use;
  }

  void summarize(Summary& s) const override {
    Adaptor::summarize(s);
    std::lock_guard lock(mutex_);
    s.strategy = "swap";
    const bool off = unavailable_.load(std::memory_order_relaxed);
    s.state = off ? "disabled" : (last_length_ != 0 ? "apply" : "observe");
    s.swap_mode = off ? "" : std::string(mover_->mode());
    s.budget_bytes = options_.budget_bytes;
    s.bytes_swapped_out += counters_.bytes_swapped_out;
    s.bytes_swapped_in += counters_.bytes_swapped_in;
    s.swap_ins_on_demand += counters_.swap_ins_on_demand;
    s.swap_ins_ahead += counters_.swap_ins_ahead;
    s.swap_ins_late += counters_.swap_ins_late;
    s.swap_ins_failed += counters_.swap_ins_failed;
    s.allocations_on_host += counters_.born_on_host;
    s.stall_ns += mover_->stall_ns();
    s.host_bytes = std::max(s.host_bytes, counters_.host_bytes);
    s.stream_waits += counters_.stream_waits;
    s.iterations_planned += counters_.iterations_planned;
    s.peak_device_bytes = std::max(s.peak_device_bytes, counters_.peak_device_bytes);
    s.peak_device_bytes_with_pool = std::max(s.peak_device_bytes_with_pool, counters_.peak_device_bytes);
    s.peak_device_bytes_without_pool = std::max(s.peak_device_bytes_without_pool, counters_.peak_device_bytes_without_pool);
    s.allocation_failures += counters_.allocation_failures;
    s.exports_refused += counters_.exports_refused;
  }

  std::uint64_t reclaim() override {
    std::uint64_t freed = Adaptor::reclaim();
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
    if (release_memory) lock.lock();
    else if (!lock.try_lock()) return;
    stopped_ = true;
    settle(true);
    mover_->trim();
  }

 private:
  // An allocation that is not swapped (small, pitched, from the program's pool) still counts
  // against the budget: room is made for it first, and a refusal of the driver's is retried once
  // what swapping can free is free.
  Status allocate_beside(const AllocationRequest& request, DevicePtr* out) {
    if (options_.budget_bytes != 0) {
      std::lock_guard lock(mutex_);
      in_flight_.erase(std::this_thread::get_id());
      make_room(request.size, 0, Room::quiet);
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
    return status;
  }

  // When the last iteration next used `key` after work item `now` (relative); kFar if never.
  std::uint64_t next_use(std::uint64_t key, std::uint64_t now) const {
    const auto it = last_uses_.find(key);
    if (it == last_uses_.end() || it->second.empty()) return kFar;
    const auto& when = it->second;  // ascending
    const auto later = std::upper_bound(when.begin(), when.end(), now);
    if (later != when.end()) return *later - now;
    return last_length_ - now + when.front();  // next iteration's first use
  }

  // Device bytes the last iteration allocated for swap candidates in work items (now, now + horizon].
  std::uint64_t upcoming_allocations(std::uint64_t now, std::uint64_t horizon) const {
    if (last_allocations_.empty()) return 0;
    const auto before = [&](std::uint64_t when) {
      const auto it = std::upper_bound(last_allocations_.begin(), last_allocations_.end(), when,
                                       [](std::uint64_t w, const auto& a) { return w < a.first; });
      return it == last_allocations_.begin() ? std::uint64_t{0} : std::prev(it)->second;
    };
    return before(now + horizon) - before(now);
  }

  std::uint64_t lead_of(std::uint64_t key) const {
    const auto it = lead_.find(key);
    return it == lead_.end() ? options_.lookahead : it->second;
  }
  void grow_lead(std::uint64_t key) {
    auto [it, inserted] = lead_.emplace(key, options_.lookahead);
    (void)inserted;
    it->second = std::min(kMaxLead, std::max<std::uint64_t>(1, it->second * 2));
  }

  std::uint64_t device_budget() const {
    const std::uint64_t others = Adaptor::memory_use().reserved;
    return options_.budget_bytes > others ? options_.budget_bytes - others : 0;
  }

  std::uint64_t host_limit() const { return options_.host_limit_bytes == 0 ? kFar : options_.host_limit_bytes; }

  // Device bytes once the copies under way have finished.
  std::uint64_t committed() const { return mover_->device_bytes() - mover_->leaving_bytes(); }

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
    const std::uint64_t budget = device_budget();
    if (committed() + incoming <= budget) return;
    const std::uint64_t now = work_ - iteration_begin_;
    struct Victim {
      std::uint64_t distance;
      std::uint64_t last_work;
      DevicePtr ptr;
    };
    std::vector<Victim> victims;
    const auto issuing = [this](DevicePtr ptr) {
      for (const auto& [thread, bases] : in_flight_) {
        if (std::find(bases.begin(), bases.end(), ptr) != bases.end()) return true;
      }
      return false;
    };
    for (const auto& [ptr, b] : buffers_) {
      if (!b.resident) continue;
      if (issuing(ptr)) continue;
      const std::uint64_t distance = next_use(b.key, now);
      if (distance != kFar && distance <= needed_in) continue;
      victims.push_back(Victim{distance, b.last_work, ptr});
    }
    // Farthest next use first; unknown futures by least recent use.
    std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
      if (a.distance != b.distance) return a.distance > b.distance;
      return a.last_work < b.last_work;
    });
    for (const Victim& v : victims) {
      if (committed() + incoming <= budget) break;
      SwapBuffer& b = buffers_.at(v.ptr);
      if (counters_.host_bytes_now + b.size > host_limit()) {
        if (!said_host_limit_) {
          said_host_limit_ = true;
          log(LogLevel::warn, fmt::format("memtool swap: the host limit of {} B is reached (MEMTOOL_HOST_LIMIT); "
                                          "buffers that would pass it stay on the device",
                                          options_.host_limit_bytes));
        }
        continue;
      }
      swap_out(v.ptr, b);
    }
    if (room == Room::quiet) return;
    if (room == Room::wait && mover_->device_bytes() + incoming > budget && mover_->leaving_bytes() != 0) settle(true);
    if (committed() + incoming > budget && !said_over_budget_) {
      said_over_budget_ = true;
      log(LogLevel::warn,
          fmt::format("memtool swap: the budget of {} B cannot be met here ({} B must stay on the device); "
                      "memory beyond it is used as the device allows",
                      options_.budget_bytes, committed() + incoming + Adaptor::memory_use().reserved));
    }
  }

  void swap_out(DevicePtr ptr, SwapBuffer& b) {
    StreamId side = 0;
    if (!side_stream(out_stream_, side)) return;
    // After the last work that used it on every stream, on the side stream: the compute streams
    // never wait.
    if (!join_uses(b, side)) return;
    if (b.arrival_pending) {
      // Brought back ahead but needed later than what needs the room now: after that copy.
      (void)device_.stream_wait_event(side, b.arrival);
      recycle(b.arrival);
      b.arrival_pending = false;
    }
    if (!mover_->move_out(ptr, b, side)) return;
    b.streams.clear();
    counters_.bytes_swapped_out += b.size;
    counters_.host_bytes_now += b.size;
    counters_.host_bytes = std::max(counters_.host_bytes, counters_.host_bytes_now);
  }

  // Orders `side` after the work queued so far on every stream that used `b`; false if an event
  // could not be had (then nothing may rely on the order).
  bool join_uses(const SwapBuffer& b, StreamId side) {
    for (const StreamId s : b.streams) {
      if (s == side) continue;
      bool ok = false;
      const EventId e = take_event(ok);
      if (!ok) return false;
      const bool joined = device_.record_event(e, s) == kSuccess && device_.stream_wait_event(side, e) == kSuccess;
      recycle(e);
      if (!joined) return false;
    }
    return true;
  }

  // The copy back was queued on `stream`: users on other streams wait for it (before_work).
  void mark_arrival(SwapBuffer& b, StreamId stream, bool ahead) {
    if (b.arrival_pending) recycle(b.arrival);
    bool ok = false;
    const EventId e = take_event(ok);
    b.arrival_pending = ok && device_.record_event(e, stream) == kSuccess;
    if (b.arrival_pending) {
      b.arrival = e;
      b.arrival_ahead = ahead;
    } else if (ok) {
      recycle(e);
    }
  }

  void arrived(SwapBuffer& b) {
    counters_.host_bytes_now -= std::min(counters_.host_bytes_now, b.size);
    counters_.bytes_swapped_in += b.size;
  }

  // The plan did not bring it back in time: in the consumer's stream order, before the work.
  void bring_back_now(DevicePtr base, SwapBuffer& b, StreamId stream) {
    make_room(b.footprint, 0, Room::wait);
    bool back = mover_->move_in(base, b, stream);
    if (!back) {
      settle(true);
      back = mover_->move_in(base, b, stream);
    }
    grow_lead(b.key);
    if (!back) {
      ++counters_.swap_ins_failed;  // read where it is
      return;
    }
    mark_arrival(b, stream, false);
    arrived(b);
    ++counters_.swap_ins_on_demand;
  }

  // Bring back, on the swap-in stream, what the last iteration used in the next few work items.
  void prefetch_ahead(std::uint64_t now) {
    if (last_length_ == 0 || options_.lookahead == 0) return;
    for (auto& [ptr, b] : buffers_) {
      if (b.resident) continue;
      const std::uint64_t distance = next_use(b.key, now);
      if (distance == kFar || distance > lead_of(b.key)) continue;
      // Room for it and for what is allocated before its use, from buffers needed after it only:
      // else the next item's early leaving would send it straight back (Belady, both ways).
      const std::uint64_t needs = b.footprint + upcoming_allocations(now, distance);
      make_room(needs, distance, Room::quiet);
      if (options_.budget_bytes != 0 && mover_->device_bytes() + needs > device_budget()) continue;
      StreamId side = 0;
      if (!side_stream(in_stream_, side)) return;
      if (!mover_->move_in(ptr, b, side)) continue;
      mark_arrival(b, side, true);
      arrived(b);
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

  // Frees whose stream has reached them; with `wait`, all of them.
  void collect_frees(bool wait) {
    for (auto it = dying_.begin(); it != dying_.end();) {
      const auto event = free_events_.find(it->first);
      if (!device_.event_completed(event->second)) {
        if (!wait) {
          ++it;
          continue;
        }
        (void)device_.synchronize_event(event->second);
      }
      SwapBuffer& b = it->second;
      if (!b.resident) counters_.host_bytes_now -= std::min(counters_.host_bytes_now, b.size);
      mover_->free(it->first, b);
      recycle(event->second);
      free_events_.erase(event);
      it = dying_.erase(it);
    }
  }

  void settle(bool wait) {
    collect_frees(wait);
    mover_->settle(wait);
  }

  EventId take_event(bool& ok) { return spare_events_.take(device_, ok); }
  void recycle(EventId e) { spare_events_.give(e); }

  void update_peaks() {
    const std::uint64_t device = mover_->device_bytes() + Adaptor::memory_use().reserved;
    counters_.peak_device_bytes = std::max(counters_.peak_device_bytes, device);
    counters_.peak_device_bytes_without_pool =
        std::max(counters_.peak_device_bytes_without_pool, live_bytes_ + Adaptor::memory_use().in_use);
  }

  struct Counters {
    std::uint64_t bytes_swapped_out = 0;
    std::uint64_t bytes_swapped_in = 0;
    std::uint64_t swap_ins_on_demand = 0;
    std::uint64_t swap_ins_ahead = 0;
    std::uint64_t swap_ins_late = 0;
    std::uint64_t swap_ins_failed = 0;
    std::uint64_t born_on_host = 0;
    std::uint64_t host_bytes = 0;      // peak bytes on the host
    std::uint64_t host_bytes_now = 0;
    std::uint64_t stream_waits = 0;
    std::uint64_t iterations_planned = 0;
    std::uint64_t peak_device_bytes = 0;
    std::uint64_t peak_device_bytes_without_pool = 0;
    std::uint64_t allocation_failures = 0;
    std::uint64_t exports_refused = 0;
  };

  Device& device_;
  const SwapOptions options_;
  mutable std::mutex mutex_;
  detail::SpareEvents spare_events_;  // before the mover, which borrows it
  std::unique_ptr<detail::SwapMover> mover_;
  std::map<DevicePtr, SwapBuffer> buffers_;  // node-based: the mover keeps pointers to them
  std::map<DevicePtr, SwapBuffer> dying_;  // freed by the program, not yet reached
  std::unordered_map<DevicePtr, EventId> free_events_;  // each dying buffer's: its free reached
  std::unordered_map<std::thread::id, std::vector<DevicePtr>> in_flight_;  // per thread: its last work item's
  std::vector<std::pair<std::uint64_t, std::uint64_t>> uses_;         // (key, relative work) this iteration
  std::vector<std::pair<std::uint64_t, std::uint64_t>> allocations_;  // (relative work, footprint) this iteration
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> last_uses_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> last_allocations_;  // (relative work, running total)
  std::unordered_map<std::uint64_t, std::uint64_t> lead_;  // learned swap-in lead per key
  std::uint64_t last_length_ = 0;  // work items in the last complete iteration
  std::uint64_t work_ = 0;
  std::uint64_t iteration_begin_ = 0;
  std::uint64_t next_ordinal_ = 0;
  bool iteration_started_ = false;
  std::uint64_t live_bytes_ = 0;
  StreamId out_stream_ = 0;
  StreamId in_stream_ = 0;
  std::atomic<bool> unavailable_{false};
  bool said_over_budget_ = false;
  bool said_host_limit_ = false;
  bool stopped_ = false;
  std::unordered_set<std::uint64_t> exported_;  // keys whose buffer the program exported
  std::uint64_t next_id_ = 0;  // shut down: frees are carried out at once
  Counters counters_;
};

}  // namespace

std::unique_ptr<Resource> make_swap(Device& device, std::unique_ptr<Resource> upstream, SwapOptions options) {
  return std::make_unique<SwapAdaptor>(device, std::move(upstream), options);
}

}  // namespace memtool::engine
