// The link model: copies between host and device take latency + bytes / bandwidth on their
// direction's copy engine, FIFO across streams, beside kernels and the other direction; pageable
// host memory is slower and synchronous; managed migrations pay the same link; data, stream order
// and event timing stay exact. Times are checked against a lower bound only (>= 90% of the model):
// a slow machine may take longer, never a correct model less.
#include "fixture.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

using namespace fakecuda_test;

namespace {

constexpr double kSlack = 0.9;  // a measured time may fall short of the model by timer rounding only
constexpr std::size_t kMiB = std::size_t{1} << 20;

// Sets the link model for one test and restores the one before it.
class LinkModel {
 public:
  explicit LinkModel(double gbps, double latency_us = 0.0, double duplex_factor = 1.0, double pageable_factor = 0.5) {
    fakecuda_link_get(&saved_);
    const fakecuda_link_config c{gbps, latency_us, duplex_factor, pageable_factor};
    REQUIRE(fakecuda_link_configure(&c) == 0);
  }
  ~LinkModel() { fakecuda_link_configure(&saved_); }
  LinkModel(const LinkModel&) = delete;
  LinkModel& operator=(const LinkModel&) = delete;

 private:
  fakecuda_link_config saved_{};
};

double model_ms(std::size_t bytes, double gbps) { return static_cast<double>(bytes) / (gbps * 1e9) * 1e3; }

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  explicit DeviceBuffer(std::size_t bytes) { REQUIRE(cuMemAlloc(&ptr, bytes) == CUDA_SUCCESS); }
  ~DeviceBuffer() { cuMemFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct OwnStream {
  CUstream s = nullptr;
  OwnStream() { REQUIRE(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS); }
  ~OwnStream() { cuStreamDestroy(s); }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
};

// Two streams held until open(), so that work issued to both starts together.
struct HeldStreams {
  OwnStream a;
  OwnStream b;
  Gate gate_a;  // declared after the streams: opened before they are destroyed
  Gate gate_b;
  HeldStreams() {
    gate_a.hold(a.s);
    gate_b.hold(b.s);
  }
  void open() {
    gate_a.open();
    gate_b.open();
  }
};

// Stream time between two events recorded around the work a test enqueues.
class StreamTimer {
 public:
  StreamTimer() {
    REQUIRE(cuEventCreate(&start_, 0) == CUDA_SUCCESS);
    REQUIRE(cuEventCreate(&stop_, 0) == CUDA_SUCCESS);
  }
  ~StreamTimer() {
    cuEventDestroy(start_);
    cuEventDestroy(stop_);
  }
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;
  void start(CUstream s) { REQUIRE(cuEventRecord(start_, s) == CUDA_SUCCESS); }
  void stop(CUstream s) { REQUIRE(cuEventRecord(stop_, s) == CUDA_SUCCESS); }
  double ms() {
    REQUIRE(cuEventSynchronize(stop_) == CUDA_SUCCESS);
    float ms = 0;
    REQUIRE(cuEventElapsedTime(&ms, start_, stop_) == CUDA_SUCCESS);
    return ms;
  }

 private:
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
};

void fill_pattern(unsigned* words, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) {
    words[i] = static_cast<unsigned>(i * 2654435761u) ^ seed;
  }
}

bool has_pattern(const unsigned* words, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) {
    if (words[i] != (static_cast<unsigned>(i * 2654435761u) ^ seed)) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("a 64 MiB pinned D2H at 8 GB/s takes its modelled stream time and copies every byte", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 64 * kMiB;
  const std::size_t words = bytes / sizeof(unsigned);
  DeviceBuffer d(bytes);
  PinnedWords in(words);
  PinnedWords out(words);
  fill_pattern(in.words, words, 0x5eed);
  std::memset(out.words, 0, bytes);
  CU_REQUIRE_OK(cuMemcpyHtoD(d.ptr, in.words, bytes));

  LinkModel link(8.0);
  OwnStream s;
  StreamTimer timer;
  const fakecuda_stats before = stats_now();
  timer.start(s.s);
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(out.words, d.ptr, bytes, s.s));
  timer.stop(s.s);
  CU_CHECK_IS(cuStreamQuery(s.s), CUDA_ERROR_NOT_READY);  // pinned: the call returned at once
  const double ms = timer.ms();
  const fakecuda_stats after = stats_now();
  CHECK(ms >= kSlack * model_ms(bytes, 8.0));  // 8.39 ms
  CHECK(ms < 10000);
  CHECK(has_pattern(out.words, words, 0x5eed));
  CHECK(after.link_bytes_d2h - before.link_bytes_d2h == bytes);
  CHECK(after.link_transfers - before.link_transfers == 1);
  CHECK(after.link_pageable_transfers == before.link_pageable_transfers);
  CHECK(static_cast<double>(after.link_busy_ns_d2h - before.link_busy_ns_d2h) >= kSlack * model_ms(bytes, 8.0) * 1e6);
}

TEST_CASE("with the default link a pageable H2D is captured at the call and nothing is modelled", "[fakecuda][link]") {
  driver_ready();
  fakecuda_link_config c{};
  fakecuda_link_get(&c);
  REQUIRE(c.gbps == 0.0);  // this process runs with no FAKECUDA_LINK_* (ctest's environment)
  REQUIRE(c.latency_us == 0.0);
  const std::size_t words = kMiB;  // large enough that freeing it unmaps it
  DeviceBuffer d(words * sizeof(unsigned));
  OwnStream s;
  const fakecuda_stats before = stats_now();
  {
    Gate gate;
    gate.hold(s.s);
    {
      std::vector<unsigned> source(words);
      fill_pattern(source.data(), words, 3);
      CU_REQUIRE_OK(cuMemcpyHtoDAsync(d.ptr, source.data(), words * sizeof(unsigned), s.s));
    }  // the caller may reuse (here: free) its pageable buffer as soon as the call returned
    CU_CHECK_IS(cuStreamQuery(s.s), CUDA_ERROR_NOT_READY);
    gate.open();
    CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  }
  std::vector<unsigned> back(words);
  CU_REQUIRE_OK(cuMemcpyDtoH(back.data(), d.ptr, words * sizeof(unsigned)));
  CHECK(has_pattern(back.data(), words, 3));
  const fakecuda_stats after = stats_now();
  CHECK(after.link_transfers == before.link_transfers);
  CHECK(after.link_bytes_h2d == before.link_bytes_h2d);
  CHECK(after.link_busy_ns_d2h == before.link_busy_ns_d2h);
}

TEST_CASE("latency is paid once per copy, even with unlimited bandwidth", "[fakecuda][link]") {
  driver_ready();
  DeviceBuffer d(4096);
  PinnedWords host(1024);
  LinkModel link(0.0, 2000.0);  // 2 ms per copy
  OwnStream s;
  StreamTimer timer;
  timer.start(s.s);
  for (int i = 0; i < 5; ++i) {
    CU_REQUIRE_OK(cuMemcpyHtoDAsync(d.ptr, host.words, 4096, s.s));
  }
  timer.stop(s.s);
  CHECK(timer.ms() >= kSlack * 5 * 2.0);
  // A D2D copy does not cross the link.
  const fakecuda_stats before = stats_now();
  const auto t0 = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyDtoDAsync(d.ptr + 2048, d.ptr, 2048, s.s));
  CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  CHECK(ms_since(t0) < 1000);
  CHECK(stats_now().link_transfers == before.link_transfers);
}

