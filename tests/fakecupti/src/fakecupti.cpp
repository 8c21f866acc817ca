// fakecupti: the subset of libcupti's activity API that memtool's tracer uses, on the CPU, fed by
// fakecuda (tests/fakecuda) — what libcupti does on top of the real driver:
//   - fakecuda tells us (fakecuda_set_work_observer) when each kernel, copy and memset is issued
//     (on the calling thread, inside the driver call) and when it really ran (on its stream's
//     worker thread); every issued call gets a correlation id, as CUPTI gives every API call;
//   - while the calling thread has external correlation ids pushed, an issued call whose
//     driver API is traced (CUPTI_ACTIVITY_KIND_DRIVER, or cuptiActivityEnableDriverApi for its
//     family) is preceded by one EXTERNAL_CORRELATION record per pushed kind, then its DRIVER
//     API record — CUPTI writes external-correlation records only for API calls it traces;
//   - when the work ran, a CONCURRENT_KERNEL (or KERNEL), MEMCPY or MEMSET record with its start
//     and end, in CUPTI's clock (CLOCK_REALTIME, as CUPTI's default on Linux), in the record
//     layouts of the toolkit's cupti_activity.h.
// Knobs (environment), for the tests: FAKECUPTI_OTHER_SUBSCRIBER=1 (another tool holds CUPTI:
// cuptiSubscribe fails), FAKECUPTI_REFUSE=1 (cuptiActivityEnable fails, as without profiling
// permission), FAKECUPTI_CORRELATION_LAST=1 (activity_stream.hpp), FAKECUPTI_RUNTIME_LAUNCH=1 (as
// if the program launched through the CUDA runtime: the work carries the correlation id of a
// runtime call that encloses the driver call), FAKECUPTI_STATS=FILE (counts as JSON at exit).
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <fakecuda/control.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "activity_stream.hpp"

