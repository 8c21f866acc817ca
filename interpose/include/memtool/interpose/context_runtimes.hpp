// One engine Runtime per CUDA context (DESIGN.md §2: a pool belongs to a context), made at the
// context's first allocation. An allocation goes to the runtime of the calling thread's current
// context, a free to the runtime that made the buffer (the observer's index knows its owner),
// and the accesses of a launch, copy or memset to every runtime that orders streams.
//
// Thread-safe. The lookup of the current context is the real cuCtxGetCurrent (a thread-local
// read in the driver) and a per-thread cache of the last answer.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "memtool/engine/runtime.hpp"
#include "memtool/engine/strategy.hpp"
#include "memtool/interpose/cuda_api.hpp"
#include "memtool/interpose/driver_device.hpp"

namespace memtool::interpose {

class IpcBridge;

class ContextRuntimes {
 public:
  using CurrentContext = CUresult (*)(CUcontext*);

  ContextRuntimes(engine::StrategyOptions options, engine::Device& device, engine::Observer& observer,
                  CurrentContext current_context);
  ContextRuntimes(const ContextRuntimes&) = delete;
  ContextRuntimes& operator=(const ContextRuntimes&) = delete;

  // The runtime of the calling thread's current context (made on first use).
  engine::Runtime& current();
  // The runtime that made a buffer (its owner id), or the current one when unknown.
  engine::Runtime& owner(std::uint32_t id);
  // Frees a buffer through the runtime that made it, with that runtime's context current (the
  // driver calls it makes act on the buffer's own device).
  engine::Status deallocate(std::uint32_t owner_id, std::uint64_t ptr, engine::MemoryKind kind,
                            engine::StreamId stream);
  // Several devices: the real cuCtxPushCurrent/cuCtxPopCurrent, to make a runtime's context
  // current around the calls into it from another context's thread (null: never switched).
  using PushContext = CUresult (*)(CUcontext);
  using PopContext = CUresult (*)(CUcontext*);
  void set_context_switch(PushContext push, PopContext pop) {
    push_ = push;
    pop_ = pop;
  }
  // The program enabled peer access (cuCtxEnablePeerAccess): memory on `owner` is reachable from
  // `accessor`; memory memtool maps on `owner` gets the same access (engine::Device).
  void peer_access_enabled(int owner, int accessor) { device_.grant_peer_access(owner, accessor); }
  // The program gave other devices access to a pool on `device` (cuMemPoolSetAccess). Replayed on
  // what memtool maps there (peer_access_enabled); but the pool strategy's arenas are cuMemAlloc
  // memory, which no grant can make reachable: under it, `device`'s cuMemAllocAsync requests stay
  // in the program's pool from then on (program_pool_for).
  void pool_shared(int device) {
    if (device >= 0 && device < 64) shared_pools_.fetch_or(std::uint64_t{1} << device, std::memory_order_relaxed);
  }
  [[nodiscard]] bool keeps_program_pool(int device) const {
    return options_.name == "pool" && device >= 0 && device < 64 &&
           (shared_pools_.load(std::memory_order_relaxed) >> device & 1) != 0;
  }
  // The device of `context` (null: the current one), through the real driver; false if unknown.
  using ContextDevice = CUresult (*)(CUdevice*);
  void set_context_device(ContextDevice get) { context_device_ = get; }
  bool device_of(CUcontext context, CUdevice* out) const;
  // A sub-allocated buffer's own extent, if `ptr` is inside one (pointer attribute queries);
  // its id is unique across contexts and never a driver buffer id (those count up from 1).
  [[nodiscard]] std::optional<engine::BufferExtent> extent_of(std::uint64_t ptr) const;
  // The program exports the buffer holding `ptr`: the runtime that serves it pins it.
  engine::ExportPin pin_for_export(std::uint64_t ptr);
  // memtool's own IPC handles (null in unit tests: exports of served buffers then fail).
  void set_ipc_bridge(IpcBridge* bridge) { ipc_bridge_.store(bridge, std::memory_order_release); }
  [[nodiscard]] IpcBridge* ipc_bridge() const { return ipc_bridge_.load(std::memory_order_acquire); }
  // The device over the real driver (handlers_access.cpp stands in with its functions for a call
  // the driver refuses only because memtool serves the memory, and tells it of value waits; null
  // in unit tests that need neither).
  void set_driver(DriverDevice* driver) { driver_.store(driver, std::memory_order_release); }
  [[nodiscard]] DriverDevice* driver() const { return driver_.load(std::memory_order_acquire); }
  [[nodiscard]] const DriverFunctions* driver_functions() const {
    const DriverDevice* d = driver();
    return d != nullptr ? &d->functions() : nullptr;
  }
  // Work on `stream` touches these buffers: every runtime that orders streams hears it.
  void before_access(std::span<const std::uint64_t> bases, engine::StreamId stream);
  // A whole launch, copy or memset with what memtool knows it may reach (engine::WorkItem).
  void before_item(const engine::WorkItem& item);
  // The program waited for the GPU in a synchronisation call: every runtime that orders streams
  // hears it (engine::Resource::on_host_sync).
  void on_host_sync(engine::StreamId stream, std::uint64_t waited_ns);
  [[nodiscard]] bool wants_accesses() const { return wants_accesses_.load(std::memory_order_relaxed); }
  // The context is being destroyed (or, end_all, a primary context released): its runtime stops
  // serving and frees what is idle; a context made current later gets a new one.
  void end_context(CUcontext context, const char* why);
  void end_all(const char* why);
  // Something the strategies rely on broke (recording): every runtime stops serving new
  // allocations, logged once; frees still reach them so pooled buffers return to their pools.
  void fail_all(const char* reason);
  // Every context's summary, merged (counters summed, peaks maximised).
  [[nodiscard]] engine::Summary summary();
  // Every runtime stops (at exit: release_memory false, no driver call).
  void shutdown_all(bool release_memory);

 private:
  struct Entry {
    CUcontext context = nullptr;
    std::unique_ptr<engine::Runtime> runtime;
    bool ended = false;
  };
  engine::Runtime& make_locked(CUcontext context);
  // Makes entry `i`'s context current for its lifetime when another one is (several contexts).
  class Scope {
   public:
    Scope(const ContextRuntimes& runtimes, std::size_t i);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const ContextRuntimes& runtimes_;
    bool pushed_ = false;
  };

  engine::StrategyOptions options_;
  engine::Device& device_;
  engine::Observer& observer_;
  CurrentContext current_context_;
  PushContext push_ = nullptr;
  PopContext pop_ = nullptr;
  ContextDevice context_device_ = nullptr;
  std::uint32_t max_runtimes_;
  const std::uint64_t instance_;
  std::mutex mutex_;
  std::vector<Entry> entries_;  // never shrinks: owner ids index it
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint64_t> generation_{1};  // bumped when a context ends: thread caches go stale
  std::atomic<bool> wants_accesses_{false};
  std::atomic<bool> failed_{false};
  std::atomic<IpcBridge*> ipc_bridge_{nullptr};
  std::atomic<DriverDevice*> driver_{nullptr};
  std::atomic<std::uint64_t> shared_pools_{0};  // devices whose pools the program shared (bit per ordinal)
};

}  // namespace memtool::interpose
