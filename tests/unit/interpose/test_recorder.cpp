// The recorder: events, order, launches resolved to kernels and touched buffers, iteration
// detection, fail-open, fork, concurrency.
#include <catch2/catch.hpp>

#include <thread>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/recorder.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;
using memtool::trace::MemoryKind;

namespace {

struct Fixture {
  CollectingSink::Shared shared;
  Options options = default_options();
  std::unique_ptr<Recorder> recorder;

  void start() {
    install_fake_kernels();
    recorder = std::make_unique<Recorder>(options, std::make_unique<CollectingSink>(shared));
    recorder->set_driver_queries(fake_queries());
  }
  template <class T>
  const T& at(std::size_t i) const {
    REQUIRE(i < shared.events.size());
    REQUIRE(std::holds_alternative<T>(shared.events[i]));
    return std::get<T>(shared.events[i]);
  }
  std::string kernel_name(const Launch& launch) const { return shared.strings.at(launch.event.kernel.value()); }
};

void launch_gemm(Recorder& recorder, std::uint64_t a, std::uint64_t b, std::uint64_t c, int n) {
  void* params[] = {&a, &b, &c, &n};
  recorder.on_launch(handle(0x100), 0, LaunchArgs{params, nullptr});
}

}  // namespace

TEST_CASE("events carry sequence, time, thread and stream", "[interpose][recorder]") {
  Fixture f;
  f.start();
  f.recorder->on_alloc(0x10000, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(0x20000, 256, MemoryKind::async, 0x77);
  f.recorder->on_free(0x20000, MemoryKind::async, 0x77);
  f.recorder->on_sync(memtool::trace::SyncKind::stream, 0x77);
  REQUIRE(f.shared.events.size() == 4);
  const auto& a = f.at<memtool::trace::AllocEvent>(0);
  CHECK(a.header.seq == 0);
  CHECK(a.address == 0x10000);
  CHECK(a.size == 4096);
  CHECK(a.header.thread.value() != 0);
  CHECK_FALSE(a.stack.valid());
  const auto& b = f.at<memtool::trace::AllocEvent>(1);
  CHECK(b.header.seq == 1);
  CHECK(b.stream.value() == 0x77);
  CHECK(b.header.time_ns >= a.header.time_ns);
  const auto& freed = f.at<memtool::trace::FreeEvent>(2);
  CHECK(freed.address == 0x20000);
  CHECK(f.at<memtool::trace::SyncEvent>(3).header.seq == 3);
  const RecorderStats stats = f.recorder->stats();
  CHECK(stats.events == 4);
  CHECK(stats.allocations == 2);
  CHECK(stats.frees == 1);
  CHECK(stats.live_bytes == 4096);
  CHECK(stats.peak_live_bytes == 4096 + 256);
}

TEST_CASE("launch arguments are scanned against live buffers", "[interpose][recorder]") {
  Fixture f;
  f.start();
  f.recorder->on_alloc(0x10000, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(0x20000, 4096, MemoryKind::device, 0);
  f.shared.events.clear();

  SECTION("kernelParams with the layout from cuFuncGetParamInfo, interior pointers included") {
    launch_gemm(*f.recorder, 0x20000, 0x10010, 0x999999, 0x10000);
    const auto& launch = f.at<Launch>(0);
    CHECK(f.kernel_name(launch) == "gemm");
    // The int parameter holds a buffer address's low bits but is 4 bytes: never a pointer.
    CHECK(launch.touched == std::vector<std::uint64_t>{0x20000, 0x10000});
  }
  SECTION("a struct parameter's pointer members") {
    struct {
      std::uint64_t x, y;
    } pair{0x10008, 0x20008};
    float alpha = 2.0F;
    void* params[] = {&pair, &alpha};
    f.recorder->on_launch(handle(0x200), 0, LaunchArgs{params, nullptr});
    CHECK(f.at<Launch>(0).touched == std::vector<std::uint64_t>{0x10000, 0x20000});
  }
  SECTION("the extra packed buffer") {
    unsigned char packed[32] = {};
    const std::uint64_t a = 0x20040;
    const std::uint64_t c = 0x10000;
    std::memcpy(packed + 8, &a, 8);
    std::memcpy(packed + 16, &c, 8);
    size_t size = sizeof(packed);
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    f.recorder->on_launch(handle(0x100), 5, LaunchArgs{nullptr, extra});
    const auto& launch = f.at<Launch>(0);
    CHECK(launch.touched == std::vector<std::uint64_t>{0x20000, 0x10000});
    CHECK(launch.event.stream.value() == 5);
  }
  SECTION("a CUkernel handle is asked through cuKernelGetParamInfo / cuKernelGetName") {
    std::uint64_t x = 0x20000;
    void* params[] = {&x};
    f.recorder->on_launch(handle(0x300), 0, LaunchArgs{params, nullptr});
    CHECK(f.kernel_name(f.at<Launch>(0)) == "relu");
    CHECK(f.at<Launch>(0).touched == std::vector<std::uint64_t>{0x20000});
  }
  SECTION("an unknown function is recorded without touched buffers") {
    std::uint64_t x = 0x20000;
    void* params[] = {&x};
    f.recorder->on_launch(handle(0xbad), 0, LaunchArgs{params, nullptr});
    CHECK(f.kernel_name(f.at<Launch>(0)) == "kernel@0xbad");
    CHECK(f.at<Launch>(0).touched.empty());
  }
  SECTION("a freed buffer is no longer touched") {
    f.recorder->on_free(0x10000, MemoryKind::device, 0);
    launch_gemm(*f.recorder, 0x10000, 0x20000, 0, 1);
    CHECK(f.at<Launch>(1).touched == std::vector<std::uint64_t>{0x20000});
  }
}

TEST_CASE("the parameter layout and name are read once per function", "[interpose][recorder]") {
  Fixture f;
  f.start();
  param_queries() = 0;
  for (int i = 0; i < 5; ++i) launch_gemm(*f.recorder, 0, 0, 0, i);
  CHECK(param_queries() == 5);  // four parameters and the INVALID_VALUE that ends them, once
  CHECK(f.shared.strings == std::vector<std::string>{"gemm"});
  CHECK(f.recorder->stats().launches == 5);
}

TEST_CASE("MEMTOOL_ITERATION_KERNEL marks iterations at matching launches", "[interpose][recorder]") {
  Fixture f;
  f.options.iteration_kernel = "^adam_";
  f.start();
  std::uint64_t p = 0;
  void* params[] = {&p};
  launch_gemm(*f.recorder, 0, 0, 0, 1);
  f.recorder->on_launch(handle(0x400), 0, LaunchArgs{params, nullptr});
  f.recorder->on_launch(handle(0x400), 0, LaunchArgs{params, nullptr});
  REQUIRE(f.shared.events.size() == 5);
  CHECK(std::holds_alternative<Launch>(f.shared.events[0]));
  CHECK(f.at<memtool::trace::IterationMarkEvent>(1).index == 0);
  CHECK(f.kernel_name(f.at<Launch>(2)) == "adam_step");
  CHECK(f.at<memtool::trace::IterationMarkEvent>(3).index == 1);
}

TEST_CASE("the online detector finds the period of a training loop", "[interpose][recorder]") {
  Fixture f;
  f.start();
  // Warm-up that differs, then a steady loop of 6 events per iteration.
  f.recorder->on_alloc(0x100000, 1 << 20, MemoryKind::device, 0);
  launch_gemm(*f.recorder, 0x100000, 0, 0, 0);
  for (int iteration = 0; iteration < 12; ++iteration) {
    f.recorder->on_alloc(0x200000, 4096, MemoryKind::device, 0);
    launch_gemm(*f.recorder, 0x200000, 0x100000, 0, iteration);
    f.recorder->on_alloc(0x300000, 512, MemoryKind::device, 0);
    std::uint64_t p = 0x300000;
    void* params[] = {&p};
    f.recorder->on_launch(handle(0x400), 0, LaunchArgs{params, nullptr});
    f.recorder->on_free(0x300000, MemoryKind::device, 0);
    f.recorder->on_free(0x200000, MemoryKind::device, 0);
  }
  const auto stats = f.recorder->stats();
  REQUIRE(stats.period.has_value());
  CHECK(*stats.period == 6);
}

TEST_CASE("allocation stacks are raw instruction pointers plus module mappings", "[interpose][recorder]") {
  Fixture f;
  f.options.stacks = true;
  f.options.stack_depth = 16;
  f.start();
  f.recorder->on_alloc(0x10000, 64, MemoryKind::device, 0);
  const auto& alloc = f.at<memtool::trace::AllocEvent>(0);
  REQUIRE(alloc.stack.valid());
  const auto& frames = f.shared.stacks.at(alloc.stack.value());
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.size() <= 16);
  REQUIRE_FALSE(f.shared.modules.empty());
  // The innermost frame lies in a code segment we described (this test binary).
  bool covered = false;
  for (const auto& module : f.shared.modules)
    covered = covered || (frames[0].ip >= module.start && frames[0].ip < module.end);
  CHECK(covered);
}

TEST_CASE("a failing sink disables recording and never throws", "[interpose][recorder]") {
  Fixture f;
  f.start();
  f.recorder->on_alloc(0x10000, 64, MemoryKind::device, 0);
  f.shared.throw_on_write = true;
  CHECK_NOTHROW(f.recorder->on_alloc(0x20000, 64, MemoryKind::device, 0));
  CHECK_FALSE(f.recorder->active());
  f.shared.throw_on_write = false;
  f.recorder->on_free(0x10000, MemoryKind::device, 0);
  CHECK(f.shared.events.size() == 1);
}

TEST_CASE("after fork the child forgets the trace; shutdown closes it once", "[interpose][recorder]") {
  SECTION("child") {
    Fixture f;
    f.start();
    f.recorder->before_fork();
    f.recorder->after_fork_in_child();
    CHECK(f.shared.abandoned);
    CHECK_FALSE(f.recorder->active());
    f.recorder->on_alloc(0x10000, 64, MemoryKind::device, 0);
    CHECK(f.shared.events.empty());
    f.recorder.reset();
    CHECK_FALSE(f.shared.closed);  // never written to the parent's file
  }
  SECTION("parent") {
    Fixture f;
    f.start();
    f.recorder->before_fork();
    f.recorder->after_fork_in_parent();
    f.recorder->on_alloc(0x10000, 64, MemoryKind::device, 0);
    CHECK(f.shared.events.size() == 1);
    f.recorder->shutdown();
    CHECK(f.shared.closed);
    f.recorder->on_alloc(0x20000, 64, MemoryKind::device, 0);
    CHECK(f.shared.events.size() == 1);
  }
}

TEST_CASE("8 threads record concurrently without losing or reordering events", "[interpose][recorder][threads]") {
  Fixture f;
  f.start();
  constexpr int kThreads = 8;
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::uint64_t base = 0x1000000ULL * static_cast<std::uint64_t>(t + 1);
      for (int i = 0; i < kRounds; ++i) {
        const std::uint64_t address = base + 0x1000ULL * static_cast<std::uint64_t>(i % 16);
        f.recorder->on_alloc(address, 256, MemoryKind::async, static_cast<std::uint64_t>(t));
        launch_gemm(*f.recorder, address + 8, 0, 0, i);
        f.recorder->on_copy(address, 0x42, 256, memtool::trace::CopyKind::unknown, 0, true);
        f.recorder->on_free(address, MemoryKind::async, static_cast<std::uint64_t>(t));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::size_t expected = std::size_t{kThreads} * kRounds * 4;
  REQUIRE(f.shared.events.size() == expected);
  std::size_t launches_touching_own_buffer = 0;
  for (std::size_t i = 0; i < expected; ++i) {
    const std::uint64_t seq = std::visit(
        [](const auto& e) {
          if constexpr (std::is_same_v<std::decay_t<decltype(e)>, Launch>)
            return e.event.header.seq;
          else
            return e.header.seq;
        },
        f.shared.events[i]);
    REQUIRE(seq == i);  // the sink sees events in sequence order
    if (const auto* launch = std::get_if<Launch>(&f.shared.events[i]);
        launch != nullptr && launch->touched.size() == 1) {
      ++launches_touching_own_buffer;
    }
  }
  CHECK(launches_touching_own_buffer == std::size_t{kThreads} * kRounds);
  const auto stats = f.recorder->stats();
  CHECK(stats.allocations == std::size_t{kThreads} * kRounds);
  CHECK(stats.frees == std::size_t{kThreads} * kRounds);
  CHECK(stats.live_bytes == 0);
  CHECK(stats.live_buffers == 0);
}

TEST_CASE("a thread's cached kernel never crosses from one recorder to the next", "[interpose][recorder]") {
  // The same CUfunction launched on this thread by a recorder, then by a new one with other
  // options: the second must describe the kernel itself (here: it marks iterations).
  {
    Fixture first;
    first.start();
    launch_gemm(*first.recorder, 0, 0, 0, 1);
    CHECK(first.kernel_name(first.at<Launch>(0)) == "gemm");
  }
  Fixture second;
  second.options.iteration_kernel = "^gemm$";
  second.start();
  launch_gemm(*second.recorder, 0, 0, 0, 1);
  REQUIRE(second.shared.events.size() == 2);
  CHECK(std::holds_alternative<memtool::trace::IterationMarkEvent>(second.shared.events[0]));
  CHECK(second.kernel_name(second.at<Launch>(1)) == "gemm");
}

// Under the swap strategy a launch also carries what pointer tables tell (pointer_tables.hpp):
// an upload read after the call, a unified copy read only from pinned memory memtool knows, the
// trace keeping the arguments' own buffers.
TEST_CASE("swap strategy: a launch touching an uploaded table touches what it points to",
          "[interpose][recorder][tables]") {
  Fixture f;
  f.options.strategy = "swap";
  f.start();
  const std::uint64_t a = 0x100000, b = 0x200000, c = 0x300000, table = 0x400000;
  f.recorder->on_alloc(a, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(b, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(c, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(table, 64, MemoryKind::device, 0);
  std::uint64_t host_table[2] = {a + 16, b};
  f.recorder->on_upload(table, host_table, sizeof host_table, true, true);
  f.shared.events.clear();
  // gemm(a, b, c, n) with the table as its first argument and nothing else of ours.
  const LaunchSeen seen = [&] {
    std::uint64_t t = table, none = 0x10, zero = 0;
    int n = 1;
    void* params[] = {&t, &none, &zero, &n};
    return f.recorder->on_launch(handle(0x100), 0, LaunchArgs{params, nullptr});
  }();
  const std::vector<std::uint64_t> touched(seen.touched.begin(), seen.touched.end());
  CHECK(touched == std::vector<std::uint64_t>{table, a, b});
  CHECK_FALSE(seen.reaches_all);
  CHECK(seen.kernel == "gemm");
  // The trace keeps what the arguments point into.
  CHECK(f.at<Launch>(0).touched == std::vector<std::uint64_t>{table});

  // A unified copy from memory memtool does not know is not read: what it wrote is unknown.
  std::uint64_t unknown_source[1] = {c};
  f.recorder->on_upload(table, unknown_source, sizeof unknown_source, false, true);
  std::uint64_t t = table, zero = 0;
  int n = 1;
  void* params[] = {&t, &zero, &zero, &n};
  CHECK(f.recorder->on_launch(handle(0x100), 0, LaunchArgs{params, nullptr}).reaches_all);
  // From pinned memory it knows, it is read (the whole table rewritten: c only).
  std::uint64_t pinned_table[8] = {c};  // the whole 64-byte table
  f.recorder->on_alloc(reinterpret_cast<std::uintptr_t>(pinned_table), sizeof pinned_table, MemoryKind::pinned_host, 0);
  f.recorder->on_upload(table, pinned_table, sizeof pinned_table, false, true);
  const LaunchSeen again = f.recorder->on_launch(handle(0x100), 0, LaunchArgs{params, nullptr});
  const std::vector<std::uint64_t> now(again.touched.begin(), again.touched.end());
  CHECK(now == std::vector<std::uint64_t>{table, c});
  CHECK_FALSE(again.reaches_all);
}

TEST_CASE("other strategies do not follow pointer tables", "[interpose][recorder][tables]") {
  Fixture f;
  f.start();  // record
  f.recorder->on_alloc(0x100000, 4096, MemoryKind::device, 0);
  f.recorder->on_alloc(0x400000, 64, MemoryKind::device, 0);
  std::uint64_t host_table[1] = {0x100000};
  f.recorder->on_upload(0x400000, host_table, sizeof host_table, true, true);
  std::uint64_t t = 0x400000, zero = 0;
  int n = 1;
  void* params[] = {&t, &zero, &zero, &n};
  const LaunchSeen seen = f.recorder->on_launch(handle(0x100), 0, LaunchArgs{params, nullptr});
  CHECK(seen.touched.size() == 1);
  CHECK(seen.reached.empty());
  CHECK_FALSE(seen.reaches_all);
}
