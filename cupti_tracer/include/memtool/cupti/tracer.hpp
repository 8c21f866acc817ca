// The CUPTI tracer: when every kernel, copy and memset really ran on the GPU, joined to the
// launch/copy/memset event memtool recorded for it (DESIGN.md §5).
//
// CUPTI is loaded at run time, never linked (cupti_library.cpp says where it is looked for).
// Only the activity API is used: CONCURRENT_KERNEL (never the serialising KERNEL kind), MEMCPY,
// MEMSET and EXTERNAL_CORRELATION, plus driver-API records for exactly the entry points whose
// external correlation ids the hooks push (CUPTI emits external-correlation records only for
// API calls it traces). No callback subscription is kept: at start the tracer subscribes once
// and unsubscribes at once, only to find out whether another tool (kineto, Nsight Systems or
// Compute, compute-sanitizer) holds CUPTI; if one does, memtool says so once and runs without
// GPU times rather than take the other tool's activity buffers (the last registration wins).
//
// Buffers: fixed size, at most `max_buffers` handed to CUPTI at once; past the cap CUPTI gets
// none and drops records (it counts them; so do we). Completed buffers come back on CUPTI's
// thread or on our flush thread; each is parsed and joined, the joined records go to the sink
// and the store, and the buffer goes back into the pool. No lock of ours is ever held across
// cuptiActivityFlushAll. The flush thread flushes at each iteration boundary (request_flush(),
// off the program's threads) and every `flush_period_ms`; stop() flushes the rest, forced.
// In a forked child the tracer is abandoned: no CUPTI call, no ids pushed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtool/cupti/gpu_time_store.hpp"
#include "memtool/trace/event.hpp"

namespace memtool::cupti {

enum class TracerLogLevel { info, warn };
using TracerLog = void (*)(TracerLogLevel level, std::string_view message);

// Where joined records go (the trace, through the recorder). `kernel_names[i]` is CUPTI's name
// of records[i] when it is a kernel (valid during the call only); the sink interns it for the
// records that name no event. Called from CUPTI's or the tracer's threads, one call at a time.
class GpuTimeSink {
 public:
  GpuTimeSink() = default;
  GpuTimeSink(const GpuTimeSink&) = delete;
  GpuTimeSink& operator=(const GpuTimeSink&) = delete;
  virtual ~GpuTimeSink() = default;
  virtual void deliver(std::span<const trace::GpuTimeRecord> records,
                       std::span<const std::string_view> kernel_names) noexcept = 0;
};

struct TracerSettings {
  std::string library;    // MEMTOOL_CUPTI_LIBRARY: the only one tried, after a libcupti already loaded
  bool required = false;  // MEMTOOL_CUPTI=on: failing to trace is a warning (auto: an info line)
  std::size_t buffer_bytes = std::size_t{1} << 20;
  std::size_t max_buffers = 16;
  int driver_version = 0;  // cuDriverGetVersion (0: unknown): which libcupti major to try first
  // The hooked entry points whose calls push an external correlation id (the hook table's
  // GPU-work symbols, twins included): CUPTI traces exactly these driver APIs.
  std::vector<std::string> driver_apis;
  std::function<const char*(const char*)> getenv;  // CUDA_HOME; nullptr: std::getenv
  std::uint32_t flush_period_ms = 200;
  TracerLog log = nullptr;  // nullptr: silent
};

struct TracerStats {
  std::uint64_t kernels = 0;  // GPU records delivered, by kind
  std::uint64_t copies = 0;
  std::uint64_t memsets = 0;
  std::uint64_t joined = 0;           // of those, joined to an event
  std::uint64_t untimed = 0;          // records without timestamps (left out)
  std::uint64_t dropped = 0;          // records CUPTI dropped (no buffer)
  std::uint64_t buffers = 0;          // buffers CUPTI handed back
  std::uint64_t refused_buffers = 0;  // requests refused at the cap
  std::uint64_t flushes = 0;
};

class Tracer {
 public:
  // Loads CUPTI and starts tracing into `sink` and `store` (both must outlive the tracer; either
  // may be null). nullptr when CUPTI cannot be had, another tool holds it, or it refuses: said
  // once through settings.log, and memtool carries on without GPU times. One tracer at a time.
  static std::unique_ptr<Tracer> start(TracerSettings settings, GpuTimeSink* sink, GpuTimeStore* store);

  ~Tracer();  // stop()
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // An iteration boundary: the flush thread flushes soon. Cheap, never blocks on CUPTI; any thread.
  void request_flush() noexcept;
  // Flushes now on the calling thread (tests; the flush thread does it otherwise).
  void flush_now() noexcept;
  // Stops pushing ids, joins the flush thread, flushes everything (forced) and delivers what
  // is left. Idempotent. CUPTI stays loaded; its activity kinds are disabled.
  void stop() noexcept;
  // In a forked child: forget CUPTI without calling it (its threads are the parent's).
  void after_fork_in_child() noexcept;

  [[nodiscard]] TracerStats stats() const noexcept;
  [[nodiscard]] const std::string& library_path() const noexcept;

  struct Impl;

 private:
  explicit Tracer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtool::cupti
