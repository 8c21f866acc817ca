// Runtime: boundary delivery and the program's view of memory (see runtime.hpp).
#include "memtool/engine/runtime.hpp"

namespace memtool::engine {

Runtime::Runtime(std::uint32_t id, std::string strategy, std::unique_ptr<Resource> stack, Observer& observer)
    : id_(id),
      strategy_(std::move(strategy)),
      stack_(std::move(stack)),
      observer_(observer),
      wants_accesses_(stack_->wants_accesses()) {
  wants_windows_.store(stack_->wants_windows(), std::memory_order_relaxed);
  observer_.want_windows(id_, wants_windows_.load(std::memory_order_relaxed));
}

void Runtime::deliver() {
  std::lock_guard lock(boundary_mutex_);
  const std::uint64_t now = observer_.boundaries().count();
  if (now == seen_.load(std::memory_order_relaxed)) return;  // another thread delivered it
  seen_.store(now, std::memory_order_relaxed);
  stack_->on_boundary(observer_.boundaries().latest(id_));
  wants_windows_.store(stack_->wants_windows(), std::memory_order_relaxed);
  observer_.want_windows(id_, wants_windows_.load(std::memory_order_relaxed));
}

std::uint64_t Runtime::program_free(std::uint64_t driver_free) const {
  const MemoryUse use = stack_->memory_use();
  return driver_free + (use.reserved > use.in_use ? use.reserved - use.in_use : 0);
}

std::uint64_t Runtime::program_total(std::uint64_t driver_total) const {
  return driver_total + stack_->memory_use().off_device;
}

Summary Runtime::summary() const {
  Summary s;
  s.strategy = strategy_;
  stack_->summarize(s);
  return s;
}

}  // namespace memtool::engine