TEST_CASE("an H2D and a D2H on two streams overlap: one engine per direction", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 2 * kMiB;
  const double gbps = 0.1;  // 21 ms each: the model, not the memmove on a busy CPU, sets the time
  DeviceBuffer up(bytes);
  DeviceBuffer down(bytes);
  PinnedWords src(bytes / sizeof(unsigned));
  PinnedWords dst(bytes / sizeof(unsigned));
  fill_pattern(src.words, bytes / sizeof(unsigned), 1);
  std::memset(dst.words, 0, bytes);
  CU_REQUIRE_OK(cuMemsetD32(up.ptr, 0, bytes / sizeof(unsigned)));
  CU_REQUIRE_OK(cuMemsetD32(down.ptr, 0x77777777u, bytes / sizeof(unsigned)));
  CU_REQUIRE_OK(cuCtxSynchronize());
  LinkModel link(gbps);
  OwnStream a;
  OwnStream b;
  const auto t0 = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyHtoDAsync(up.ptr, src.words, bytes, a.s));
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(dst.words, down.ptr, bytes, b.s));
  CU_REQUIRE_OK(cuStreamSynchronize(a.s));
  CU_REQUIRE_OK(cuStreamSynchronize(b.s));
  const double total = ms_since(t0);
  const double one = model_ms(bytes, gbps);
  CHECK(total >= kSlack * one);
  CHECK(total < 2 * one);  // serialised they would take the sum
  CHECK(dst.words[0] == 0x77777777u);
  CHECK(dst.words[bytes / sizeof(unsigned) - 1] == 0x77777777u);
  std::vector<unsigned> back(bytes / sizeof(unsigned));
  CU_REQUIRE_OK(cuMemcpyDtoH(back.data(), up.ptr, bytes));
  CHECK(has_pattern(back.data(), back.size(), 1));
}

