// VmmMover: explicit copies between device memory and pinned host memory, the program's
// pointer kept (swap_mover.hpp). Each swapped buffer owns a reserved address range, rounded
// to the VMM granularity:
//   resident  device memory mapped in it;
//   leaving   still mapped, its bytes being copied (cuMemcpyDtoDAsync on the policy's side
//             stream) into a host slot: host-located physical memory with its own mapping
//             (the slot's view);
//   out       the copy done (polled, or waited for in settle(true) where the host may wait,
//             HostWaits): the device memory
//             released and the host slot mapped at the buffer's address, so an access nobody
//             announced reads and writes the true bytes, across the link;
//   coming back: fresh device memory mapped at the address, the bytes copied from the slot's
//             view in the consumer's or the policy's stream order; the slot is reused once
//             that copy's event has completed (at once, with no copy, for a buffer no work has
//             written: SwapBuffer::blank).
// Host slots are kept by size and reused: after the first swapped iteration no host memory is
// allocated. The limit on host bytes is the policy's MEMTOOL_HOST_LIMIT.
// Not protected: a stray access while a buffer is coming back (from the remap to the copy's
// arrival), which no plan can order; docs/swapping.md says so.
#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "host_waits.hpp"
#include "memtool/engine/log.hpp"
#include "swap_mover.hpp"

namespace memtool::engine::detail {
namespace {

struct HostSlot {
  Device::PhysicalHandle memory = 0;
  DevicePtr view = 0;  // its own mapping, the copies' end
  std::uint64_t bytes = 0;
  DevicePtr mapped_at = 0;  // also mapped at a swapped-out buffer's address (0: not)
  bool lost = false;        // a copy into it could not be tracked: never reused
};

struct Draining {
  std::uint32_t slot = 0;  // index
  EventId event = 0;       // the last copy that reads or writes it
  DevicePtr reads = 0;     // that copy, a copy out, reads this buffer's device memory (0: none)
};

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t granule) { return (bytes + granule - 1) / granule * granule; }

class VmmMover final : public SwapMover {
 public:
  VmmMover(Device& device, SpareEvents& events, HostWaits& waits, std::uint64_t granule, std::uint64_t host_limit)
      : device_(device), events_(events), waits_(waits), granule_(granule), host_limit_(host_limit) {}

  std::string_view mode() const override { return "explicit"; }
  bool copies_blank() const override { return false; }
  std::uint64_t footprint_of(std::uint64_t size) const override { return round_up(size, granule_); }

  Status allocate(SwapBuffer& b, StreamId, DevicePtr* out) override {
    const std::uint64_t bytes = round_up(b.size, granule_);
    DevicePtr va = 0;
    Status status = device_.reserve(bytes, &va);
    if (status != kSuccess) return status;
    Device::PhysicalHandle memory = 0;
    status = take_device(bytes, &memory);
    if (status == kSuccess) {
      status = device_.map(va, bytes, memory);
      if (status != kSuccess) give_device(bytes, memory);
    }
    if (status != kSuccess) {
      (void)device_.unreserve(va, bytes);
      return status;
    }
    b.footprint = bytes;
    b.device_memory = memory;
    *out = va;
    return kSuccess;
  }

  // Mapped before the call returns: nothing queued on the stream.
  Status allocate_on_host(SwapBuffer& b, StreamId /*stream*/, DevicePtr* out) override {
    const std::uint64_t bytes = round_up(b.size, granule_);
    std::uint32_t index = 0;
    if (!take_slot(bytes, index)) return kOutOfMemory;
    DevicePtr va = 0;
    Status status = device_.reserve(bytes, &va);
    if (status == kSuccess) {
      status = device_.map(va, bytes, slots_[index].memory);
      if (status != kSuccess) (void)device_.unreserve(va, bytes);
    }
    if (status != kSuccess) {
      give_slot(index);
      return status;
    }
    slots_[index].mapped_at = va;
    b.footprint = bytes;
    b.host_slot = index + 1;
    b.resident = false;
    *out = va;
    return kSuccess;
  }