namespace fakecupti {
namespace {

struct CallbackName {
  std::uint32_t id;
  const char* name;
};
constexpr CallbackName kDriverNames[] = {
#include "driver_callback_names.inc"
};
constexpr CallbackName kRuntimeNames[] = {
#include "runtime_callback_names.inc"
};

enum Family { kKernel = 0, kCopy = 1, kMemset = 2, kFamilies = 3 };

int family_of(std::string_view name, bool runtime) {
  const std::string_view launch = runtime ? "cudaLaunch" : "cuLaunch";
  const std::string_view graph = runtime ? "cudaGraphLaunch" : "cuGraphLaunch";
  const std::string_view copy = runtime ? "cudaMemcpy" : "cuMemcpy";
  const std::string_view set = runtime ? "cudaMemset" : "cuMemset";
  if (name.starts_with(launch) || name.starts_with(graph)) return kKernel;
  if (name.starts_with(copy)) return kCopy;
  if (name.starts_with(set)) return kMemset;
  return -1;
}

const char* callback_name(CUpti_CallbackDomain domain, std::uint32_t id) {
  const auto find = [&](const auto& table) -> const char* {
    for (const CallbackName& entry : table) {
      if (entry.id == id) return entry.name;
    }
    return nullptr;
  };
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return find(kDriverNames);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return find(kRuntimeNames);
  return nullptr;
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

std::uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Issued {
  fakecuda_work work;
  std::uint32_t correlation = 0;  // what the activity record carries
};

struct Stats {
  std::atomic<std::uint64_t> kernels{0};
  std::atomic<std::uint64_t> copies{0};
  std::atomic<std::uint64_t> memsets{0};
  std::atomic<std::uint64_t> external_records{0};
  std::atomic<std::uint64_t> driver_records{0};
  std::atomic<std::uint64_t> runtime_records{0};
  std::atomic<std::uint64_t> issued{0};
  std::atomic<std::uint64_t> pushes{0};
  std::atomic<std::uint64_t> pops{0};
  std::atomic<std::int64_t> depth{0};  // pushes minus pops, every thread together
  std::atomic<std::uint64_t> subscribes{0};
  std::atomic<bool> serial_kernel_kind{false};  // CUPTI_ACTIVITY_KIND_KERNEL was enabled at some point
};

struct State {
  std::mutex mutex;
  ActivityStream stream;
  bool enabled[CUPTI_ACTIVITY_KIND_COUNT] = {};
  bool driver_api[kFamilies] = {};  // cuptiActivityEnableDriverApi for some API of the family
  bool runtime_api[kFamilies] = {};
  bool subscribed = false;
  bool observer_installed = false;
  std::uint32_t next_correlation = 0;
  unsigned long long next_tag = 0;
  std::unordered_map<unsigned long long, Issued> in_flight;
  std::set<std::string> names;  // kernel names the records point to (stable, never freed)
  const std::int64_t realtime_minus_monotonic =
      static_cast<std::int64_t>(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
  const bool runtime_launch = env_is("FAKECUPTI_RUNTIME_LAUNCH", "1");
  const pid_t pid = getpid();
  Stats stats;
};

State& state() {
  static State* s = new State;  // never destroyed: records may be delivered during exit
  return *s;
}

thread_local std::vector<std::uint64_t> t_external[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

std::uint32_t current_thread() { return static_cast<std::uint32_t>(syscall(SYS_gettid)); }

bool traced(const bool (&families)[kFamilies], bool whole_kind, int family) {
  return whole_kind || (family >= 0 && families[family]);
}

// --- the driver's side: issued and ran ------------------------------------------------------

unsigned long long on_issued(const fakecuda_work* work, void*) {
  State& s = state();
  const int family = work->kind == FAKECUDA_WORK_KERNEL ? kKernel : work->kind == FAKECUDA_WORK_COPY ? kCopy : kMemset;
  std::lock_guard lock(s.mutex);
  ++s.stats.issued;
  std::uint32_t runtime_id = 0;
  if (s.runtime_launch) runtime_id = ++s.next_correlation;  // the runtime call is entered first
  const std::uint32_t driver_id = ++s.next_correlation;
  const std::uint64_t now = clock_ns(CLOCK_REALTIME);
  const bool driver_traced = traced(s.driver_api, s.enabled[CUPTI_ACTIVITY_KIND_DRIVER], family);
  if (driver_traced && s.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
    for (int kind = 1; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; ++kind) {
      if (t_external[kind].empty()) continue;
      CUpti_ActivityExternalCorrelation r{};
      r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(kind);
      r.externalId = t_external[kind].back();
      r.correlationId = driver_id;
      s.stream.append(&r, sizeof r, true);
      ++s.stats.external_records;
    }
  }
  static constexpr CUpti_CallbackId kDriverCbid[kFamilies] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
                                                              CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2};
  static constexpr CUpti_CallbackId kRuntimeCbid[kFamilies] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                                               CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020};
  if (driver_traced) {
    CUpti_ActivityAPI r{};
    r.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = kDriverCbid[family];
    r.start = now + 1;
    r.end = now + 2;
    r.processId = static_cast<std::uint32_t>(s.pid);
    r.threadId = current_thread();
    r.correlationId = driver_id;
    s.stream.append(&r, sizeof r, true);
    ++s.stats.driver_records;
  }
  if (s.runtime_launch && traced(s.runtime_api, s.enabled[CUPTI_ACTIVITY_KIND_RUNTIME], family)) {
    CUpti_ActivityAPI r{};  // written when the runtime call returns: after the driver call's
    r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    r.cbid = kRuntimeCbid[family];
    r.start = now;
    r.end = now + 3;
    r.processId = static_cast<std::uint32_t>(s.pid);
    r.threadId = current_thread();
    r.correlationId = runtime_id;
    s.stream.append(&r, sizeof r, true);
    ++s.stats.runtime_records;
  }
  Issued issued{*work, s.runtime_launch ? runtime_id : driver_id};
  if (work->kernel_name != nullptr) issued.work.kernel_name = s.names.emplace(work->kernel_name).first->c_str();
  const unsigned long long tag = ++s.next_tag;
  s.in_flight.emplace(tag, issued);
  return tag;
}

void on_ran(unsigned long long tag, unsigned long long start_ns, unsigned long long end_ns, void*) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.in_flight.find(tag);
  if (it == s.in_flight.end()) return;
  const Issued issued = it->second;
  s.in_flight.erase(it);
  const std::uint64_t start = start_ns + static_cast<std::uint64_t>(s.realtime_minus_monotonic);
  const std::uint64_t end = end_ns + static_cast<std::uint64_t>(s.realtime_minus_monotonic);
  const fakecuda_work& w = issued.work;
  switch (w.kind) {
    case FAKECUDA_WORK_KERNEL: {
      const bool concurrent = s.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
      if (!concurrent && !s.enabled[CUPTI_ACTIVITY_KIND_KERNEL]) return;
      CUpti_ActivityKernel10 r{};
      r.kind = concurrent ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
      r.start = start;
      r.end = end;
      r.completed = end;
      r.deviceId = 0;
      r.contextId = static_cast<std::uint32_t>(w.context_id);
      r.streamId = static_cast<std::uint32_t>(w.stream_id);
      r.correlationId = issued.correlation;
      r.name = w.kernel_name;
      s.stream.append(&r, sizeof r, false);
      ++s.stats.kernels;
      break;
    }
    case FAKECUDA_WORK_COPY: {
      if (!s.enabled[CUPTI_ACTIVITY_KIND_MEMCPY]) return;
      static constexpr std::uint8_t kCopyKind[5] = {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                                    CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                                                    CUPTI_ACTIVITY_MEMCPY_KIND_HTOH};
      CUpti_ActivityMemcpy6 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      r.copyKind = kCopyKind[w.copy_kind >= 0 && w.copy_kind <= 4 ? w.copy_kind : 0];
      r.bytes = w.bytes;
      r.start = start;
      r.end = end;
      r.contextId = static_cast<std::uint32_t>(w.context_id);
      r.streamId = static_cast<std::uint32_t>(w.stream_id);
      r.correlationId = issued.correlation;
      r.copyCount = 1;
      s.stream.append(&r, sizeof r, false);
      ++s.stats.copies;
      break;
    }
    case FAKECUDA_WORK_MEMSET: {
      if (!s.enabled[CUPTI_ACTIVITY_KIND_MEMSET]) return;
      CUpti_ActivityMemset4 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      r.bytes = w.bytes;
      r.start = start;
      r.end = end;
      r.contextId = static_cast<std::uint32_t>(w.context_id);
      r.streamId = static_cast<std::uint32_t>(w.stream_id);
      r.correlationId = issued.correlation;
      s.stream.append(&r, sizeof r, false);
      ++s.stats.memsets;
      break;
    }
  }
}

// fakecuda must be in the process (the program loaded its libcuda.so.1): that is our "GPU".
bool install_observer(State& s) {
  if (s.observer_installed) return true;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  auto set_observer =
      reinterpret_cast<void (*)(const fakecuda_work_observer*)>(dlsym(driver, "fakecuda_set_work_observer"));
  if (set_observer == nullptr) return false;
  const fakecuda_work_observer observer{&on_issued, &on_ran, nullptr};
  set_observer(&observer);
  s.observer_installed = true;
  return true;
}

std::size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return sizeof(CUpti_ActivityAPI);
    default:
      return 0;
  }
}