TEST_CASE("the duplex factor slows both directions while both are busy", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 2 * kMiB;
  const double gbps = 0.2;  // 10.5 ms alone, 21 ms at half speed
  DeviceBuffer up(bytes);
  DeviceBuffer down(bytes);
  PinnedWords src(bytes / sizeof(unsigned));
  PinnedWords dst(bytes / sizeof(unsigned));
  LinkModel link(gbps, 0.0, 0.5);
  HeldStreams streams;
  CU_REQUIRE_OK(cuMemcpyHtoDAsync(up.ptr, src.words, bytes, streams.a.s));
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(dst.words, down.ptr, bytes, streams.b.s));
  const auto t0 = std::chrono::steady_clock::now();
  streams.open();
  CU_REQUIRE_OK(cuStreamSynchronize(streams.a.s));
  CU_REQUIRE_OK(cuStreamSynchronize(streams.b.s));
  // At least part of both transfers ran at half speed: longer than one alone at full speed.
  CHECK(ms_since(t0) >= 1.2 * model_ms(bytes, gbps));
}

TEST_CASE("two D2H copies on two streams serialise on the D2H engine", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 2 * kMiB;
  const double gbps = 0.2;
  DeviceBuffer d1(bytes);
  DeviceBuffer d2(bytes);
  CU_REQUIRE_OK(cuMemsetD32(d1.ptr, 1, bytes / sizeof(unsigned)));
  CU_REQUIRE_OK(cuMemsetD32(d2.ptr, 2, bytes / sizeof(unsigned)));
  CU_REQUIRE_OK(cuCtxSynchronize());
  PinnedWords h1(bytes / sizeof(unsigned));
  PinnedWords h2(bytes / sizeof(unsigned));
  LinkModel link(gbps);
  OwnStream a;
  OwnStream b;
  const fakecuda_stats before = stats_now();
  const auto t0 = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(h1.words, d1.ptr, bytes, a.s));
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(h2.words, d2.ptr, bytes, b.s));
  CU_REQUIRE_OK(cuStreamSynchronize(a.s));
  CU_REQUIRE_OK(cuStreamSynchronize(b.s));
  const double total = ms_since(t0);
  const fakecuda_stats after = stats_now();
  CHECK(total >= kSlack * 2 * model_ms(bytes, gbps));
  CHECK(after.link_queued_ns - before.link_queued_ns > 0);  // the second one waited for the engine
  CHECK(h1.words[bytes / sizeof(unsigned) - 1] == 1);
  CHECK(h2.words[bytes / sizeof(unsigned) - 1] == 2);
}

