// The tracer in this process on fakecuda (this test's libcuda.so.1) and fakecupti (loaded by
// path): copies and memsets issued inside pushed ids come back joined, in the trace's clock and
// stream order; small buffers at a cap drop records and say so; a second subscriber or a CUPTI
// that refuses leaves the tracer off, said once.
#include <catch2/catch.hpp>

#include <cuda.h>
#include <time.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "memtool/cupti/correlation.hpp"
#include "memtool/cupti/tracer.hpp"

namespace {

using memtool::cupti::GpuTimeStore;
using memtool::cupti::Tracer;
using memtool::cupti::TracerLogLevel;
using memtool::cupti::TracerSettings;
using memtool::trace::GpuTimeRecord;
using memtool::trace::GpuWorkKind;

std::mutex g_log_mutex;
std::vector<std::string> g_log;

void collect_log(TracerLogLevel, std::string_view message) {
  std::lock_guard lock(g_log_mutex);
  g_log.emplace_back(message);
}

bool logged(const std::string& text) {
  std::lock_guard lock(g_log_mutex);
  for (const auto& line : g_log) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

class Collect final : public memtool::cupti::GpuTimeSink {
 public:
  void deliver(std::span<const GpuTimeRecord> r, std::span<const std::string_view>) noexcept override {
    std::lock_guard lock(mutex);
    records.insert(records.end(), r.begin(), r.end());
  }
  std::mutex mutex;
  std::vector<GpuTimeRecord> records;
};

TracerSettings settings() {
  TracerSettings s;
  s.library = FAKECUPTI_PATH;
  s.log = collect_log;
  s.driver_apis = {"cuMemsetD8Async", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2"};
  return s;
}

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Device {
  Device() {
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    CUdevice dev = 0;
    REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
    REQUIRE(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
    REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    REQUIRE(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    REQUIRE(cuMemAlloc(&buffer, 1 << 16) == CUDA_SUCCESS);
  }
  ~Device() {
    cuMemFree(buffer);
    cuStreamDestroy(stream);
  }
  // `n` memsets and copies on the stream, each inside the id seq0 + i as the hooks push it.
  void work(int n, std::uint64_t seq0) {
    std::vector<unsigned char> host(1 << 16, 1);
    for (int i = 0; i < n; ++i) {
      const bool correlate = memtool::cupti::correlating();
      if (correlate) memtool::cupti::push_external_id(seq0 + static_cast<std::uint64_t>(i));
      if (i % 2 == 0) {
        REQUIRE(cuMemsetD8Async(buffer, static_cast<unsigned char>(i), 1 << 16, stream) == CUDA_SUCCESS);
      } else {
        REQUIRE(cuMemcpyHtoDAsync(buffer, host.data(), 1 << 16, stream) == CUDA_SUCCESS);
      }
      if (correlate) memtool::cupti::pop_external_id();
    }
    REQUIRE(cuStreamSynchronize(stream) == CUDA_SUCCESS);
  }
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr buffer = 0;
};

}  // namespace

TEST_CASE("copies and memsets inside pushed ids come back joined, in stream order", "[cupti][tracer]") {
  Device device;
  Collect sink;
  GpuTimeStore store;
  const std::uint64_t before = monotonic_ns();
  auto tracer = Tracer::start(settings(), &sink, &store);
  REQUIRE(tracer != nullptr);
  CHECK(memtool::cupti::correlating());
  CHECK(tracer->library_path() == FAKECUPTI_PATH);
  device.work(40, 1000);
  tracer->flush_now();
  {
    std::lock_guard lock(sink.mutex);
    CHECK(sink.records.size() == 40);  // all of them by the flush
  }
  device.work(10, 2000);
  tracer->stop();
  CHECK_FALSE(memtool::cupti::correlating());
  const std::uint64_t after = monotonic_ns();
  REQUIRE(sink.records.size() == 50);
  std::vector<bool> seen(50, false);
  std::uint64_t previous_end = 0;
  for (const GpuTimeRecord& r : sink.records) {
    REQUIRE(r.joined());
    const std::uint64_t i = r.event_seq >= 2000 ? 40 + (r.event_seq - 2000) : r.event_seq - 1000;
    REQUIRE(i < 50);
    CHECK_FALSE(seen[i]);
    seen[i] = true;
    const std::uint64_t local = r.event_seq >= 2000 ? r.event_seq - 2000 : r.event_seq - 1000;
    CHECK(r.kind == (local % 2 == 0 ? GpuWorkKind::memset : GpuWorkKind::copy));
    CHECK(r.bytes == 1 << 16);
    // The trace's clock: between the test's own readings (a few µs for the clock conversion).
    CHECK(r.start_ns + 50000 >= before);
    CHECK(r.end_ns <= after + 50000);
    CHECK(r.start_ns + 50000 >= previous_end);  // one stream: one after the other
    previous_end = r.end_ns;
  }
  CHECK(store.totals().records == 50);
  CHECK(store.find(1003).has_value());
  const auto stats = tracer->stats();
  CHECK(stats.joined == 50);
  CHECK(stats.dropped == 0);
  CHECK(stats.memsets + stats.copies == 50);
  CHECK(logged("timed 0 kernels, 25 copies, 25 memsets; 50 joined"));
}

TEST_CASE("work outside any pushed id is delivered without an event", "[cupti][tracer]") {
  Device device;
  Collect sink;
  auto tracer = Tracer::start(settings(), &sink, nullptr);
  REQUIRE(tracer != nullptr);
  std::vector<unsigned char> host(256);
  REQUIRE(cuMemcpyDtoH(host.data(), device.buffer, host.size()) == CUDA_SUCCESS);  // nothing pushed
  tracer->stop();
  REQUIRE(sink.records.size() == 1);
  CHECK_FALSE(sink.records[0].joined());
  CHECK(sink.records[0].copy_kind == memtool::trace::CopyKind::d2h);
}

TEST_CASE("buffers at the cap drop records, counted and said", "[cupti][tracer][overflow]") {
  Device device;
  Collect sink;
  TracerSettings s = settings();
  s.buffer_bytes = 512;  // a few records each
  s.max_buffers = 1;
  s.flush_period_ms = 100000;  // no flush until stop: only CUPTI's own delivery frees a buffer
  auto tracer = Tracer::start(s, &sink, nullptr);
  REQUIRE(tracer != nullptr);
  device.work(400, 0);
  tracer->stop();
  const auto stats = tracer->stats();
  CHECK(stats.dropped > 0);
  CHECK(stats.refused_buffers > 0);
  CHECK(sink.records.size() < 400);
  CHECK(sink.records.size() + stats.dropped >= 400);  // every record either arrived or was counted
  // What arrived joins the right call, unless its correlation record was the one dropped.
  std::size_t joined = 0;
  for (const GpuTimeRecord& r : sink.records) {
    if (!r.joined()) continue;
    ++joined;
    REQUIRE(r.event_seq < 400);
    CHECK(r.kind == (r.event_seq % 2 == 0 ? GpuWorkKind::memset : GpuWorkKind::copy));
  }
  CHECK(joined > 0);
  CHECK(logged("CUPTI dropped"));
}

TEST_CASE("small buffers that come back in time lose nothing", "[cupti][tracer][overflow]") {
  Device device;
  Collect sink;
  TracerSettings s = settings();
  s.buffer_bytes = 512;
  s.max_buffers = 64;
  auto tracer = Tracer::start(s, &sink, nullptr);
  REQUIRE(tracer != nullptr);
  for (int round = 0; round < 4; ++round) {
    device.work(50, static_cast<std::uint64_t>(round) * 100);
    tracer->request_flush();  // an iteration boundary, from the program's thread
  }
  tracer->stop();
  const auto stats = tracer->stats();
  CHECK(stats.dropped == 0);
  CHECK(stats.buffers > 4);
  CHECK(sink.records.size() == 200);
}

TEST_CASE("another subscriber, or a CUPTI that refuses, leaves the tracer off", "[cupti][tracer]") {
  Device device;
  Collect sink;
  setenv("FAKECUPTI_OTHER_SUBSCRIBER", "1", 1);
  CHECK(Tracer::start(settings(), &sink, nullptr) == nullptr);
  unsetenv("FAKECUPTI_OTHER_SUBSCRIBER");
  CHECK(logged("another tool already uses CUPTI"));
  CHECK_FALSE(memtool::cupti::correlating());
  setenv("FAKECUPTI_REFUSE", "1", 1);
  CHECK(Tracer::start(settings(), &sink, nullptr) == nullptr);
  unsetenv("FAKECUPTI_REFUSE");
  CHECK(logged("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
  CHECK_FALSE(memtool::cupti::correlating());
  device.work(3, 0);
  CHECK(sink.records.empty());
  // And it can start once the other tool is gone.
  auto tracer = Tracer::start(settings(), &sink, nullptr);
  CHECK(tracer != nullptr);
}