  bool free(DevicePtr ptr, SwapBuffer& b) override {
    if (b.leaving) {
      // The copy out reads the memory we are about to release: not before it has run.
      if (!waits_.wait(b.left)) return false;
      drop_leaving(ptr);
      events_.give(b.left);
      b.leaving = false;
    }
    const auto read = reading(ptr);
    if (read != draining_.end()) {
      // Brought back while its copy out was under way: that copy still reads the memory.
      if (!waits_.wait(read->event)) return false;
      read->reads = 0;
    }
    release_device(ptr, b);
    if (b.host_slot != 0) {
      HostSlot& slot = slots_[b.host_slot - 1];
      if (slot.mapped_at == ptr && device_.unmap(ptr, b.footprint) == kSuccess) slot.mapped_at = 0;
      give_slot(b.host_slot - 1);
      b.host_slot = 0;
    }
    (void)device_.unreserve(ptr, b.footprint);
    return true;
  }

  bool move_out(DevicePtr ptr, SwapBuffer& b, StreamId side, CopyWatch& watch) override {
    std::uint32_t index = 0;
    if (!take_slot(b.footprint, index)) return false;
    if (b.blank) {
      // Its bytes mean nothing and no work queued uses its memory (none used or may reach it):
      // the host slot is taken as it is, no copy, and the device memory goes now, not once the
      // side stream has run the copies queued before.
      b.host_slot = index + 1;
      b.resident = false;
      release_device(ptr, b);
      map_host_copy(ptr, b);
      return true;
    }
    bool ok = false;
    const EventId done = events_.take(device_, ok);
    if (!ok) {
      give_slot(index);
      return false;
    }
    watch.queuing(side);
    if (device_.copy_device(slots_[index].view, ptr, b.size, side) != kSuccess) {
      events_.give(done);
      give_slot(index);
      return false;
    }
    watch.queued(side);
    if (device_.record_event(done, side) != kSuccess) {
      // The copy is queued but cannot be tracked: the slot may still be written; keep the buffer.
      events_.give(done);
      slots_[index].lost = true;
      return false;
    }
    b.host_slot = index + 1;
    b.left = done;
    b.leaving = true;
    b.resident = false;
    leaving_.emplace_back(ptr, &b);
    leaving_bytes_ += b.footprint;
    return true;
  }

  bool move_in(DevicePtr ptr, SwapBuffer& b, StreamId stream, CopyWatch& watch) override {
    if (b.leaving) {
      // Its device memory is still mapped and true: keep it, drop the copy once it has run
      // (until then it reads that memory: copy_out_reads, free).
      drop_leaving(ptr);
      drain(b.host_slot - 1, b.left, ptr);
      b.host_slot = 0;
      b.leaving = false;
      b.resident = true;
      return true;
    }
    if (b.host_slot == 0) return false;
    HostSlot& slot = slots_[b.host_slot - 1];
    Device::PhysicalHandle memory = 0;
    if (take_device(b.footprint, &memory) != kSuccess) return false;
    if (slot.mapped_at == ptr) {
      if (device_.unmap(ptr, b.footprint) != kSuccess) {
        give_device(b.footprint, memory);
        return false;
      }
      slot.mapped_at = 0;
    }
    if (b.blank) {
      // No work has written it (it left without a copy, or started on the host): nothing to copy
      // back, and no copy reads the slot.
      if (device_.map(ptr, b.footprint, memory) != kSuccess) {
        stay_on_host(ptr, b, memory);
        return false;
      }
      give_slot(b.host_slot - 1);
      b.host_slot = 0;
      b.device_memory = memory;
      b.resident = true;
      return true;
    }
    bool ok = false;
    const EventId done = events_.take(device_, ok);
    bool queued = ok && device_.map(ptr, b.footprint, memory) == kSuccess;
    if (queued) {
      watch.queuing(stream);
      queued = device_.copy_device(ptr, slot.view, b.size, stream) == kSuccess;
    }
    if (!queued) {
      if (ok) events_.give(done);
      stay_on_host(ptr, b, memory);
      return false;
    }
    watch.queued(stream);
    if (device_.record_event(done, stream) == kSuccess) {
      drain(b.host_slot - 1, done);
    } else {
      events_.give(done);
      slot.lost = true;
    }
    b.host_slot = 0;
    b.device_memory = memory;
    b.resident = true;
    return true;
  }

  bool copy_out_reads(DevicePtr ptr, const SwapBuffer& b) override {
    if (b.leaving) return true;
    const auto read = reading(ptr);
    return read != draining_.end() && !device_.event_completed(read->event);
  }

  void settle(bool wait) override {
    for (std::size_t i = 0; i < leaving_.size();) {
      auto [ptr, b] = leaving_[i];
      if (!waits_.reached(b->left, wait)) {
        ++i;
        continue;
      }
      finish_leaving(ptr, *b);
    }
    std::erase_if(draining_, [this, wait](const Draining& d) {
      if (!waits_.reached(d.event, wait)) return false;
      events_.give(d.event);
      free_slots_.emplace(slots_[d.slot].bytes, d.slot);
      return true;
    });
    if (wait) release_cached();
  }