TEST_CASE("a kernel on stream A runs while a copy on stream B is in flight", "[fakecuda][link]") {
  driver_ready();
  TestModule module;
  const CUfunction slow_copy = module.get("slow_copy_u32");
  const std::size_t bytes = 8 * kMiB;
  DeviceBuffer d(bytes);
  PinnedWords host(bytes / sizeof(unsigned));
  DeviceBuffer kernel_in(16 * sizeof(unsigned));
  DeviceBuffer kernel_out(16 * sizeof(unsigned));
  CU_REQUIRE_OK(cuMemsetD32(kernel_in.ptr, 42, 16));
  CU_REQUIRE_OK(cuMemsetD32(kernel_out.ptr, 0, 16));
  CU_REQUIRE_OK(cuCtxSynchronize());
  LinkModel link(0.1);  // the copy takes 84 ms
  OwnStream a;
  OwnStream b;
  const fakecuda_stats before = stats_now();
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(host.words, d.ptr, bytes, b.s));
  // A kernel of 20 ms (its host function sleeps): it must not wait for the copy.
  unsigned n = 16;
  unsigned micros = 20000;
  void* params[] = {&kernel_out.ptr, &kernel_in.ptr, &n, &micros};
  const auto t0 = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuLaunchKernel(slow_copy, 1, 1, 1, 1, 1, 1, 0, a.s, params, nullptr));
  CU_REQUIRE_OK(cuStreamSynchronize(a.s));
  const double kernel_ms = ms_since(t0);
  CHECK(kernel_ms >= kSlack * 20);  // kernels take the time their host functions take
  CU_CHECK_IS(cuStreamQuery(b.s), CUDA_ERROR_NOT_READY);
  CU_REQUIRE_OK(cuStreamSynchronize(b.s));
  unsigned result[16] = {};
  CU_REQUIRE_OK(cuMemcpyDtoH(result, kernel_out.ptr, sizeof result));
  CHECK(result[15] == 42);
  CHECK(stats_now().link_transfers_beside_kernels - before.link_transfers_beside_kernels >= 1);
}

TEST_CASE("pageable host memory is half as fast and synchronous", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 16 * kMiB;
  const double gbps = 2.0;  // pinned 8.4 ms, pageable 16.8 ms
  DeviceBuffer d(bytes);
  std::vector<unsigned> pageable(bytes / sizeof(unsigned));
  fill_pattern(pageable.data(), pageable.size(), 7);
  PinnedWords pinned(bytes / sizeof(unsigned));
  LinkModel link(gbps);
  OwnStream s;

  // Pinned: the call returns before the copy can have finished.
  const auto t_pinned = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(pinned.words, d.ptr, bytes, s.s));
  CU_CHECK_IS(cuStreamQuery(s.s), CUDA_ERROR_NOT_READY);
  CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  CHECK(ms_since(t_pinned) >= kSlack * model_ms(bytes, gbps));

  // Pageable H2D: staged; the call itself takes the (slower) transfer and returns when it is done.
  const fakecuda_stats before = stats_now();
  const auto t_up = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyHtoDAsync(d.ptr, pageable.data(), bytes, s.s));
  const double up_ms = ms_since(t_up);
  CU_CHECK_IS(cuStreamQuery(s.s), CUDA_SUCCESS);
  CHECK(up_ms >= kSlack * model_ms(bytes, gbps * 0.5));

  // Pageable D2H: synchronous too, at the same speed.
  std::vector<unsigned> back(pageable.size());
  const auto t_down = std::chrono::steady_clock::now();
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(back.data(), d.ptr, bytes, s.s));
  const double down_ms = ms_since(t_down);
  CHECK(down_ms >= kSlack * model_ms(bytes, gbps * 0.5));
  CHECK(back == pageable);
  CHECK(stats_now().link_pageable_transfers - before.link_pageable_transfers == 2);
}

