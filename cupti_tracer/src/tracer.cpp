// Tracer (see tracer.hpp): start-up (load, probe for another subscriber, register the buffer
// callbacks, enable the activity kinds and the driver/runtime API records the joins need),
// buffer completion, the flush thread, stop and fork.
#include "memtool/cupti/tracer.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "activity_buffers.hpp"
#include "correlation_install.hpp"
#include "cupti_library.hpp"
#include "memtool/cupti/correlation.hpp"
#include "record_join.hpp"

namespace memtool::cupti {

using detail::LoadedCupti;

struct Tracer::Impl {
  Impl(TracerSettings s, LoadedCupti c, GpuTimeSink* k, GpuTimeStore* t)
      : settings(std::move(s)),
        cupti(std::move(c)),
        buffers(settings.buffer_bytes, settings.max_buffers),
        sink(k),
        store(t) {}

  TracerSettings settings;
  LoadedCupti cupti;
  detail::ActivityBuffers buffers;
  GpuTimeSink* sink;
  GpuTimeStore* store;
  std::vector<CUpti_ActivityKind> enabled;

  mutable std::mutex join_mutex;  // one buffer at a time through the join; never held across a CUPTI flush
  detail::RecordJoin join;
  detail::JoinBatch batch;

  std::atomic<std::int64_t> clock_offset{0};  // trace clock = CUPTI's + offset
  std::atomic<bool> stopped{false};
  std::atomic<bool> abandoned{false};  // forked child
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> completed_buffers{0};
  std::atomic<std::uint64_t> flushes{0};
  int flushes_without_buffers = 0;               // flushes after pushes that got nothing back (flush thread)
  std::atomic<std::uint64_t> last_buffer_ns{0};  // when a buffer last came back (monotonic)

  std::mutex flush_mutex;
  std::condition_variable flush_cv;
  bool flush_requested = false;  // flush_mutex
  bool flush_stop = false;       // flush_mutex
  pthread_t flush_thread{};
  bool flush_thread_running = false;

  void log(TracerLogLevel level, const std::string& message) const {
    if (settings.log != nullptr) settings.log(level, message);
  }
  std::string result_text(CUptiResult result) const {
    const char* text = nullptr;
    if (cupti.api.cuptiGetResultString == nullptr || cupti.api.cuptiGetResultString(result, &text) != CUPTI_SUCCESS ||
        text == nullptr) {
      return fmt::format("CUPTI error {}", static_cast<int>(result));
    }
    return text;
  }