  // Room without a wait first: what landed copies left cached; else the oldest copy under way.
  bool settle_oldest() override {
    if (cached_bytes_ == 0) {
      if (leaving_.empty()) return false;
      const auto [ptr, b] = leaving_.front();
      if (!waits_.wait(b->left)) return false;
      finish_leaving(ptr, *b);
    }
    release_cached();
    return true;
  }

  std::uint64_t device_bytes() const override { return device_bytes_ + cached_bytes_; }
  std::uint64_t leaving_bytes() const override { return leaving_bytes_ + cached_bytes_; }
  // take_device: a released handle of its size is reused, else every released one goes first.
  std::uint64_t device_bytes_with(std::uint64_t footprint) const override {
    return cached_device_.contains(footprint) ? device_bytes_ + cached_bytes_ : device_bytes_ + footprint;
  }

  DevicePtr host_copy(DevicePtr ptr, const SwapBuffer& b) const override {
    return b.host_slot != 0 ? slots_[b.host_slot - 1].view : ptr;
  }
  void set_leave_check(LeaveCheck check) override { leave_check_ = std::move(check); }

  void trim() override {
    release_cached();
    for (auto it = free_slots_.begin(); it != free_slots_.end();) {
      HostSlot& slot = slots_[it->second];
      if (device_.unmap(slot.view, slot.bytes) == kSuccess) {
        (void)device_.release_physical(slot.memory);
        (void)device_.unreserve(slot.view, slot.bytes);
        host_bytes_ -= std::min(host_bytes_, slot.bytes);
        slot = HostSlot{};
        spare_indices_.push_back(it->second);
      }
      it = free_slots_.erase(it);
    }
  }

 private:
  // The copy out has run: release the device memory and let the address reach the host copy.
  void finish_leaving(DevicePtr ptr, SwapBuffer& b) {
    drop_leaving(ptr);
    events_.give(b.left);
    b.leaving = false;
    if (leave_check_ && !leave_check_(ptr, b, slots_[b.host_slot - 1].view)) {
      // Its device bytes are the truth (the copy is done with the slot): it stays.
      give_slot(b.host_slot - 1);
      b.host_slot = 0;
      b.resident = true;
      return;
    }
    release_device(ptr, b);
    map_host_copy(ptr, b);
  }

  // A move back that failed: back as it was, the host copy still the truth at the address, the
  // device memory taken for it given back.
  void stay_on_host(DevicePtr ptr, const SwapBuffer& b, Device::PhysicalHandle memory) {
    HostSlot& slot = slots_[b.host_slot - 1];
    (void)device_.unmap(ptr, b.footprint);
    give_device(b.footprint, memory);
    if (device_.map(ptr, b.footprint, slot.memory) == kSuccess) slot.mapped_at = ptr;
  }

  // The address reaches the host copy (its device memory released): an access the plan did not
  // foresee reads and writes the true bytes.
  void map_host_copy(DevicePtr ptr, const SwapBuffer& b) {
    HostSlot& slot = slots_[b.host_slot - 1];
    if (device_.map(ptr, b.footprint, slot.memory) == kSuccess) {
      slot.mapped_at = ptr;
    } else if (!said_unmapped_) {
      said_unmapped_ = true;
      log(LogLevel::warn, fmt::format("memtool swap: could not map host memory at a swapped-out buffer's address "
                                      "(0x{:x}); an access the plan did not foresee would fault",
                                      ptr));
    }
  }

  void release_device(DevicePtr ptr, SwapBuffer& b) {
    if (b.device_memory == 0) return;
    (void)device_.unmap(ptr, b.footprint);
    give_device(b.footprint, b.device_memory);
    b.device_memory = 0;
  }

  // Device memory of `bytes`: a released handle of that size (buffers recur with their sizes, and
  // the driver's create and release are slow), else a new one. Cached handles of other sizes
  // are released first, so the device never holds more than the policy counts.
  Status take_device(std::uint64_t bytes, Device::PhysicalHandle* out) {
    const auto it = cached_device_.find(bytes);
    if (it != cached_device_.end()) {
      *out = it->second;
      cached_device_.erase(it);
      cached_bytes_ -= bytes;
    } else {
      release_cached();
      const Status status = device_.create_physical(bytes, out);
      if (status != kSuccess) return status;
    }
    device_bytes_ += bytes;
    return kSuccess;
  }

