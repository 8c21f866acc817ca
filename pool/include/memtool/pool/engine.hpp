// PoolEngine: pool mode's in-process brain (DESIGN.md §2), CUDA-free. libmemtool.so's hooks
// stay thin — guard, call into the engine, return its status:
//
//   cuMemAlloc / cuMemAllocAsync   → allocate(size, kind, stream, &ptr)   (returns the status)
//   cuMemFree / cuMemFreeAsync     → release(ptr, kind, stream)           (returns the status)
//   launch / copy / memset touching a buffer on a stream
//                                  → touch(ptr, stream) before calling the real function
//                                    (issues the cuStreamWaitEvent the reuse needs)
//   memtool_iteration_mark()       → mark_iteration()
//   cuMemGetInfo                   → mem_info().program_free(driver_free)
//   exit                           → shutdown(); summary() / summary_line / write_summary_file
//
// The engine calls the real allocator and the event functions itself, through DeviceOps.
//
// States: OBSERVE → PLAN → APPLY → (drift) → OBSERVE. OBSERVE feeds alloc/free signature tokens
// to the IterationDetector (or takes explicit marks) and records positions; once the period is
// confirmed and a whole window plus one period of its frees has been seen, PLAN runs the
// planner on a worker thread (or inline with `synchronous_planning`) while calls pass through;
// at the next iteration boundary after the plan is ready the pool is allocated (or the current
// one reused when big enough) and APPLY serves the k-th allocation of each iteration from
// entries[k] when size, kind and stream match and the range is free (invariant 1); otherwise the
// real allocator serves it and a miss is counted. A small lookahead re-synchronises k after a
// dropped allocation. Too many misses (a fraction of one iteration, or a run of consecutive
// ones) drop the plan and return to OBSERVE. A pool that is too small for the next plan is
// released only once none of its buffers is live (it drains meanwhile).
//
// Invariant 2: a pooled free records one event per stream that used the buffer (touched it,
// or allocated/freed it stream-ordered); the next buffer in that range inherits the events and
// every stream that touches it waits on those recorded on other streams — once, at its first
// touch (an async allocation waits at once on its own stream). No host synchronisation.
// Events whose work has completed are dropped instead of waited on, and are reused.
//
// Thread-safe: one mutex; real allocations and frees are called outside it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "memtool/planner/placement.hpp"
#include "memtool/pool/device_ops.hpp"
#include "memtool/pool/summary.hpp"
#include "memtool/trace/problem.hpp"

namespace memtool::pool {

enum class EngineState : std::uint8_t { observe, plan, apply, disabled };
[[nodiscard]] std::string_view to_string(EngineState state);

// Replaces the planner (tests inject wrong plans; invariant 1 must still hold).
using PlanFunction = std::function<planner::Placement(const trace::Problem&)>;
using LogFunction = std::function<void(std::string_view line)>;

struct PoolOptions {
  std::string algorithm = "best";  // planner registry name
  double plan_time_limit_seconds = 1.0;
  bool synchronous_planning = false;  // plan on the calling thread (deterministic tests)
  bool validate_plan = true;          // reject a plan planner::validate finds invalid
  PlanFunction plan_override;         // used instead of `algorithm` when set
  std::uint64_t alignment = 512;      // offsets and footprints in the pool
  std::uint32_t confirm_periods = 3;  // periods that must repeat before planning
  std::uint64_t max_period = 1u << 16;  // longest iteration detected, in allocs + frees
  double drift_miss_fraction = 0.05;    // misses in one iteration above this fraction: drop
  std::uint64_t drift_min_misses = 2;   // ... and at least this many (one stray call is noise)
  std::uint64_t drift_consecutive_misses = 16;  // or this many misses in a row: drop
  std::uint64_t lookahead = 4;  // entries skipped to re-synchronise after a dropped allocation
  std::uint32_t max_pool_alloc_failures = 3;  // then pool mode disables itself (fail open)
  LogFunction log;  // info lines (plan applied, size vs LB, drops); called under the lock
};

class PoolEngine {
 public:
  PoolEngine(DeviceOps& device, PoolOptions options = {});
  // Joins the planner thread and releases pools with no live buffer (see shutdown()).
  ~PoolEngine();
  PoolEngine(const PoolEngine&) = delete;
  PoolEngine& operator=(const PoolEngine&) = delete;

  // An allocation request. kind device: cuMemAlloc (stream is ignored for matching unless
  // nonzero); kind async: cuMemAllocAsync on `stream`. Writes *out only on success; returns
  // the real allocator's status when it was called (kOutOfMemory included).
  DriverStatus allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out);
  // A free. Pooled buffers never reach the driver; others are passed to DeviceOps::free with
  // the same arguments (unknown pointers too), and its status is returned.
  DriverStatus release(DevicePtr ptr, MemoryKind kind, StreamId stream);
  // Work on `stream` is about to touch the buffer containing `ptr` (a launch argument, a copy
  // or memset range). Issues the waits that order it after earlier users of the memory and
  // returns how many. Cheap for addresses outside the pools.
  std::size_t touch(DevicePtr ptr, StreamId stream);
  // An explicit iteration boundary (memtool_iteration_mark()).
  void mark_iteration();

  // Stops planning and serving; passes everything through from now on. Pools with no live
  // buffer are released now, the others when their last buffer is freed.
  void shutdown();

  [[nodiscard]] EngineState state() const;
  [[nodiscard]] MemInfo mem_info() const;
  [[nodiscard]] Summary summary() const;
  // Waits until a plan being computed on the worker thread is finished (tests, benchmark).
  void wait_for_planner();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtool::pool
