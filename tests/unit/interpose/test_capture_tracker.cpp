// The capture tracker and DriverDevice under capture, against a fake driver that knows which
// streams capture: nothing is asked while no capture runs; internal calls run in relaxed mode
// and restore the thread's own; markers are recorded before a stream may start capturing; and
// DriverDevice never records on, waits on, or queues work to a capturing stream.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <optional>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "memtool/interpose/capture_tracker.hpp"
#include "memtool/interpose/driver_device.hpp"
#include "memtool/interpose/per_thread_streams.hpp"

using namespace memtool::interpose;

namespace {

// The fake driver's state (one test at a time).
struct FakeCaptureDriver {
  std::set<std::uintptr_t> capturing;            // streams in a capture sequence
  std::uintptr_t refusing = ~std::uintptr_t{0};  // IsCapturing answers IMPLICIT for it
  std::atomic<int> is_capturing_calls{0};
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> records;  // (event, stream)
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> waits;    // (stream, event)
  std::vector<std::uintptr_t> synchronized;                        // events the host waited on
  std::vector<std::uintptr_t> frees_on;                            // streams of cuMemFreeAsync
  std::vector<std::uintptr_t> copies_on;                           // streams of copies
  std::uintptr_t next_event = 0xE000;
  std::uintptr_t next_stream = 0x5000;
  std::vector<CUstreamCaptureMode> modes_seen;  // the calling thread's mode at each unsafe call
  bool records_on_capturing = false;            // a record or wait reached a capturing stream
  std::set<std::uintptr_t> blocking;            // streams whose flags say blocking
};
FakeCaptureDriver* g = nullptr;
thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

std::uintptr_t id(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

CaptureFunctions fake_capture_functions() {
  CaptureFunctions f;
  f.stream_is_capturing = [](CUstream s, CUstreamCaptureStatus* status) {
    ++g->is_capturing_calls;
    if (id(s) == g->refusing) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status = g->capturing.count(id(s)) != 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  };
  f.exchange_capture_mode = [](CUstreamCaptureMode* mode) {
    std::swap(*mode, t_mode);
    return CUDA_SUCCESS;
  };
  f.stream_get_flags = [](CUstream s, unsigned int* flags) {
    *flags = g->blocking.count(id(s)) != 0 ? 0u : static_cast<unsigned>(CU_STREAM_NON_BLOCKING);
    return CUDA_SUCCESS;
  };
  f.event_create = [](CUevent* e, unsigned int) {
    *e = reinterpret_cast<CUevent>(g->next_event++);
    return CUDA_SUCCESS;
  };
  f.event_record = [](CUevent e, CUstream s) {
    if (g->capturing.count(id(s)) != 0) g->records_on_capturing = true;
    g->records.emplace_back(id(e), id(s));
    return CUDA_SUCCESS;
  };
  f.event_destroy = [](CUevent) { return CUDA_SUCCESS; };
  return f;
}

DriverFunctions fake_device_functions() {
  DriverFunctions f;
  f.event_create = [](CUevent* e, unsigned int) {
    *e = reinterpret_cast<CUevent>(g->next_event++);
    return CUDA_SUCCESS;
  };
  f.event_record = [](CUevent e, CUstream s) {
    if (g->capturing.count(id(s)) != 0) g->records_on_capturing = true;
    g->records.emplace_back(id(e), id(s));
    return CUDA_SUCCESS;
  };
  f.event_query = [](CUevent) {
    g->modes_seen.push_back(t_mode);  // potentially unsafe: refused in a global capture's GLOBAL thread
    return CUDA_SUCCESS;
  };
  f.event_synchronize = [](CUevent e) {
    g->modes_seen.push_back(t_mode);
    g->synchronized.push_back(id(e));
    return CUDA_SUCCESS;
  };
  f.event_destroy = [](CUevent) { return CUDA_SUCCESS; };
  f.stream_wait_event = [](CUstream s, CUevent e, unsigned int) {
    if (g->capturing.count(id(s)) != 0) g->records_on_capturing = true;
    g->waits.emplace_back(id(s), id(e));
    return CUDA_SUCCESS;
  };
  f.stream_create = [](CUstream* s, unsigned int) {
    *s = reinterpret_cast<CUstream>(g->next_stream++);
    return CUDA_SUCCESS;
  };
  f.mem_free_async = [](CUdeviceptr, CUstream s) {
    if (g->capturing.count(id(s)) != 0) g->records_on_capturing = true;
    g->frees_on.push_back(id(s));
    return CUDA_SUCCESS;
  };
  f.memcpy_dtod_async = [](CUdeviceptr, CUdeviceptr, size_t, CUstream s) {
    if (g->capturing.count(id(s)) != 0) g->records_on_capturing = true;
    g->copies_on.push_back(id(s));
    return CUDA_SUCCESS;
  };
  f.mem_alloc = [](CUdeviceptr* p, size_t) {
    g->modes_seen.push_back(t_mode);
    *p = 0x1000;
    return CUDA_SUCCESS;
  };
  return f;
}

struct Fixture {
  FakeCaptureDriver driver;
  CaptureTracker tracker{fake_capture_functions()};
  DriverDevice device{fake_device_functions(), &tracker};
  Fixture() {
    g = &driver;
    t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  }
  // The program begins a capture on `stream` (through the hook's steps).
  void begin(std::uintptr_t stream) {
    tracker.before_begin(stream);
    driver.capturing.insert(stream);
    tracker.after_begin(stream, true);
  }
  void end(std::uintptr_t stream) {
    driver.capturing.erase(stream);
    tracker.after_end(stream);
  }
};

constexpr std::uintptr_t kS = 0x51;
constexpr std::uintptr_t kOther = 0x52;

}  // namespace

TEST_CASE("no capture: one load, the streams as they are, the thread's mode untouched", "[interpose][capture]") {
  Fixture f;
  CHECK_FALSE(f.tracker.any());
  CHECK(f.tracker.stream_state(kS) == StreamCapture::none);
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  CHECK(f.device.record_event(e, kS) == memtool::engine::kSuccess);
  CHECK(f.device.stream_wait_event(kOther, e) == memtool::engine::kSuccess);
  CHECK(f.device.event_completed(e));
  CHECK(f.driver.is_capturing_calls == 0);  // never asked
  REQUIRE(f.driver.records.size() == 1);
  CHECK(f.driver.records[0].second == kS);
  CHECK(f.driver.waits.size() == 1);
  CHECK(f.driver.modes_seen == std::vector<CUstreamCaptureMode>{CU_STREAM_CAPTURE_MODE_GLOBAL});
  CHECK(f.device.detours() == 0);
}

TEST_CASE("a begun capture is under way until the stream ends it", "[interpose][capture]") {
  Fixture f;
  f.begin(kS);
  CHECK(f.tracker.any());
  CHECK(f.tracker.captures_begun() == 1);
  CHECK(f.tracker.stream_state(kS) == StreamCapture::capturing);
  CHECK(f.tracker.stream_state(kOther) == StreamCapture::none);
  // The marker was recorded on the stream before its capture began.
  const auto marker = f.tracker.marker(kS);
  REQUIRE(marker);
  REQUIRE(f.driver.records.size() == 1);
  CHECK(f.driver.records[0] == std::make_pair(reinterpret_cast<std::uintptr_t>(*marker), kS));
  CHECK_FALSE(f.driver.records_on_capturing);
  // An EndCapture that failed (the stream still captures) ends nothing.
  f.tracker.after_end(kS);
  CHECK(f.tracker.any());
  f.end(kS);
  CHECK_FALSE(f.tracker.any());
  // A begin the driver refused leaves nothing under way.
  f.tracker.before_begin(kOther);
  f.tracker.after_begin(kOther, false);
  CHECK_FALSE(f.tracker.any());
}

TEST_CASE("internal calls run in relaxed mode while captures run, and restore the thread's mode",
          "[interpose][capture]") {
  Fixture f;
  f.begin(kS);
  t_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  CHECK(f.device.event_completed(e));
  memtool::engine::DevicePtr p = 0;
  CHECK(f.device.allocate(64, memtool::engine::MemoryKind::device, 0, &p) == memtool::engine::kSuccess);
  CHECK(f.driver.modes_seen ==
        std::vector<CUstreamCaptureMode>{CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED});
  CHECK(t_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);  // the program's own mode is back
  {
    // Nested internal calls exchange once.
    const CaptureTracker::InternalCall outer(&f.tracker);
    CHECK(t_mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    {
      const CaptureTracker::InternalCall inner(&f.tracker);
      CHECK(t_mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    }
    CHECK(t_mode == CU_STREAM_CAPTURE_MODE_RELAXED);
  }
  CHECK(t_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  f.end(kS);
}

TEST_CASE("DriverDevice never touches a capturing stream", "[interpose][capture]") {
  Fixture f;
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  f.begin(kS);
  const std::uintptr_t marker = reinterpret_cast<std::uintptr_t>(*f.tracker.marker(kS));
  f.driver.records.clear();

  SECTION("a record lands on the detour stream after the marker") {
    CHECK(f.device.record_event(e, kS) == memtool::engine::kSuccess);
    REQUIRE(f.driver.waits.size() == 1);
    const std::uintptr_t detour = f.driver.waits[0].first;
    CHECK(detour != kS);
    CHECK(f.driver.waits[0].second == marker);
    REQUIRE(f.driver.records.size() == 1);
    CHECK(f.driver.records[0] == std::make_pair(static_cast<std::uintptr_t>(e), detour));
    CHECK(f.device.detours() == 1);
  }
  SECTION("a wait becomes the host's") {
    CHECK(f.device.stream_wait_event(kS, e) == memtool::engine::kSuccess);
    CHECK(f.driver.waits.empty());
    CHECK(f.driver.synchronized == std::vector<std::uintptr_t>{e});
  }
  SECTION("a free ordered on it is queued on the detour stream, a copy too, and the host waits for the copy") {
    CHECK(f.device.free(0x7000, memtool::engine::MemoryKind::async, kS) == memtool::engine::kSuccess);
    CHECK(f.device.copy_device(0x7000, 0x8000, 64, kS) == memtool::engine::kSuccess);
    REQUIRE(f.driver.frees_on.size() == 1);
    CHECK(f.driver.frees_on[0] != kS);
    REQUIRE(f.driver.copies_on.size() == 1);
    CHECK(f.driver.copies_on[0] == f.driver.frees_on[0]);
    CHECK(f.driver.synchronized.size() == 1);  // the copy is done before the program goes on
  }
  SECTION("other streams are used as they are") {
    CHECK(f.device.record_event(e, kOther) == memtool::engine::kSuccess);
    CHECK(f.device.stream_wait_event(kOther, e) == memtool::engine::kSuccess);
    CHECK(f.driver.records.back().second == kOther);
    CHECK(f.driver.waits.back().first == kOther);
  }
  SECTION("a stream the driver will not describe, without a marker, is refused (the engine falls back)") {
    f.driver.refusing = kOther;
    CHECK(f.device.record_event(e, kOther) != memtool::engine::kSuccess);
    CHECK(f.driver.records.empty());
  }
  CHECK_FALSE(f.driver.records_on_capturing);
  f.end(kS);
}

TEST_CASE("a wait while captures run marks its stream first: a join finds a marker", "[interpose][capture]") {
  Fixture f;
  f.begin(kS);
  f.tracker.before_wait(kOther);
  f.driver.capturing.insert(kOther);  // the wait joined the capture
  f.tracker.after_wait();
  const auto marker = f.tracker.marker(kOther);
  REQUIRE(marker);
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  CHECK(f.device.record_event(e, kOther) == memtool::engine::kSuccess);
  CHECK(f.driver.waits.back().second == reinterpret_cast<std::uintptr_t>(*marker));
  CHECK_FALSE(f.driver.records_on_capturing);
  // A stream already capturing keeps the marker it had.
  f.tracker.before_wait(kOther);
  f.tracker.after_wait();
  CHECK(f.tracker.marker(kOther) == marker);
  f.driver.capturing.erase(kOther);
  f.end(kS);
}

TEST_CASE("a capture cannot begin while another thread is inside an internal call", "[interpose][capture]") {
  Fixture f;
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::atomic<bool> begun{false};
  std::thread worker([&] {
    const CaptureTracker::InternalCall internal(&f.tracker);
    inside = true;
    while (!release) std::this_thread::yield();
    // Begun meanwhile, this call would run in GLOBAL mode unprotected: the gate forbids it.
    CHECK_FALSE(begun.load());
  });
  while (!inside) std::this_thread::yield();
  std::thread beginner([&] {
    f.tracker.before_begin(kS);
    begun = true;
    f.driver.capturing.insert(kS);
    f.tracker.after_begin(kS, true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(begun.load());
  release = true;
  worker.join();
  beginner.join();
  CHECK(begun.load());
  f.end(kS);
}

// --- per-thread default streams (per_thread_streams.hpp) ------------------------------------------

namespace {
constexpr std::uintptr_t kPerThreadHandle = 0x2;  // CU_STREAM_PER_THREAD
constexpr std::uintptr_t kLegacyHandle = 0x1;     // CU_STREAM_LEGACY

// The per-thread stream id of a thread other than the calling one.
std::uint64_t another_threads_per_thread_stream() {
  std::uint64_t other = 0;
  std::thread([&] { other = own_per_thread_stream(); }).join();
  return other;
}
}  // namespace

TEST_CASE("DriverDevice names the calling thread's per-thread stream 2 and reaches another's through the legacy stream",
          "[interpose][capture][per_thread]") {
  Fixture f;
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  const std::uint64_t own = own_per_thread_stream();
  const std::uint64_t other = another_threads_per_thread_stream();
  REQUIRE(other != own);

  CHECK(f.device.record_event(e, own) == memtool::engine::kSuccess);
  CHECK(f.driver.records.back() == std::make_pair(static_cast<std::uintptr_t>(e), kPerThreadHandle));
  CHECK(f.device.stream_wait_event(own, e) == memtool::engine::kSuccess);
  CHECK(f.driver.waits.back().first == kPerThreadHandle);

  // The legacy stream is ordered with every blocking stream, the other thread's per-thread one
  // included: an event there completes after that stream's work so far, a wait there holds back
  // its later work, and work there runs between the two.
  CHECK(f.device.record_event(e, other) == memtool::engine::kSuccess);
  CHECK(f.driver.records.back() == std::make_pair(static_cast<std::uintptr_t>(e), kLegacyHandle));
  CHECK(f.device.stream_wait_event(other, e) == memtool::engine::kSuccess);
  CHECK(f.driver.waits.back().first == kLegacyHandle);
  CHECK(f.device.free(0x7000, memtool::engine::MemoryKind::async, other) == memtool::engine::kSuccess);
  CHECK(f.device.copy_device(0x7000, 0x8000, 64, other) == memtool::engine::kSuccess);
  CHECK(f.driver.frees_on == std::vector<std::uintptr_t>{kLegacyHandle});
  CHECK(f.driver.copies_on == std::vector<std::uintptr_t>{kLegacyHandle});
  CHECK(f.driver.synchronized.empty());
}

TEST_CASE(
    "while a blocking stream captures, another thread's per-thread stream is never reached through the legacy one",
    "[interpose][capture][per_thread]") {
  Fixture f;
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  f.driver.blocking.insert(kS);
  f.begin(kS);
  // Beside a capturing blocking stream the driver will not describe the legacy stream.
  f.driver.refusing = 0;
  const std::uint64_t other = another_threads_per_thread_stream();
  f.driver.records.clear();

  CHECK(f.tracker.stream_state(other) == StreamCapture::unusable);
  CHECK_FALSE(f.tracker.marker(other).has_value());
  // Nothing to order after: refused (the pool keeps the range; the engine falls back).
  CHECK(f.device.record_event(e, other) != memtool::engine::kSuccess);
  CHECK(f.device.free(0x7000, memtool::engine::MemoryKind::async, other) != memtool::engine::kSuccess);
  CHECK(f.driver.records.empty());
  CHECK(f.driver.frees_on.empty());
  // A wait becomes the host's: the other thread's later work is issued after it.
  CHECK(f.device.stream_wait_event(other, e) == memtool::engine::kSuccess);
  CHECK(f.driver.waits.empty());
  CHECK(f.driver.synchronized == std::vector<std::uintptr_t>{e});
  // The calling thread's own per-thread stream is not capturing: used as the handle 2.
  CHECK(f.device.record_event(e, own_per_thread_stream()) == memtool::engine::kSuccess);
  CHECK(f.driver.records.back().second == kPerThreadHandle);
  f.driver.refusing = ~std::uintptr_t{0};
  f.end(kS);
}

TEST_CASE("a capture on the calling thread's per-thread stream: its marker is recorded on the handle 2",
          "[interpose][capture][per_thread]") {
  Fixture f;
  memtool::engine::EventId e = 0;
  REQUIRE(f.device.create_event(&e) == memtool::engine::kSuccess);
  const std::uint64_t own = own_per_thread_stream();
  f.driver.blocking.insert(kPerThreadHandle);  // per-thread streams are blocking streams
  f.tracker.before_begin(own);
  f.driver.capturing.insert(kPerThreadHandle);
  f.tracker.after_begin(own, true);
  f.driver.refusing = 0;  // the legacy stream beside it
  const std::optional<CUevent> marker = f.tracker.marker(own);
  REQUIRE(marker.has_value());
  const auto marker_id = reinterpret_cast<std::uintptr_t>(*marker);
  CHECK(std::find(f.driver.records.begin(), f.driver.records.end(), std::make_pair(marker_id, kPerThreadHandle)) !=
        f.driver.records.end());
  CHECK(f.tracker.stream_state(own) == StreamCapture::capturing);
  f.driver.records.clear();

  // Work the engine orders on it goes to the detour stream after its marker.
  CHECK(f.device.record_event(e, own) == memtool::engine::kSuccess);
  REQUIRE(f.driver.waits.size() == 1);
  CHECK(f.driver.waits[0].second == marker_id);
  REQUIRE(f.driver.records.size() == 1);
  CHECK(f.driver.records[0].second == f.driver.waits[0].first);
  CHECK(f.driver.records[0].second != kPerThreadHandle);

  // Seen from another thread, the capturing stream is unusable and has no marker to go by.
  memtool::engine::Status from_other = memtool::engine::kSuccess;
  bool other_marker = true;
  std::thread([&] {
    other_marker = f.tracker.marker(own).has_value();
    from_other = f.device.record_event(e, own);
  }).join();
  CHECK_FALSE(other_marker);
  CHECK(from_other != memtool::engine::kSuccess);
  CHECK(f.driver.records.size() == 1);
  CHECK_FALSE(f.driver.records_on_capturing);

  f.driver.refusing = ~std::uintptr_t{0};
  f.driver.capturing.erase(kPerThreadHandle);
  f.tracker.after_end(own);
  CHECK_FALSE(f.tracker.any());
}