  void measure_clock_offset() noexcept;
  void complete(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t valid) noexcept;
  void deliver_locked() noexcept;
  void flush(bool final) noexcept;
  bool start_flush_thread() noexcept;
  void stop_flush_thread() noexcept;
  static void* flush_main(void* self) noexcept;
};

// Every CUPTI call after start-up goes through here: a failure is said once per call site (with
// CUPTI's name for it) and its status returned, never repeated per buffer or flush (kineto's way).
#define MEMTOOL_CUPTI_CALL(impl, call)                                                                            \
  [&]() -> CUptiResult {                                                                                          \
    const CUptiResult memtool_cupti_result = (impl).cupti.api.call;                                               \
    if (memtool_cupti_result != CUPTI_SUCCESS) {                                                                  \
      static std::atomic<bool> memtool_cupti_said{false};                                                         \
      if (!memtool_cupti_said.exchange(true, std::memory_order_relaxed)) {                                        \
        (impl).log(TracerLogLevel::warn, "CUPTI: " #call " failed: " + (impl).result_text(memtool_cupti_result)); \
      }                                                                                                           \
    }                                                                                                             \
    return memtool_cupti_result;                                                                                  \
  }()

namespace {

std::atomic<Tracer::Impl*> g_active{nullptr};  // the running tracer: CUPTI's callbacks have no user data
std::atomic<int> g_callbacks_in_flight{0};

// Keeps the running tracer alive while a callback uses it (stop() waits for these).
class ActiveTracer {
 public:
  ActiveTracer() noexcept {
    g_callbacks_in_flight.fetch_add(1, std::memory_order_acq_rel);
    impl_ = g_active.load(std::memory_order_acquire);
  }
  ~ActiveTracer() { g_callbacks_in_flight.fetch_sub(1, std::memory_order_acq_rel); }
  ActiveTracer(const ActiveTracer&) = delete;
  ActiveTracer& operator=(const ActiveTracer&) = delete;
  [[nodiscard]] Tracer::Impl* get() const noexcept { return impl_; }

 private:
  Tracer::Impl* impl_ = nullptr;
};

void CUPTIAPI buffer_requested(std::uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  const ActiveTracer active;
  Tracer::Impl* t = active.get();
  if (t == nullptr || t->abandoned.load(std::memory_order_relaxed)) return;
  *buffer = t->buffers.take();
  if (*buffer != nullptr) *size = t->buffers.bytes();
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, size_t /*size*/,
                               size_t valid) {
  const ActiveTracer active;
  Tracer::Impl* t = active.get();
  if (t == nullptr) {  // after stop(): nobody to give it to
    std::free(buffer);
    return;
  }
  t->complete(context, stream, buffer, valid);
}

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool has_prefix(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

// Driver- and runtime-API records for the calls that put work on the GPU: the external
// correlation records come with the driver ones, and the runtime ones let a kernel that carries
// its runtime call's correlation id find the driver call inside it. Per API where CUPTI can
// (cuptiActivityEnable{Driver,Runtime}Api), else the whole kind.
struct ApiRecords {
  std::size_t driver = 0;
  std::size_t runtime = 0;
  bool whole_driver_kind = false;
  bool whole_runtime_kind = false;
};

ApiRecords enable_api_records(Tracer::Impl& t) {
  const detail::CuptiApi& api = t.cupti.api;
  ApiRecords out;
  constexpr std::uint32_t kMaxCallbackId = 4096;  // above every driver and runtime cbid so far
  if (api.cuptiActivityEnableDriverApi != nullptr && api.cuptiGetCallbackName != nullptr) {
    for (std::uint32_t id = 1; id < kMaxCallbackId; ++id) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (std::find(t.settings.driver_apis.begin(), t.settings.driver_apis.end(), name) ==
          t.settings.driver_apis.end()) {
        continue;
      }
      if (api.cuptiActivityEnableDriverApi(id, 1) == CUPTI_SUCCESS) ++out.driver;
    }
  }
  if (out.driver == 0 && api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS) {
    out.whole_driver_kind = true;
    t.enabled.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  }
  if (api.cuptiActivityEnableRuntimeApi != nullptr && api.cuptiGetCallbackName != nullptr) {
    for (std::uint32_t id = 1; id < kMaxCallbackId; ++id) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) != CUPTI_SUCCESS || name == nullptr)
        continue;
      if (!has_prefix(name, {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset"})) continue;
      if (api.cuptiActivityEnableRuntimeApi(id, 1) == CUPTI_SUCCESS) ++out.runtime;
    }
  }
  if (out.runtime == 0 && api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS) {
    out.whole_runtime_kind = true;
    t.enabled.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  }
  return out;
}

}  // namespace

void Tracer::Impl::measure_clock_offset() noexcept {
  // The sample with the shortest bracket is the closest pair of readings.
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < 5; ++i) {
    std::uint64_t cupti_ns = 0;
    const std::uint64_t before = monotonic_ns();
    if (MEMTOOL_CUPTI_CALL(*this, cuptiGetTimestamp(&cupti_ns)) != CUPTI_SUCCESS) return;
    const std::uint64_t after = monotonic_ns();
    if (after - before < best) {
      best = after - before;
      clock_offset.store(static_cast<std::int64_t>(before + (after - before) / 2 - cupti_ns),
                         std::memory_order_relaxed);
    }
  }
}

void Tracer::Impl::deliver_locked() noexcept {
  if (batch.records.empty()) return;
  if (sink != nullptr) sink->deliver(batch.records, batch.kernel_names);
  if (store != nullptr) {
    try {
      store->add(batch.records);
    } catch (...) {  // a mutex failure: the store misses this batch, the trace has it
    }
  }
  batch.clear();
}

void Tracer::Impl::complete(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t valid) noexcept {
  if (!abandoned.load(std::memory_order_relaxed)) {
    try {
      std::lock_guard lock(join_mutex);
      join.add_buffer(cupti.api.cuptiActivityGetNextRecord, buffer, valid, clock_offset.load(std::memory_order_relaxed),
                      batch);
      deliver_locked();
    } catch (...) {  // out of memory in the join's tables: this buffer's records are lost
      batch.clear();
    }
    size_t lost = 0;
    if (MEMTOOL_CUPTI_CALL(*this, cuptiActivityGetNumDroppedRecords(context, stream, &lost)) == CUPTI_SUCCESS &&
        lost != 0) {
      dropped.fetch_add(lost, std::memory_order_relaxed);
    }
  }
  completed_buffers.fetch_add(1, std::memory_order_relaxed);
  last_buffer_ns.store(monotonic_ns(), std::memory_order_relaxed);
  buffers.give_back(buffer);
}

void Tracer::Impl::flush(bool final) noexcept {
  if (abandoned.load(std::memory_order_relaxed)) return;
  const bool pushed = detail::g_pushed_since_flush.exchange(false, std::memory_order_relaxed);
  const std::uint64_t buffers_before = completed_buffers.load(std::memory_order_relaxed);
  // No lock of ours here: CUPTI hands the buffers back through buffer_completed, which takes them.
  (void)MEMTOOL_CUPTI_CALL(*this, cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
  // Work was correlated, yet no buffer came back to us, three flushes running and for two
  // seconds (long kernels keep their buffers back a while): another tool registered its buffers
  // after us (the last registration wins) and gets our records. Stop pushing ids into its
  // records; its activity kinds are its business, so they stay enabled.
  if (!final && pushed) {
    flushes_without_buffers =
        completed_buffers.load(std::memory_order_relaxed) == buffers_before ? flushes_without_buffers + 1 : 0;
    const bool silent = monotonic_ns() - last_buffer_ns.load(std::memory_order_relaxed) > 2000000000ULL;
    if (flushes_without_buffers >= 3 && silent && detail::g_correlating.exchange(false, std::memory_order_relaxed)) {
      log(settings.required ? TracerLogLevel::warn : TracerLogLevel::info,
          "CUPTI: another tool took CUPTI's activity buffers (a profiler started after memtool); memtool stops "
          "recording GPU times");
    }
  }
  try {
    std::lock_guard lock(join_mutex);
    join.end_of_flush(batch, final);
    deliver_locked();
  } catch (...) {
    batch.clear();
  }
  flushes.fetch_add(1, std::memory_order_relaxed);
  measure_clock_offset();
}

void* Tracer::Impl::flush_main(void* self) noexcept {
  auto& t = *static_cast<Impl*>(self);
  std::unique_lock lock(t.flush_mutex);
  while (!t.flush_stop) {
    t.flush_cv.wait_for(lock, std::chrono::milliseconds(t.settings.flush_period_ms),
                        [&] { return t.flush_requested || t.flush_stop; });
    if (t.flush_stop) break;
    t.flush_requested = false;
    lock.unlock();
    t.flush(false);
    lock.lock();
  }
  return nullptr;
}

bool Tracer::Impl::start_flush_thread() noexcept {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  (void)pthread_attr_setstacksize(&attr, 1u << 20);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the program's signals are not ours to take
  const bool ok = pthread_create(&flush_thread, &attr, &Impl::flush_main, this) == 0;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attr);
  if (ok) (void)pthread_setname_np(flush_thread, "memtool-cupti");
  flush_thread_running = ok;
  return ok;
}

void Tracer::Impl::stop_flush_thread() noexcept {
  if (!flush_thread_running) return;
  {
    std::lock_guard lock(flush_mutex);
    flush_stop = true;
  }
  flush_cv.notify_one();
  pthread_join(flush_thread, nullptr);
  flush_thread_running = false;
}

std::unique_ptr<Tracer> Tracer::start(TracerSettings settings, GpuTimeSink* sink, GpuTimeStore* store) {
  const TracerLogLevel failure = settings.required ? TracerLogLevel::warn : TracerLogLevel::info;
  auto say = [&](TracerLogLevel level, const std::string& message) {
    if (settings.log != nullptr) settings.log(level, message);
  };
  if (g_active.load(std::memory_order_acquire) != nullptr) {
    say(failure, "CUPTI: a tracer is already running in this process");
    return nullptr;
  }
  detail::LibrarySearch search;
  search.explicit_library = settings.library;
  const auto getenv =
      settings.getenv ? settings.getenv : [](const char* name) -> const char* { return std::getenv(name); };
  if (const char* home = getenv("CUDA_HOME"); home != nullptr) search.cuda_home = home;
  search.driver_major = settings.driver_version / 1000;
  search.loaded_objects = detail::loaded_object_paths();
  std::string why;
  std::optional<LoadedCupti> loaded = detail::load_cupti(search, &why);
  if (!loaded) {
    say(failure, "CUPTI: " + why + "; no GPU times");
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(std::move(settings), std::move(*loaded), sink, store);
  Impl& t = *impl;
  const detail::CuptiApi& api = t.cupti.api;
  std::uint32_t version = 0;
  (void)api.cuptiGetVersion(&version);

  // Another tool holding CUPTI's callbacks (kineto, Nsight, compute-sanitizer) would lose its
  // activity buffers to ours (the last registration wins): find out, then leave it alone.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult subscribed = api.cuptiSubscribe(&probe, &no_callback, nullptr);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    t.log(failure,
          "CUPTI: another tool already uses CUPTI (a profiler or sanitizer); memtool leaves it alone and "
          "records no GPU times");
    return nullptr;
  }
  if (subscribed != CUPTI_SUCCESS) {
    t.log(failure,
          fmt::format("CUPTI ({}) cannot trace here: {}; no GPU times", t.cupti.path, t.result_text(subscribed)));
    return nullptr;
  }
  (void)api.cuptiUnsubscribe(probe);