TEST_CASE("a slow copy keeps stream order and event waits across streams", "[fakecuda][link]") {
  driver_ready();
  const std::size_t bytes = 4 * kMiB + 12;  // not a whole number of chunks
  const std::size_t words = bytes / sizeof(unsigned);
  DeviceBuffer d(bytes);
  DeviceBuffer copy(bytes);
  PinnedWords src(words);
  PinnedWords dst(words);
  fill_pattern(src.words, words, 99);
  std::memset(dst.words, 0, words * sizeof(unsigned));
  LinkModel link(1.0);
  OwnStream a;
  OwnStream b;
  CUevent uploaded = nullptr;
  CU_REQUIRE_OK(cuEventCreate(&uploaded, CU_EVENT_DISABLE_TIMING));
  // A: upload (slow). B: waits for it, copies on the device, downloads.
  CU_REQUIRE_OK(cuMemcpyHtoDAsync(d.ptr, src.words, words * sizeof(unsigned), a.s));
  CU_REQUIRE_OK(cuEventRecord(uploaded, a.s));
  CU_REQUIRE_OK(cuStreamWaitEvent(b.s, uploaded, 0));
  CU_REQUIRE_OK(cuMemcpyDtoDAsync(copy.ptr, d.ptr, words * sizeof(unsigned), b.s));
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(dst.words, copy.ptr, words * sizeof(unsigned), b.s));
  CU_CHECK_IS(cuStreamQuery(b.s), CUDA_ERROR_NOT_READY);  // the upload alone takes 4 ms
  CU_REQUIRE_OK(cuStreamSynchronize(b.s));
  CU_CHECK_IS(cuEventQuery(uploaded), CUDA_SUCCESS);
  CHECK(has_pattern(dst.words, words, 99));
  CU_REQUIRE_OK(cuEventDestroy(uploaded));
}

TEST_CASE("a pitched 2D copy moves exact bytes when chunks split its rows", "[fakecuda][link]") {
  driver_ready();
  const std::size_t width = 3000;  // bytes per row; 1 MiB chunks end mid-row
  const std::size_t height = 1000;
  const std::size_t host_pitch = 3072;
  CUdeviceptr d = 0;
  std::size_t device_pitch = 0;
  CU_REQUIRE_OK(cuMemAllocPitch(&d, &device_pitch, width, height, 4));
  std::vector<unsigned char> host(host_pitch * height);
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<unsigned char>(i * 131 + 7);
  }
  PinnedWords pinned(host_pitch * height / sizeof(unsigned));
  std::memcpy(pinned.words, host.data(), host.size());
  LinkModel link(4.0);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = pinned.words;
  up.srcPitch = host_pitch;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = d;
  up.dstPitch = device_pitch;
  up.WidthInBytes = width;
  up.Height = height;
  CU_REQUIRE_OK(cuMemcpy2D(&up));
  std::vector<unsigned char> back(host_pitch * height, 0);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = d;
  down.srcPitch = device_pitch;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = host_pitch;
  down.WidthInBytes = width;
  down.Height = height;
  CU_REQUIRE_OK(cuMemcpy2D(&down));
  bool same = true;
  for (std::size_t y = 0; y < height && same; ++y) {
    same = std::memcmp(back.data() + y * host_pitch, host.data() + y * host_pitch, width) == 0 &&
           back[y * host_pitch + width] == 0;  // the gap between rows is not written
  }
  CHECK(same);
  CU_REQUIRE_OK(cuMemFree(d));
}