void write_stats() {
  State& s = state();
  const char* path = std::getenv("FAKECUPTI_STATS");
  if (path == nullptr || getpid() != s.pid) return;  // not from a forked child
  const ActivityStream::Totals t = s.stream.totals();
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) return;
  std::fprintf(
      f,
      "{\"kernels\": %llu, \"copies\": %llu, \"memsets\": %llu, \"external_records\": %llu, "
      "\"driver_records\": %llu, \"runtime_records\": %llu, \"issued\": %llu, \"pushes\": %llu, "
      "\"pops\": %llu, \"depth_at_exit\": %lld, \"subscribes\": %llu, \"serial_kernel_kind\": %s, "
      "\"records\": %llu, \"dropped\": %llu, \"buffers_delivered\": %llu, \"buffers_requested\": %llu, "
      "\"requests_refused\": %llu}\n",
      static_cast<unsigned long long>(s.stats.kernels.load()), static_cast<unsigned long long>(s.stats.copies.load()),
      static_cast<unsigned long long>(s.stats.memsets.load()),
      static_cast<unsigned long long>(s.stats.external_records.load()),
      static_cast<unsigned long long>(s.stats.driver_records.load()),
      static_cast<unsigned long long>(s.stats.runtime_records.load()),
      static_cast<unsigned long long>(s.stats.issued.load()), static_cast<unsigned long long>(s.stats.pushes.load()),
      static_cast<unsigned long long>(s.stats.pops.load()), static_cast<long long>(s.stats.depth.load()),
      static_cast<unsigned long long>(s.stats.subscribes.load()), s.stats.serial_kernel_kind.load() ? "true" : "false",
      static_cast<unsigned long long>(t.records), static_cast<unsigned long long>(t.dropped),
      static_cast<unsigned long long>(t.buffers_delivered), static_cast<unsigned long long>(t.buffers_requested),
      static_cast<unsigned long long>(t.requests_refused));
  std::fclose(f);
}

