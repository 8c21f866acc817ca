// DeviceResource: the real allocator behind every strategy (see resources.hpp).
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "memtool/engine/resources.hpp"

namespace memtool::engine {
namespace {

class DeviceResource final : public Resource {
 public:
  DeviceResource(Device& device, bool count_bytes) : device_(device), count_bytes_(count_bytes) {}

  std::string_view name() const override { return "device"; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) override {
    const Status status = request.memory_pool != 0
                              ? device_.allocate_from_pool(request.size, request.memory_pool, request.stream, out)
                              : device_.allocate(request.size, request.kind, request.stream, out);
    if (status == kSuccess && count_bytes_) {
      std::lock_guard lock(mutex_);
      sizes_[*out] = request.size;
      held_ += request.size;
    }
    return status;
  }

  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) override {
    if (count_bytes_) {
      std::lock_guard lock(mutex_);
      if (const auto it = sizes_.find(ptr); it != sizes_.end()) {
        held_ -= it->second;
        sizes_.erase(it);
      }
    }
    return device_.free(ptr, kind, stream);
  }

  // Observes nothing, sub-allocates nothing, keeps nothing idle: the defaults.
  MemoryUse memory_use() const override {
    std::lock_guard lock(mutex_);
    return MemoryUse{held_ + graph_bytes_.load(std::memory_order_relaxed), held_, 0, 0};
  }
  void set_graph_memory(std::uint64_t bytes) override { graph_bytes_.store(bytes, std::memory_order_relaxed); }

 private:
  Device& device_;
  const bool count_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<DevicePtr, std::uint64_t> sizes_;
  std::uint64_t held_ = 0;
  std::atomic<std::uint64_t> graph_bytes_{0};  // held by the driver for the program's graphs
};

}  // namespace

std::unique_ptr<Resource> make_device_resource(Device& device, bool count_bytes) {
  return std::make_unique<DeviceResource>(device, count_bytes);
}

}  // namespace memtool::engine
