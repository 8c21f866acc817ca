// Statistics: what the program asked of a stack and what the stack held at its worst (see
// resources.hpp).
#include <algorithm>
#include <atomic>

#include "memtool/engine/resources.hpp"

namespace memtool::engine {
namespace {

class Statistics final : public Adaptor {
 public:
  using Adaptor::Adaptor;
  std::string_view name() const override { return "statistics"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    const Status status = Adaptor::allocate(request, out);
    if (status != kSuccess) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return status;
    }
    const std::uint64_t reserved = upstream().memory_use().reserved;
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (reserved > peak && !peak_.compare_exchange_weak(peak, reserved, std::memory_order_relaxed)) {}
    return status;
  }

  void summarize(Summary& summary) const override {
    Adaptor::summarize(summary);
    summary.allocation_failures += failures_.load(std::memory_order_relaxed);
    summary.peak_device_bytes_with_pool =
        std::max(summary.peak_device_bytes_with_pool, peak_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::uint64_t> peak_{0};
};

}  // namespace

std::unique_ptr<Resource> make_statistics(std::unique_ptr<Resource> upstream) {
  return std::make_unique<Statistics>(std::move(upstream));
}

}  // namespace memtool::engine
