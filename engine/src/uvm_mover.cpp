// UvmMover: swapped buffers in managed memory, moved by cuMemPrefetchAsync (swap_mover.hpp).
// The device bytes are counted as the driver will hold them once the queued prefetches have
// run: a prefetch to the host frees them in stream order, so nothing is left to settle. A buffer
// sent out is also advised to live on the host (cuMemAdvise's preferred location), so that a
// kernel memtool did not see reach it maps its pages across the link instead of migrating them
// back past the budget; coming back, it is advised to live on the device.
#include <algorithm>

#include "swap_mover.hpp"

namespace memtool::engine::detail {
namespace {

class UvmMover final : public SwapMover {
 public:
  explicit UvmMover(Device& device) : device_(device) {}

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

  // Managed memory oversubscribes by itself: nothing to add.
  Status allocate_on_host(SwapBuffer&, DevicePtr*) override { return kNotSupported; }

  void free(DevicePtr ptr, SwapBuffer& b) override {
    if (b.resident) device_bytes_ -= std::min(device_bytes_, b.footprint);
    (void)device_.free(ptr, MemoryKind::managed, 0);
  }

  bool move_out(DevicePtr ptr, SwapBuffer& b, StreamId side) override {
    (void)device_.advise(ptr, b.size, Residence::host);  // advice only: the prefetch moves it
    if (device_.prefetch(ptr, b.size, Residence::host, side) != kSuccess) return false;
    b.resident = false;
    device_bytes_ -= std::min(device_bytes_, b.footprint);
    return true;
  }

  bool move_in(DevicePtr ptr, SwapBuffer& b, StreamId stream) override {
    (void)device_.advise(ptr, b.size, Residence::device);
    if (device_.prefetch(ptr, b.size, Residence::device, stream) != kSuccess) return false;
    b.resident = true;
    device_bytes_ += b.footprint;
    return true;
  }

  void settle(bool) override {}
  std::uint64_t device_bytes() const override { return device_bytes_; }
  std::uint64_t leaving_bytes() const override { return 0; }
  std::uint64_t device_bytes_with(std::uint64_t footprint) const override { return device_bytes_ + footprint; }
  std::uint64_t stall_ns() const override { return 0; }
  void trim() override {}
  DevicePtr host_copy(DevicePtr ptr, const SwapBuffer&) const override { return ptr; }

 private:
  Device& device_;
  std::uint64_t device_bytes_ = 0;
};

}  // namespace

std::unique_ptr<SwapMover> make_uvm_mover(Device& device) { return std::make_unique<UvmMover>(device); }

}  // namespace memtool::engine::detail