  if (const CUptiResult r = api.cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
      r != CUPTI_SUCCESS) {
    t.log(failure, "CUPTI: cuptiActivityRegisterCallbacks failed: " + t.result_text(r) + "; no GPU times");
    return nullptr;
  }
  g_active.store(&t, std::memory_order_release);  // buffers may be asked for from the first enable on
  auto give_up = [&](const std::string& message) -> std::unique_ptr<Tracer> {
    for (const CUpti_ActivityKind kind : t.enabled) (void)api.cuptiActivityDisable(kind);
    (void)api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    g_active.store(nullptr, std::memory_order_release);
    while (g_callbacks_in_flight.load(std::memory_order_acquire) != 0) sched_yield();
    t.log(failure, message);
    return nullptr;
  };
  for (const CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    const CUptiResult r = api.cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      return give_up(fmt::format("CUPTI: cannot enable activity kind {}: {}; no GPU times", static_cast<int>(kind),
                                 t.result_text(r)));
    }
    t.enabled.push_back(kind);
  }
  const ApiRecords api_records = enable_api_records(t);
  t.measure_clock_offset();
  t.last_buffer_ns.store(monotonic_ns(), std::memory_order_relaxed);
  detail::install_correlation(api.cuptiActivityPushExternalCorrelationId, api.cuptiActivityPopExternalCorrelationId);
  detail::g_correlating.store(true, std::memory_order_release);
  if (!t.start_flush_thread()) {
    t.log(TracerLogLevel::warn, "CUPTI: no flush thread; GPU times arrive when CUPTI's buffers fill, and at exit");
  }
  t.log(TracerLogLevel::info,
        fmt::format("CUPTI {} ({}{}): timing kernels, copies and memsets; {} driver and {} runtime API records{}{}",
                    version, t.cupti.path, t.cupti.already_loaded ? ", already loaded" : "", api_records.driver,
                    api_records.runtime, api_records.whole_driver_kind ? "; every driver call traced" : "",
                    api_records.whole_runtime_kind ? "; every runtime call traced" : ""));
  return std::unique_ptr<Tracer>(new Tracer(std::move(impl)));
}