TEST_CASE("managed memory migrations pay the link: prefetch both ways and a kernel's fault", "[fakecuda][link]") {
  driver_ready();
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  const std::size_t bytes = 8 * kMiB;
  const double gbps = 1.0;  // 8.4 ms each way
  CUdeviceptr m = 0;
  CU_REQUIRE_OK(cuMemAllocManaged(&m, bytes, CU_MEM_ATTACH_GLOBAL));
  LinkModel link(gbps);
  OwnStream s;
  CUmemLocation device{};
  device.type = CU_MEM_LOCATION_TYPE_DEVICE;
  device.id = 0;
  const auto host_side = [] {
    CUmemLocation l{};
    l.type = CU_MEM_LOCATION_TYPE_HOST;
    return l;
  };

  unsigned value = 5;
  unsigned n = static_cast<unsigned>(bytes / sizeof(unsigned));
  void* params[] = {&m, &value, &n};

  // A fresh allocation's first touch populates it on the device: nothing crosses the link.
  fakecuda_stats before = stats_now();
  CU_REQUIRE_OK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s.s, params, nullptr));
  CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  CHECK(stats_now().link_bytes_h2d - before.link_bytes_h2d == 0);
  CHECK(stats_now().link_busy_ns_h2d - before.link_busy_ns_h2d == 0);
  CHECK(stats_now().managed_device_bytes - before.managed_device_bytes == bytes);
  CU_REQUIRE_OK(cuMemPrefetchAsync(m, bytes, host_side(), 0, s.s));  // a real move: populated now
  CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  CHECK(stats_now().link_bytes_d2h - before.link_bytes_d2h == bytes);

  before = stats_now();
  StreamTimer to_device;
  to_device.start(s.s);
  CU_REQUIRE_OK(cuMemPrefetchAsync(m, bytes, device, 0, s.s));
  to_device.stop(s.s);
  CHECK(to_device.ms() >= kSlack * model_ms(bytes, gbps));
  CHECK(stats_now().link_bytes_h2d - before.link_bytes_h2d == bytes);

  // The first generation (a CUdevice argument), back to the host.
  void* fn = nullptr;
  CU_REQUIRE_OK(cuGetProcAddress("cuMemPrefetchAsync", &fn, 12000, 0, nullptr));
  using PrefetchV1 = CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream);
  before = stats_now();
  StreamTimer to_host;
  to_host.start(s.s);
  CU_REQUIRE_OK(reinterpret_cast<PrefetchV1>(fn)(m, bytes, CU_DEVICE_CPU, s.s));
  to_host.stop(s.s);
  CHECK(to_host.ms() >= kSlack * model_ms(bytes, gbps));
  CHECK(stats_now().link_bytes_d2h - before.link_bytes_d2h == bytes);

  // A kernel touching the host-resident allocation waits for it to migrate.
  value = 6;
  StreamTimer faulted;
  faulted.start(s.s);
  CU_REQUIRE_OK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s.s, params, nullptr));
  faulted.stop(s.s);
  CHECK(faulted.ms() >= kSlack * model_ms(bytes, gbps));
  CU_REQUIRE_OK(cuStreamSynchronize(s.s));
  CHECK(reinterpret_cast<const unsigned*>(m)[n - 1] == 6);
  CU_REQUIRE_OK(cuMemFree(m));
}

TEST_CASE("a copy queued for its engine reports its real start to the work observer", "[fakecuda][link]") {
  driver_ready();
  struct Seen {
    std::mutex mutex;
    std::vector<std::pair<unsigned long long, unsigned long long>> spans;  // by tag
  };
  static Seen seen;
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    seen.spans.assign(2, {0, 0});
  }
  static std::atomic<unsigned long long> next_tag{0};
  next_tag = 0;
  fakecuda_work_observer observer{};
  observer.issued = [](const fakecuda_work*, void*) -> unsigned long long { return next_tag++; };
  observer.ran = [](unsigned long long tag, unsigned long long start, unsigned long long end, void*) {
    std::lock_guard<std::mutex> lock(seen.mutex);
    if (tag < seen.spans.size()) {
      seen.spans[tag] = {start, end};
    }
  };
  const std::size_t bytes = 8 * kMiB;
  DeviceBuffer d1(bytes);
  DeviceBuffer d2(bytes);
  PinnedWords h1(bytes / sizeof(unsigned));
  PinnedWords h2(bytes / sizeof(unsigned));
  LinkModel link(1.0);
  HeldStreams streams;
  fakecuda_set_work_observer(&observer);
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(h1.words, d1.ptr, bytes, streams.a.s));
  CU_REQUIRE_OK(cuMemcpyDtoHAsync(h2.words, d2.ptr, bytes, streams.b.s));
  fakecuda_set_work_observer(nullptr);
  streams.open();
  CU_REQUIRE_OK(cuStreamSynchronize(streams.a.s));
  CU_REQUIRE_OK(cuStreamSynchronize(streams.b.s));
  std::lock_guard<std::mutex> lock(seen.mutex);
  auto first = seen.spans[0];
  auto second = seen.spans[1];
  if (second.first < first.first) {
    std::swap(first, second);
  }
  const double model_ns = model_ms(bytes, 1.0) * 1e6;
  CHECK(static_cast<double>(first.second - first.first) >= kSlack * model_ns);
  CHECK(static_cast<double>(second.second - second.first) >= kSlack * model_ns);
  CHECK(static_cast<double>(second.first - first.first) >= kSlack * model_ns);  // not while it queued
}

