// The "training program" of the pool tests: what an application and libmemtool.so's hooks do
// together, on the simulated device. Every allocation goes through the engine; on success the
// hook side calls touch() for the stream about to write it (unless `hooks_touch` is off — the
// negative control), and the kernel writes a pattern owned by that buffer; every use verifies
// and rewrites it; every free verifies it first. Buffers handed out over a live one, or
// reused without ordering, are therefore caught (corrupted / overlaps / device violations).
// Also the synthetic iteration shapes of tests/apps: an MLP (persistent weights, per-iteration
// activations and gradients), a conv net with a loader stream prefetching the next batch onto
// the compute stream (two streams trading buffers, a buffer living across the boundary), and
// async allocations freed on another stream.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <chrono>
#include <string>
#include <thread>

#include "memtool/engine/engine.hpp"
#include "memtool/engine/log.hpp"
#include "memtool/engine/sim_device.hpp"

namespace memtool::engine::test {

// The pool strategy as these tests drive it: the whole engine (observer and runtime, called in
// the handlers' order) running the pool strategy on the simulated device, with step finding on
// the calling thread so that what a test sees does not depend on timing.
struct MemInfo {
  std::uint64_t pool_reserved = 0;
  std::uint64_t pool_in_use = 0;
  std::uint64_t passed_through_live = 0;
  std::uint64_t reserved = 0;
  std::uint64_t in_use = 0;
  [[nodiscard]] std::uint64_t program_free(std::uint64_t driver_free) const {
    return driver_free + (reserved - in_use);
  }
};

// The engine's log lines while it lives (the engine logs through one process-wide sink).
class LogCapture {
 public:
  LogCapture() {
    std::lock_guard lock(mutex());
    lines_store().clear();
    set_log_sink([](LogLevel, std::string_view line) {
      std::lock_guard inner(mutex());
      lines_store().emplace_back(line);
    });
  }
  ~LogCapture() { set_log_sink(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mutex());
    return lines_store();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::string>& lines_store() {
    static std::vector<std::string> v;
    return v;
  }
};

// `synchronous_detection`: the step found on the calling thread (deterministic); false: the
// detection worker, as libmemtool.so does by default.
inline EngineOptions pool_engine_options(const PoolOptions& pool, bool synchronous_detection = true) {
  EngineOptions o;
  o.strategy.name = "pool";
  o.strategy.pool = pool;
  o.observer.synchronous_detection = synchronous_detection;
  return o;
}

class PoolEngine {
 public:
  PoolEngine(Device& device, const PoolOptions& options, bool synchronous_detection = true)
      : engine_(device, pool_engine_options(options, synchronous_detection)) {}
  Status allocate(std::uint64_t size, MemoryKind kind, StreamId stream, DevicePtr* out) {
    return engine_.allocate(size, kind, stream, out);
  }
  Status release(DevicePtr ptr, MemoryKind kind, StreamId stream) { return engine_.release(ptr, kind, stream); }
  void touch(DevicePtr ptr, StreamId stream) { engine_.touch(ptr, stream); }
  void mark_iteration() { engine_.mark_iteration(); }
  void shutdown() { engine_.shutdown(true); }
  std::string state() { return engine_.state(); }
  Summary summary() { return engine_.summary(); }
  MemInfo mem_info() {
    const MemoryUse use = engine_.memory_use();
    MemInfo info;
    info.pool_reserved = use.pool_reserved;
    info.passed_through_live = use.reserved - use.pool_reserved;
    info.pool_in_use = use.in_use - info.passed_through_live;
    info.reserved = use.reserved;
    info.in_use = use.in_use;
    return info;
  }
  // Asynchronous planning: waits until the planner has answered once more than at the start.
  void wait_for_planner(const Summary& before) {
    for (int i = 0; i < 3000; ++i) {
      const Summary s = summary();
      if (s.plans_made + s.plan_failures > before.plans_made + before.plan_failures) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Engine& engine() { return engine_; }

 private:
  Engine engine_;
};

struct Buffer {
  DevicePtr ptr = 0;
  std::uint64_t size = 0;
  std::uint32_t seed = 0;
  MemoryKind kind = MemoryKind::device;
  StreamId last_stream = 0;  // the stream of the last kernel that wrote it
};

class Program {
 public:
  Program(PoolEngine& engine, SimDevice& device, bool hooks_touch = true)
      : engine_(engine), device_(device), hooks_touch_(hooks_touch) {}

  std::optional<Buffer> alloc(std::uint64_t size, StreamId stream, MemoryKind kind = MemoryKind::device) {
    Buffer b{0, size, next_seed_.fetch_add(1), kind};
    if (host_sync_before_alloc) device_.synchronize();
    last_status_ = engine_.allocate(size, kind, kind == MemoryKind::async ? stream : 0, &b.ptr);
    if (last_status_ != kSuccess) return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto next = live_.lower_bound(b.ptr);
      if (next != live_.end() && next->first < b.ptr + size) ++overlaps;
      if (next != live_.begin() && std::prev(next)->second > b.ptr) ++overlaps;
      live_.emplace(b.ptr, b.ptr + size);
    }
    write(b, stream);
    b.last_stream = stream;
    return b;
  }

  // A kernel on `stream` reading the buffer and writing it again. Like any correct program,
  // it orders a use on another stream after the producer (its own event and wait): only the
  // reuse of memory across *different* buffers is the engine's business.
  void use(Buffer& b, StreamId stream) {
    if (!device_.verify(b.ptr, b.size, b.seed)) ++corrupted;
    if (b.last_stream != stream) {
      EventId e = 0;
      device_.create_event(&e);
      device_.record_event(e, b.last_stream);
      device_.stream_wait_event(stream, e);
      device_.destroy_event(e);
      ++app_waits;
    }
    write(b, stream);
    b.last_stream = stream;
  }

  void free(const Buffer& b, StreamId stream = 0) {
    if (!device_.verify(b.ptr, b.size, b.seed)) ++corrupted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(b.ptr);
    }
    if (engine_.release(b.ptr, b.kind, stream) != kSuccess) ++failed_frees;
  }

