// Engine: observer + runtime in the handlers' order (see engine.hpp).
#include "memtool/engine/engine.hpp"

#include "memtool/trace/event.hpp"
#include "memtool/trace/signature.hpp"

namespace memtool::engine {

namespace {
ObserverOptions observer_options(const EngineOptions& options) {
  ObserverOptions o = options.observer;
  const StrategyInfo* info = find_strategy(options.strategy.name);
  o.keep_windows = o.keep_windows || (info != nullptr && info->plans);
  return o;
}
}  // namespace

Engine::Engine(Device& device, const EngineOptions& options)
    : observer_(std::make_unique<Observer>(observer_options(options))) {
  runtime_ = std::make_unique<Runtime>(0, options.strategy.name,
                                       build_strategy(options.strategy, device, observer_.get()), *observer_);
}

Engine::~Engine() {
  runtime_.reset();  // its planner thread first: it may still tell the observer what it learned
  observer_->stop();
}

Status Engine::allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) {
  if (out == nullptr) return kInvalidValue;
  const Status status =
      runtime_->allocate(AllocationRequest{size, kind, kind == MemoryKind::async ? stream : 0, 0}, out);
  if (status != kSuccess) return status;
  std::lock_guard lock(mutex_);
  observer_->on_alloc(*out, size, kind, kind == MemoryKind::async ? stream : 0, runtime_->id());
  return status;
}

Status Engine::release(DevicePtr ptr, MemoryKind kind, StreamId stream) {
  {
    std::lock_guard lock(mutex_);
    (void)observer_->on_free(ptr);
  }
  return runtime_->deallocate(ptr, kind, stream);
}

void Engine::launch(std::span<const std::uint64_t> words, StreamId stream, std::uint64_t kernel) {
  std::vector<std::uint64_t> touched;
  {
    std::lock_guard lock(mutex_);
    observer_->on_launch(words, stream,
                         trace::SignatureBuilder::launch_token(trace::StringId{static_cast<std::uint32_t>(kernel)}),
                         touched_);
    touched = touched_;
  }
  runtime_->before_access(touched, stream);
}

void Engine::transfer(DevicePtr dst, DevicePtr src, StreamId stream, AccessKind kind, std::uint64_t token) {
  std::vector<std::uint64_t> touched;
  {
    std::lock_guard lock(mutex_);
    observer_->on_transfer(dst, src, stream, kind, token, touched_);
    touched = touched_;
  }
  runtime_->before_access(touched, stream);
}

void Engine::mark_iteration() {
  std::lock_guard lock(mutex_);
  observer_->on_mark();
}

Summary Engine::summary() {
  Summary s = runtime_->summary();
  std::optional<Step> step;
  {
    std::lock_guard lock(mutex_);
    step = observer_->step_now();
  }
  if (step) {
    s.period_events = step->period;
    s.period_peak_bytes = step->peak_bytes;
    if (s.period_allocations == 0) s.period_allocations = step->allocations;
  }
  return s;
}

}  // namespace memtool::engine
