// UvmMover: swapped buffers in managed memory, moved by cuMemPrefetchAsync (swap_mover.hpp).
// A prefetch to the host frees the device memory only when its stream gets there: until the
// event recorded after it has completed, the buffer is leaving and its device bytes still
// count, as an explicit copy out's do (settle releases them; before, they were counted free at
// once, and allocations and copies back made meanwhile took the device past the budget: alexnet
// at 65% peaked 16-24% over it on fakecuda). A buffer sent out is also advised to live on the
// host (cuMemAdvise's preferred location), so that a kernel memtool did not see reach it maps
// its pages across the link instead of migrating them back past the budget; coming back, it is
// advised to live on the device. While the budget is held without a host wait (a stream waits for a
// value: Room::held), a new buffer starts on the host the same way (allocate_on_host).
#include <algorithm>
#include <vector>

#include "host_waits.hpp"
#include "swap_mover.hpp"

namespace memtool::engine::detail {
namespace {

class UvmMover final : public SwapMover {
 public:
  UvmMover(Device& device, SpareEvents& events, HostWaits& waits) : device_(device), events_(events), waits_(waits) {}

  std::string_view mode() const override { return "uvm"; }
  std::uint64_t footprint_of(std::uint64_t size) const override { return size; }

  Status allocate(SwapBuffer& b, StreamId stream, DevicePtr* out) override {
    DevicePtr ptr = 0;
    const Status status = device_.allocate_managed(b.size, &ptr);
    if (status != kSuccess) return status;
    // First touch on the device, in the allocation's stream order, so the first kernel does
    // not fault it in page by page.
    (void)device_.prefetch(ptr, b.size, Residence::device, stream);
    b.footprint = b.size;
    device_bytes_ += b.footprint;
    *out = ptr;
    return kSuccess;
  }

  // Held off the device (the budget, while the host may not wait for room: Room::held): advised
  // to live on the host and populated there by a prefetch in the allocation's stream order, so
  // that a kernel maps its pages across the link instead of placing them on the device, until it
  // is brought back (move_in) as any buffer that is out. It holds no device bytes until then.
  Status allocate_on_host(SwapBuffer& b, StreamId stream, DevicePtr* out) override {
    DevicePtr ptr = 0;
    const Status status = device_.allocate_managed(b.size, &ptr);
    if (status != kSuccess) return status;
    if (device_.advise(ptr, b.size, Residence::host) != kSuccess ||
        device_.prefetch(ptr, b.size, Residence::host, stream) != kSuccess) {
      // The driver would place it at the first touch, on the device, uncounted. Freed where the
      // host may wait (cuMemFree synchronises the device), else by a later call.
      unplaced_.push_back(ptr);
      free_unplaced();
      return kNotSupported;
    }
    b.footprint = b.size;
    b.resident = false;
    *out = ptr;
    return kSuccess;
  }

  // Every use of it has completed, its prefetch out too (the policy frees after both). cuMemFree
  // synchronises the device (the driver waits for all work issued): a host wait, not made while
  // one may never end.
  bool free(DevicePtr ptr, SwapBuffer& b) override {
    if (!waits_.allowed()) return false;
    if (b.leaving) {
      drop_leaving(ptr);
      events_.give(b.left);
      b.leaving = false;
      device_bytes_ -= std::min(device_bytes_, b.footprint);
    } else if (b.resident) {
      device_bytes_ -= std::min(device_bytes_, b.footprint);
    }
    (void)device_.free(ptr, MemoryKind::managed, 0);
    return true;
  }