  Status last_status() const { return last_status_; }

  std::atomic<std::uint64_t> corrupted{0};
  std::atomic<std::uint64_t> overlaps{0};
  std::atomic<std::uint64_t> failed_frees{0};
  std::atomic<std::uint64_t> app_waits{0};  // the program's own cross-stream waits
  bool host_sync_before_alloc = false;      // cuCtxSynchronize before every allocation

 private:
  void write(const Buffer& b, StreamId stream) {
    if (hooks_touch_) engine_.touch(b.ptr, stream);
    if (!device_.access(stream, b.ptr, b.size)) ++corrupted;
    device_.fill(b.ptr, b.size, b.seed);
  }

  PoolEngine& engine_;
  SimDevice& device_;
  bool hooks_touch_;
  std::mutex mutex_;
  std::map<DevicePtr, DevicePtr> live_;
  std::atomic<std::uint32_t> next_seed_{1};
  thread_local static inline Status last_status_ = kSuccess;
};

inline constexpr std::uint64_t kUnit = 1024;

// MLP: weights allocated once; per iteration the forward activations, the loss, the backward
// gradients (freed in reverse as backprop proceeds) and an odd-sized scratch buffer.
struct Mlp {
  std::vector<Buffer> weights;
  StreamId stream = 7;

  void setup(Program& p) {
    for (std::uint64_t w : {64, 128, 32}) weights.push_back(*p.alloc(w * kUnit, stream));
  }
  void iteration(Program& p, std::uint64_t batch) {
    const StreamId s = stream;
    auto x = *p.alloc(batch * 4 * kUnit, s);
    auto h1 = *p.alloc(batch * 8 * kUnit, s);
    p.use(weights[0], s);
    auto h2 = *p.alloc(batch * 8 * kUnit, s);
    p.use(weights[1], s);
    auto y = *p.alloc(batch * kUnit, s);
    auto loss = *p.alloc(300, s);
    auto dy = *p.alloc(batch * kUnit, s);
    p.free(loss);
    p.free(y);
    auto dh2 = *p.alloc(batch * 8 * kUnit, s);
    p.free(dy);
    p.free(h2);
    auto dh1 = *p.alloc(batch * 8 * kUnit, s);
    p.use(weights[2], s);
    p.free(dh2);
    p.free(h1);
    auto scratch = *p.alloc(3 * kUnit + 100, s);
    p.free(scratch);
    p.free(dh1);
    p.free(x);
  }
  void teardown(Program& p) {
    for (const Buffer& w : weights) p.free(w);
    weights.clear();
  }
};

// Conv net with a loader stream: the next batch is allocated and written on `loader` during
// iteration i and consumed and freed on `compute` in iteration i + 1.
struct ConvNet {
  StreamId loader = 11;
  StreamId compute = 12;
  std::vector<Buffer> weights;
  std::optional<Buffer> prefetched;