// cuptiActivityEnable{Driver,Runtime}Api: API records for the family of `cbid` (launches,
// copies or memsets); disabling is accepted and ignored (memtool never disables one).
CUptiResult enable_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint8_t enable) {
  const char* name = callback_name(domain, cbid);
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const int family = family_of(name, runtime);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (family >= 0 && enable != 0) (runtime ? s.runtime_api : s.driver_api)[family] = true;
  return CUPTI_SUCCESS;
}

void child_after_fork() { state().stream.forget_after_fork(); }

__attribute__((constructor)) void on_load() {
  (void)state();
  std::atexit(write_stats);
  pthread_atfork(nullptr, nullptr, child_after_fork);
}

}  // namespace
}  // namespace fakecupti

using fakecupti::state;

#define FAKECUPTI_API extern "C" __attribute__((visibility("default")))

FAKECUPTI_API CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      *str = "CUPTI_ERROR_NOT_INITIALIZED";
      break;
    case CUPTI_ERROR_QUEUE_EMPTY:
      *str = "CUPTI_ERROR_QUEUE_EMPTY";
      break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  ++s.stats.subscribes;
  if (fakecupti::env_is("FAKECUPTI_OTHER_SUBSCRIBER", "1") || s.subscribed) {
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (!fakecupti::install_observer(s)) return CUPTI_ERROR_NOT_INITIALIZED;  // no fakecuda: no "GPU"
  s.subscribed = true;
  static int handle = 0;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle);
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = fakecupti::callback_name(domain, cbid);
  return *name != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = fakecupti::clock_ns(CLOCK_REALTIME);
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  if (fakecupti::env_is("FAKECUPTI_REFUSE", "1")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!fakecupti::install_observer(s)) return CUPTI_ERROR_NOT_INITIALIZED;
  s.enabled[kind] = true;
  if (kind == CUPTI_ACTIVITY_KIND_KERNEL) s.stats.serial_kernel_kind = true;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.enabled[kind] = false;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return fakecupti::enable_api(CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return fakecupti::enable_api(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                                  CUpti_BuffersCallbackCompleteFunc completed) {
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  state().stream.set_callbacks(requested, completed);  // the last registration wins, as in CUPTI
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  auto& s = state();
  if (!s.stream.has_callbacks()) return CUPTI_ERROR_INVALID_OPERATION;
  s.stream.flush_all();
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::size_t at = 0;
  if (*record != nullptr) {
    const std::size_t size = fakecupti::record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    at = static_cast<std::size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + size;
  }
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const std::size_t size = fakecupti::record_size(next->kind);
  if (size == 0 || at + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = state().stream.take_dropped();
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                          uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  fakecupti::t_external[kind].push_back(id);
  ++state().stats.pushes;
  ++state().stats.depth;
  return CUPTI_SUCCESS;
}

FAKECUPTI_API CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                         uint64_t* last) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  auto& stack = fakecupti::t_external[kind];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last != nullptr) *last = stack.back();
  stack.pop_back();
  ++state().stats.pops;
  --state().stats.depth;
  return CUPTI_SUCCESS;
}