  // Back to the cache (counted as device bytes that settle can free).
  void give_device(std::uint64_t bytes, Device::PhysicalHandle memory) {
    device_bytes_ -= std::min(device_bytes_, bytes);
    cached_device_.emplace(bytes, memory);
    cached_bytes_ += bytes;
  }

  void release_cached() {
    for (const auto& [bytes, memory] : cached_device_) (void)device_.release_physical(memory);
    cached_device_.clear();
    cached_bytes_ = 0;
  }

  void drop_leaving(DevicePtr ptr) {
    const auto it = std::find_if(leaving_.begin(), leaving_.end(), [ptr](const auto& l) { return l.first == ptr; });
    if (it == leaving_.end()) return;
    leaving_bytes_ -= std::min(leaving_bytes_, it->second->footprint);
    leaving_.erase(it);  // kept in the order the copies were queued (settle_oldest)
  }

  // A free slot of exactly `bytes` (buffers recur with their sizes), else a new one within the
  // host limit.
  bool take_slot(std::uint64_t bytes, std::uint32_t& index) {
    const auto it = free_slots_.find(bytes);
    if (it != free_slots_.end()) {
      index = it->second;
      free_slots_.erase(it);
      return true;
    }
    if (host_limit_ != 0 && host_bytes_ + bytes > host_limit_) return false;
    HostSlot slot;
    slot.bytes = bytes;
    if (device_.create_host_physical(bytes, &slot.memory) != kSuccess) return false;
    if (device_.reserve(bytes, &slot.view) != kSuccess) {
      (void)device_.release_physical(slot.memory);
      return false;
    }
    if (device_.map(slot.view, bytes, slot.memory) != kSuccess) {
      (void)device_.unreserve(slot.view, bytes);
      (void)device_.release_physical(slot.memory);
      return false;
    }
    host_bytes_ += bytes;
    if (!spare_indices_.empty()) {
      index = spare_indices_.back();
      spare_indices_.pop_back();
      slots_[index] = slot;
    } else {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(slot);
    }
    return true;
  }

  void give_slot(std::uint32_t index) {
    if (!slots_[index].lost) free_slots_.emplace(slots_[index].bytes, index);
  }

  void drain(std::uint32_t index, EventId event, DevicePtr reads = 0) {
    draining_.push_back(Draining{index, event, reads});
  }
  std::vector<Draining>::iterator reading(DevicePtr ptr) {
    return std::find_if(draining_.begin(), draining_.end(), [ptr](const Draining& d) { return d.reads == ptr; });
  }

  Device& device_;
  SpareEvents& events_;
  HostWaits& waits_;
  const std::uint64_t granule_;
  const std::uint64_t host_limit_;
  std::vector<HostSlot> slots_;
  std::vector<std::uint32_t> spare_indices_;
  std::multimap<std::uint64_t, std::uint32_t> free_slots_;  // bytes -> index
  std::vector<std::pair<DevicePtr, SwapBuffer*>> leaving_;  // copies out under way, in the order queued
  std::vector<Draining> draining_;
  std::uint64_t device_bytes_ = 0;
  std::uint64_t leaving_bytes_ = 0;
  std::multimap<std::uint64_t, Device::PhysicalHandle> cached_device_;  // released by buffers, kept for reuse
  std::uint64_t cached_bytes_ = 0;
  std::uint64_t host_bytes_ = 0;
  bool said_unmapped_ = false;
  LeaveCheck leave_check_;
};

}  // namespace

std::unique_ptr<SwapMover> make_vmm_mover(Device& device, SpareEvents& events, HostWaits& waits,
                                          std::uint64_t host_limit_bytes) {
  std::uint64_t device_granule = 0;
  std::uint64_t host_granule = 0;
  if (device.vmm_granularity(&device_granule) != kSuccess || device.host_vmm_granularity(&host_granule) != kSuccess ||
      device_granule == 0 || host_granule == 0) {
    return nullptr;
  }
  const std::uint64_t granule = std::max(device_granule, host_granule);
  // The driver must place physical memory on the host (CUDA 12.2 on) and map it for the device.
  Device::PhysicalHandle probe = 0;
  if (device.create_host_physical(granule, &probe) != kSuccess) return nullptr;
  (void)device.release_physical(probe);
  return std::make_unique<VmmMover>(device, events, waits, granule, host_limit_bytes);
}

}  // namespace memtool::engine::detail
