// Engine: the whole engine in one object, CUDA-free — one observer and one runtime (one
// context) over a Device, called in the order libmemtool.so's handlers call them: an allocation
// is served by the strategy and then observed, a free observed and then freed, an access
// observed (the buffers it touches) and then the strategy orders its stream. The unit tests
// drive strategies through it on the simulated device, and `memtool simulate` replays traces
// with it. Thread-safe: the observer is serialised by the engine's lock, the runtime by itself.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "memtool/engine/observer.hpp"
#include "memtool/engine/runtime.hpp"
#include "memtool/engine/strategy.hpp"

namespace memtool::engine {

struct EngineOptions {
  StrategyOptions strategy;
  ObserverOptions observer;  // keep_windows is set from the strategy
};

class Engine {
 public:
  Engine(Device& device, const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // cuMemAlloc (kind device) / cuMemAllocAsync (kind async, on `stream`).
  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out);
  // cuMemFree / cuMemFreeAsync.
  Status release(DevicePtr ptr, MemoryKind kind, StreamId stream);
  // A launch of kernel `kernel` whose argument words are `words`, on `stream`.
  void launch(std::span<const std::uint64_t> words, StreamId stream, std::uint64_t kernel = 0);
  // A kernel on `stream` touches the buffer containing `ptr` (a launch with one argument).
  void touch(DevicePtr ptr, StreamId stream) { launch(std::span<const std::uint64_t>(&ptr, 1), stream); }
  // A copy (kind copy; src 0 for host memory) or memset (kind memset, src 0) on `stream`, with its
  // signature token (trace::SignatureBuilder::copy_token / memset_token).
  void transfer(DevicePtr dst, DevicePtr src, StreamId stream, AccessKind kind, std::uint64_t token);
  // memtool_iteration_mark().
  void mark_iteration();

  [[nodiscard]] Summary summary();
  [[nodiscard]] std::string state() { return summary().state; }
  [[nodiscard]] MemoryUse memory_use() { return runtime_->stack().memory_use(); }
  [[nodiscard]] std::uint64_t program_free(std::uint64_t driver_free) const {
    return runtime_->program_free(driver_free);
  }
  void shutdown(bool release_memory = true) { runtime_->shutdown(release_memory); }

  [[nodiscard]] Observer& observer() { return *observer_; }
  [[nodiscard]] Runtime& runtime() { return *runtime_; }

 private:
  std::mutex mutex_;  // the observer's
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<Runtime> runtime_;
  std::vector<std::uint64_t> touched_;
};

}  // namespace memtool::engine
