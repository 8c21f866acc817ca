// PoolMode and DriverDeviceOps: the pool engine wired to the real driver, fail-open
// (see pool_mode.hpp).
#include "memtool/interpose/pool_mode.hpp"

#include <exception>

#include "memtool/interpose/log.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/planner/placement.hpp"

namespace memtool::interpose {
namespace {

CUstream as_stream(pool::StreamId stream) { return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(stream)); }
CUevent as_event(pool::EventId event) { return reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(event)); }

}  // namespace

// --- DriverDeviceOps ----------------------------------------------------------------------------

pool::DriverStatus DriverDeviceOps::allocate(std::uint64_t size, pool::MemoryKind kind, pool::StreamId stream,
                                             pool::DevicePtr* out) {
  CUdeviceptr ptr = 0;
  CUresult result = CUDA_ERROR_NOT_SUPPORTED;
  if (kind == pool::MemoryKind::async) {
    if (f_.mem_alloc_async != nullptr) result = f_.mem_alloc_async(&ptr, size, as_stream(stream));
  } else {
    result = f_.mem_alloc(&ptr, size);
  }
  if (result == CUDA_SUCCESS) *out = static_cast<pool::DevicePtr>(ptr);
  return static_cast<pool::DriverStatus>(result);
}

pool::DriverStatus DriverDeviceOps::free(pool::DevicePtr ptr, pool::MemoryKind kind, pool::StreamId stream) {
  if (kind == pool::MemoryKind::async) {
    if (f_.mem_free_async == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    return static_cast<pool::DriverStatus>(f_.mem_free_async(static_cast<CUdeviceptr>(ptr), as_stream(stream)));
  }
  return static_cast<pool::DriverStatus>(f_.mem_free(static_cast<CUdeviceptr>(ptr)));
}

pool::DriverStatus DriverDeviceOps::create_event(pool::EventId* out) {
  CUevent event = nullptr;
  const CUresult result = f_.event_create(&event, CU_EVENT_DISABLE_TIMING);
  if (result == CUDA_SUCCESS) *out = reinterpret_cast<std::uintptr_t>(event);
  return static_cast<pool::DriverStatus>(result);
}

pool::DriverStatus DriverDeviceOps::record_event(pool::EventId event, pool::StreamId stream) {
  return static_cast<pool::DriverStatus>(f_.event_record(as_event(event), as_stream(stream)));
}

pool::DriverStatus DriverDeviceOps::stream_wait_event(pool::StreamId stream, pool::EventId event) {
  return static_cast<pool::DriverStatus>(f_.stream_wait_event(as_stream(stream), as_event(event), 0));
}

bool DriverDeviceOps::event_completed(pool::EventId event) { return f_.event_query(as_event(event)) == CUDA_SUCCESS; }

void DriverDeviceOps::destroy_event(pool::EventId event) { (void)f_.event_destroy(as_event(event)); }

// --- PoolMode ---------------------------------------------------------------------------------

namespace {

// The planner's function-local statics (its registry, heuristic tables) are built by their first
// use. Built first on the planner thread, they would be registered for destruction after our
// exit handler and so destroyed before it — while a plan may still be running. One tiny plan
// here, before libmemtool.so registers its exit handler, builds them early (destroyed last).
void build_planner_statics(const std::string& algorithm) {
  trace::Problem problem;
  problem.name = "memtool warm-up";
  trace::BufferRequest request;
  request.size = 512;
  request.alignment = 512;
  request.intervals.push_back({0, 1});
  problem.buffers.push_back(request);
  problem.time_horizon = 1;
  if (const planner::Algorithm* found = planner::find_algorithm(algorithm)) {
    planner::PlanOptions options;
    options.time_limit_seconds = 0.01;
    (void)found->plan(problem, options);
    (void)planner::lower_bound(problem);
  }
}

}  // namespace

PoolMode::PoolMode(const DriverFunctions& functions, PoolModeSettings settings) : ops_(functions) {
  build_planner_statics(settings.engine.algorithm);
  settings.engine.synchronous_planning = settings.synchronous_planning;
  // Called under the engine's lock: Log formats into a stack buffer and writes once.
  settings.engine.log = [](std::string_view line) { Log::write(LogLevel::info, "{}", line); };
  engine_ = std::make_unique<pool::PoolEngine>(ops_, std::move(settings.engine));
}

// Never destroyed in libmemtool.so (hooks may run during exit); tests destroy it.
PoolMode::~PoolMode() = default;

void PoolMode::disable(std::string_view reason) noexcept {
  if (failed_.exchange(true)) return;
  Log::write(LogLevel::error, "pool mode disabled, new allocations pass through to the driver: {}", reason);
  try {
    engine_->shutdown();
  } catch (...) {
    // The engine refuses even to stop: allocations bypass it from now on all the same.
  }
}

// Runs an engine step; an exception disables pool mode (fail-open) and falls through to
// what follows the step.
#define MEMTOOL_POOL_STEP(step, ...)           \
  try {                                        \
    __VA_ARGS__                                \
  } catch (const std::exception& e) {          \
    disable(e.what());                         \
  } catch (...) {                              \
    disable("unknown failure in " step);       \
  }

CUresult PoolMode::allocate(CUdeviceptr* out, std::uint64_t size, pool::MemoryKind kind,
                            pool::StreamId stream) noexcept {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  pool::DevicePtr ptr = 0;
  if (serving()) {
    MEMTOOL_POOL_STEP("an allocation", {
      const pool::DriverStatus status = engine_->allocate(size, kind, stream, &ptr);
      if (status == pool::kSuccess) *out = static_cast<CUdeviceptr>(ptr);
      return static_cast<CUresult>(status);
    })
  }
  const pool::DriverStatus status = ops_.allocate(size, kind, stream, &ptr);
  if (status == pool::kSuccess) *out = static_cast<CUdeviceptr>(ptr);
  return static_cast<CUresult>(status);
}

CUresult PoolMode::release(CUdeviceptr ptr, pool::MemoryKind kind, pool::StreamId stream) noexcept {
  // Even after a failure: pooled buffers still live must go back to their pool.
  MEMTOOL_POOL_STEP("a free", { return static_cast<CUresult>(engine_->release(ptr, kind, stream)); })
  return static_cast<CUresult>(ops_.free(ptr, kind, stream));
}

void PoolMode::touch(std::uint64_t address, pool::StreamId stream) noexcept {
  MEMTOOL_POOL_STEP("ordering a stream", { (void)engine_->touch(address, stream); })
}

void PoolMode::mark_iteration() noexcept {
  MEMTOOL_POOL_STEP("an iteration mark", { engine_->mark_iteration(); })
}

std::uint64_t PoolMode::program_free(std::uint64_t driver_free) const noexcept {
  try {
    return engine_->mem_info().program_free(driver_free);
  } catch (...) {
    return driver_free;
  }
}

void PoolMode::end_with_context(std::string_view why) noexcept {
  if (failed_.exchange(true)) return;
  Log::write(LogLevel::info, "memtool pool: {} ends the context: pools released, pool mode over", why);
  try {
    engine_->shutdown();
  } catch (...) {
    // Nothing more to release: the driver reclaims the context's memory anyway.
  }
}

// No driver call here (see pool_mode.hpp): the process's end returns the pools with everything
// else; they were already released if the program ended its context (end_with_context).
pool::Summary PoolMode::finish() noexcept {
  failed_.store(true);  // quietly: allocations after this pass through, frees still come here
  try {
    engine_->wait_for_planner();  // the planner thread must not outlive the exit
    return engine_->summary();
  } catch (...) {
    return {};
  }
}

pool::Summary PoolMode::summary() const noexcept {
  try {
    return engine_->summary();
  } catch (...) {
    return {};
  }
}

#undef MEMTOOL_POOL_STEP

}  // namespace memtool::interpose