Tracer::Tracer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tracer::~Tracer() {
  if (impl_ == nullptr) return;
  if (impl_->abandoned.load(std::memory_order_relaxed)) {
    (void)impl_.release();  // a forked child: the flush thread and CUPTI's state are the parent's
    return;
  }
  stop();
}

void Tracer::request_flush() noexcept {
  Impl& t = *impl_;
  if (t.stopped.load(std::memory_order_relaxed) || t.abandoned.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(t.flush_mutex);
    t.flush_requested = true;
  }
  t.flush_cv.notify_one();
}

void Tracer::flush_now() noexcept {
  if (!impl_->stopped.load(std::memory_order_relaxed)) impl_->flush(false);
}

void Tracer::stop() noexcept {
  Impl& t = *impl_;
  if (t.abandoned.load(std::memory_order_relaxed) || t.stopped.exchange(true)) return;
  detail::g_correlating.store(false, std::memory_order_release);
  t.stop_flush_thread();
  t.flush(true);
  for (const CUpti_ActivityKind kind : t.enabled) (void)MEMTOOL_CUPTI_CALL(t, cuptiActivityDisable(kind));
  g_active.store(nullptr, std::memory_order_release);
  while (g_callbacks_in_flight.load(std::memory_order_acquire) != 0) sched_yield();
  const TracerStats s = stats();
  t.log(TracerLogLevel::info, fmt::format("CUPTI: timed {} kernels, {} copies, {} memsets; {} joined to their event, "
                                          "{} without one; {} buffers, {} flushes",
                                          s.kernels, s.copies, s.memsets, s.joined,
                                          s.kernels + s.copies + s.memsets - s.joined, s.buffers, s.flushes));
  if (s.dropped != 0 || s.refused_buffers != 0) {
    t.log(TracerLogLevel::warn,
          fmt::format("CUPTI dropped {} records ({} buffer requests refused at the cap of {} x {} bytes): raise "
                      "MEMTOOL_CUPTI_BUFFERS or MEMTOOL_CUPTI_BUFFER_BYTES",
                      s.dropped, s.refused_buffers, t.settings.max_buffers, t.buffers.bytes()));
  }
}

void Tracer::after_fork_in_child() noexcept {
  impl_->abandoned.store(true, std::memory_order_relaxed);
  impl_->stopped.store(true, std::memory_order_relaxed);
  detail::g_correlating.store(false, std::memory_order_relaxed);
  g_active.store(nullptr, std::memory_order_relaxed);
}

TracerStats Tracer::stats() const noexcept {
  const Impl& t = *impl_;
  TracerStats s;
  {
    std::lock_guard lock(t.join_mutex);
    const detail::JoinCounters& c = t.join.counters();
    s.kernels = c.kernels;
    s.copies = c.copies;
    s.memsets = c.memsets;
    s.joined = c.joined;
    s.untimed = c.untimed;
  }
  s.dropped = t.dropped.load(std::memory_order_relaxed);
  s.buffers = t.completed_buffers.load(std::memory_order_relaxed);
  s.refused_buffers = t.buffers.refused();
  s.flushes = t.flushes.load(std::memory_order_relaxed);
  return s;
}

const std::string& Tracer::library_path() const noexcept { return impl_->cupti.path; }

}  // namespace memtool::cupti