  void setup(Program& p) {
    for (std::uint64_t w : {16, 48, 96}) weights.push_back(*p.alloc(w * kUnit, compute));
  }
  void iteration(Program& p, std::uint64_t scale) {
    auto next = *p.alloc(6 * kUnit * scale, loader);
    Buffer in = prefetched ? *prefetched : *p.alloc(6 * kUnit * scale, loader);
    p.use(in, compute);
    auto ws = *p.alloc(2 * kUnit, compute);
    p.free(ws);
    auto c1 = *p.alloc(12 * kUnit * scale, compute);
    p.use(weights[0], compute);
    auto c2 = *p.alloc(12 * kUnit * scale, compute);
    p.free(c1);
    p.free(in);
    auto pooled = *p.alloc(3 * kUnit * scale, compute);
    p.use(weights[1], compute);
    p.free(c2);
    auto stats = *p.alloc(kUnit, loader);  // the loader's bookkeeping reuses compute's memory
    auto fc = *p.alloc(kUnit * scale, compute);
    p.free(pooled);
    auto grad = *p.alloc(12 * kUnit * scale, compute);
    p.use(weights[2], compute);
    p.free(fc);
    p.free(stats);
    p.free(grad);
    prefetched = next;
  }
  void teardown(Program& p) {
    if (prefetched) p.free(*prefetched);
    prefetched.reset();
    for (const Buffer& w : weights) p.free(w);
    weights.clear();
  }
};

// Stream-ordered allocations: allocated with cuMemAllocAsync on one stream, used on another,
// freed with cuMemFreeAsync on the second.
struct AsyncPipeline {
  StreamId a = 21;
  StreamId b = 22;
  void iteration(Program& p) {
    auto x = *p.alloc(8 * kUnit, a, MemoryKind::async);
    auto y = *p.alloc(4 * kUnit, a, MemoryKind::async);
    p.use(x, b);
    p.free(x, b);
    auto z = *p.alloc(8 * kUnit, b, MemoryKind::async);
    p.use(y, b);
    p.free(y, a);
    p.use(z, a);
    p.free(z, b);
  }
};

// What the engine tests plan with: on the calling thread, so a test sees the plan at once, and
// briefly, so the tests stay fast.
inline PoolOptions sync_options(double plan_time_limit_seconds = 0.02) {
  PoolOptions o;
  o.synchronous_planning = true;
  o.plan_time_limit_seconds = plan_time_limit_seconds;
  return o;
}

// The invariants every engine test ends on: no corrupted byte, no overlap, every free accepted,
// no unordered reuse on the device.
inline void check_clean(const Program& p, const SimDevice& d) {
  CHECK(p.corrupted == 0);
  CHECK(p.overlaps == 0);
  CHECK(p.failed_frees == 0);
  CHECK(d.violations() == 0);
}

// The usual set-up of an engine test (a TEST_CASE_METHOD fixture): a default simulated device,
// an engine planning synchronously on it, and the program driving both.
struct EngineRig {
  explicit EngineRig(double plan_time_limit_seconds = 0.02) : engine(d, sync_options(plan_time_limit_seconds)) {}

  SimDevice d;
  PoolEngine engine;
  Program p{engine, d};
};

}  // namespace memtool::engine::test