TEST_CASE("four threads copy both ways at once: every byte arrives, each engine serves one at a time",
          "[fakecuda][link][threads]") {
  driver_ready();
  TestModule module;
  const CUfunction fill = module.get("fill_u32");
  constexpr int kThreads = 4;
  constexpr int kRounds = 5;
  constexpr std::size_t kWords = 16 * 1024;  // 64 KiB: 0.13 ms at 0.5 GB/s, plus 0.5 ms latency
  const double gbps = 0.5;
  const double latency_us = 500.0;
  LinkModel link(gbps, latency_us);
  const fakecuda_stats before = stats_now();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto fail_if = [&](bool bad) {
        if (bad) {
          ++failures;
        }
      };
      fail_if(!make_primary_current());
      CUstream s = nullptr;
      fail_if(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS);
      CUdeviceptr d = 0;
      fail_if(cuMemAlloc(&d, kWords * sizeof(unsigned)) != CUDA_SUCCESS);
      void* up_host = nullptr;
      void* down_host = nullptr;
      fail_if(cuMemAllocHost(&up_host, kWords * sizeof(unsigned)) != CUDA_SUCCESS);
      fail_if(cuMemAllocHost(&down_host, kWords * sizeof(unsigned)) != CUDA_SUCCESS);
      auto* up = static_cast<unsigned*>(up_host);
      auto* down = static_cast<unsigned*>(down_host);
      for (int r = 0; r < kRounds; ++r) {
        const unsigned seed = static_cast<unsigned>(t * 100 + r);
        fill_pattern(up, kWords, seed);
        fail_if(cuMemcpyHtoDAsync(d, up, kWords * sizeof(unsigned), s) != CUDA_SUCCESS);
        unsigned value = seed;
        unsigned n = 1;  // a kernel between the copies, on the same stream: ordered with both
        void* args[] = {&d, &value, &n};
        fail_if(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr) != CUDA_SUCCESS);
        fail_if(cuMemcpyDtoHAsync(down, d, kWords * sizeof(unsigned), s) != CUDA_SUCCESS);
        fail_if(cuStreamSynchronize(s) != CUDA_SUCCESS);
        fail_if(down[0] != seed);                                                      // the kernel's word
        fail_if(std::memcmp(down + 1, up + 1, (kWords - 1) * sizeof(unsigned)) != 0);  // the upload's
      }
      fail_if(cuMemFreeHost(up_host) != CUDA_SUCCESS || cuMemFreeHost(down_host) != CUDA_SUCCESS);
      fail_if(cuMemFree(d) != CUDA_SUCCESS || cuStreamDestroy(s) != CUDA_SUCCESS);
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  const double wall_ms = ms_since(t0);
  CHECK(failures == 0);
  const fakecuda_stats after = stats_now();
  const int per_direction = kThreads * kRounds;
  const double one_ms = latency_us * 1e-3 + model_ms(kWords * sizeof(unsigned), gbps);
  CHECK(after.link_transfers - before.link_transfers == 2u * per_direction);
  CHECK(after.link_bytes_h2d - before.link_bytes_h2d == per_direction * kWords * sizeof(unsigned));
  CHECK(static_cast<double>(after.link_busy_ns_h2d - before.link_busy_ns_h2d) >= kSlack * per_direction * one_ms * 1e6);
  CHECK(wall_ms >= kSlack * per_direction * one_ms);  // one engine per direction: no two H2D at once
}

TEST_CASE("fakecuda_link_configure rejects out-of-range values and keeps the model", "[fakecuda][link]") {
  fakecuda_link_config saved{};
  fakecuda_link_get(&saved);
  const fakecuda_link_config bad[] = {
      {-1.0, 0.0, 1.0, 0.5}, {1.0, -1.0, 1.0, 0.5}, {1.0, 2e6, 1.0, 0.5},  {1.0, 0.0, 0.0, 0.5},
      {1.0, 0.0, 1.5, 0.5},  {1.0, 0.0, 1.0, 0.0},  {1.0, 0.0, 1.0, 1.01}, {NAN, 0.0, 1.0, 0.5},
  };
  for (const auto& c : bad) {
    CHECK(fakecuda_link_configure(&c) == -1);
  }
  CHECK(fakecuda_link_configure(nullptr) == -1);
  fakecuda_link_config now{};
  fakecuda_link_get(&now);
  CHECK(std::memcmp(&now, &saved, sizeof now) == 0);
}