  bool move_out(DevicePtr ptr, SwapBuffer& b, StreamId side, CopyWatch& watch) override {
    (void)device_.advise(ptr, b.size, Residence::host);  // advice only: the prefetch moves it
    watch.queuing(side);
    if (device_.prefetch(ptr, b.size, Residence::host, side) != kSuccess) return false;
    watch.queued(side);
    b.resident = false;
    bool ok = false;
    const EventId done = events_.take(device_, ok);
    if (!ok || device_.record_event(done, side) != kSuccess) {
      // Untracked: counted as gone now (the prefetch is queued; it cannot be waited for).
      if (ok) events_.give(done);
      device_bytes_ -= std::min(device_bytes_, b.footprint);
      return true;
    }
    b.left = done;
    b.leaving = true;
    leaving_.emplace_back(ptr, &b);
    leaving_bytes_ += b.footprint;
    return true;
  }

  bool move_in(DevicePtr ptr, SwapBuffer& b, StreamId stream, CopyWatch& watch) override {
    // Still leaving: the prefetch back must come after the prefetch out, not race it.
    if (b.leaving && device_.stream_wait_event(stream, b.left) != kSuccess) return false;
    (void)device_.advise(ptr, b.size, Residence::device);
    watch.queuing(stream);
    if (device_.prefetch(ptr, b.size, Residence::device, stream) != kSuccess) return false;
    watch.queued(stream);
    if (b.leaving) {
      // Its device bytes were never given up: still counted.
      drop_leaving(ptr);
      events_.give(b.left);
      b.leaving = false;
    } else {
      device_bytes_ += b.footprint;
    }
    b.resident = true;
    return true;
  }

  void settle(bool wait) override {
    free_unplaced();
    for (std::size_t i = 0; i < leaving_.size();) {
      auto [ptr, b] = leaving_[i];
      if (!waits_.reached(b->left, wait)) {
        ++i;
        continue;
      }
      finish_leaving(ptr, *b);
    }
  }

  bool settle_oldest() override {
    if (leaving_.empty()) return false;
    const auto [ptr, b] = leaving_.front();
    if (!waits_.wait(b->left)) return false;
    finish_leaving(ptr, *b);
    return true;
  }

  std::uint64_t device_bytes() const override { return device_bytes_; }
  std::uint64_t leaving_bytes() const override { return leaving_bytes_; }
  std::uint64_t device_bytes_with(std::uint64_t footprint) const override { return device_bytes_ + footprint; }
  void trim() override { free_unplaced(); }
  DevicePtr host_copy(DevicePtr ptr, const SwapBuffer&) const override { return ptr; }

 private:
  // Managed memory allocate_on_host could not keep on the host, freed once the host may wait.
  void free_unplaced() {
    if (unplaced_.empty() || !waits_.allowed()) return;
    for (const DevicePtr ptr : unplaced_) (void)device_.free(ptr, MemoryKind::managed, 0);
    unplaced_.clear();
  }

  // The prefetch to the host has run: its device bytes are free.
  void finish_leaving(DevicePtr ptr, SwapBuffer& b) {
    drop_leaving(ptr);
    events_.give(b.left);
    b.leaving = false;
    device_bytes_ -= std::min(device_bytes_, b.footprint);
  }

  void drop_leaving(DevicePtr ptr) {
    const auto it = std::find_if(leaving_.begin(), leaving_.end(), [ptr](const auto& l) { return l.first == ptr; });
    if (it == leaving_.end()) return;
    leaving_bytes_ -= std::min(leaving_bytes_, it->second->footprint);
    leaving_.erase(it);  // kept in the order the copies were queued (settle_oldest)
  }

  Device& device_;
  SpareEvents& events_;
  HostWaits& waits_;
  std::uint64_t device_bytes_ = 0;                          // held on the device, leaving buffers included
  std::uint64_t leaving_bytes_ = 0;                         // of those, what prefetches to the host under way will free
  std::vector<std::pair<DevicePtr, SwapBuffer*>> leaving_;  // in the order queued
  std::vector<DevicePtr> unplaced_;                         // managed memory no buffer uses, to free
};

}  // namespace

std::unique_ptr<SwapMover> make_uvm_mover(Device& device, SpareEvents& events, HostWaits& waits) {
  return std::make_unique<UvmMover>(device, events, waits);
}

}  // namespace memtool::engine::detail
