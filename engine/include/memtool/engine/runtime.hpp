// Runtime: one strategy stack serving one CUDA context, and what the handlers of
// libmemtool.so call for it. It delivers the observer's iteration boundaries to the stack (it
// polls the feed at each call: one atomic load when nothing happened) and keeps the observer
// told whether the stack wants windows.
//
// Thread-safe: the stack serialises its own state; boundary delivery takes the runtime's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "memtool/engine/observer.hpp"
#include "memtool/engine/resource.hpp"

namespace memtool::engine {

class Runtime {
 public:
  // `id` names the context among the observer's owners (0 .. ObserverOptions::max_owners - 1).
  Runtime(std::uint32_t id, std::string strategy, std::unique_ptr<Resource> stack, Observer& observer);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] const std::string& strategy() const { return strategy_; }

  Status allocate(const AllocationRequest& request, DevicePtr* out) {
    poll();
    const Status status = stack_->allocate(request, out);
    sync_wants();
    return status;
  }
  // Boundaries are delivered after the free: a boundary just before the next iteration is
  // observed when the previous one's last free is, and a pool made there must not meet the
  // buffer that free releases.
  Status deallocate(DevicePtr ptr, MemoryKind kind, StreamId stream) {
    const Status status = stack_->deallocate(ptr, kind, stream);
    poll();
    return status;
  }
  // Work on `stream` is about to touch these buffers (their bases).
  void before_access(std::span<const std::uint64_t> bases, StreamId stream) {
    WorkItem item;
    item.stream = stream;
    item.touched = bases;
    before_item(item);
  }
  // A whole launch, copy or memset is about to be queued (resource.hpp).
  void before_item(const WorkItem& item) {
    if (!wants_accesses_) return;
    poll();
    stack_->before_item(item);
  }
  // The program waited for the GPU in a synchronisation call (Resource::on_host_sync). No
  // boundary is delivered here: a wait at an iteration's end belongs to that iteration.
  void on_host_sync(StreamId stream, std::uint64_t waited_ns) {
    if (wants_accesses_) stack_->on_host_sync(stream, waited_ns);
  }
  [[nodiscard]] bool wants_accesses() const { return wants_accesses_; }

  // cuMemGetInfo's free bytes as the program should see them: what the stack reserved and no
  // live buffer uses is the program's to allocate (an allocation that needs it gets it).
  [[nodiscard]] std::uint64_t program_free(std::uint64_t driver_free) const;
  // cuMemGetInfo's total as the program should see it: the device, plus what of the program's
  // live buffers the stack keeps off it (swapped out). With program_free, free + the program's
  // live bytes never pass it (PyTorch's cudaMallocAsync backend asserts that), even when the
  // program holds more than the device.
  [[nodiscard]] std::uint64_t program_total(std::uint64_t driver_total) const;
  // A sub-allocated buffer's own extent (pointer attribute queries).
  [[nodiscard]] std::optional<BufferExtent> extent_of(DevicePtr ptr) const { return stack_->extent_of(ptr); }
  ExportPin pin_for_export(DevicePtr ptr) { return stack_->pin_for_export(ptr); }
  std::uint64_t reclaim() { return stack_->reclaim(); }
  // The driver's graph memory for this context now (Resource::set_graph_memory).
  void set_graph_memory(std::uint64_t bytes) { stack_->set_graph_memory(bytes); }
  // The context ends (release_memory: free what is idle now), or the process exits (stop only).
  void shutdown(bool release_memory) { stack_->shutdown(release_memory); }
  [[nodiscard]] Summary summary() const;
  [[nodiscard]] Resource& stack() { return *stack_; }

 private:
  void poll() {
    if (observer_.boundaries().count() != seen_.load(std::memory_order_relaxed)) deliver();
  }
  void deliver();
  // A plan dropped by an allocation (misses) wants the window of the very next boundary: one
  // that only said so at the boundary after would cost the program a whole step unplanned.
  void sync_wants() {
    const bool wants = stack_->wants_windows();
    if (wants != wants_windows_.load(std::memory_order_relaxed)) {
      wants_windows_.store(wants, std::memory_order_relaxed);
      observer_.want_windows(id_, wants);
    }
  }

  const std::uint32_t id_;
  const std::string strategy_;
  std::unique_ptr<Resource> stack_;
  Observer& observer_;
  const bool wants_accesses_;
  std::mutex boundary_mutex_;
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<bool> wants_windows_{false};  // as last told to the observer
};

}  // namespace memtool::engine
