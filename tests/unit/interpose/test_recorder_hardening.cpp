// The recorder against hostile programs and settings: frees that free nothing are recorded as
// failed frees (not frees), and MEMTOOL_ITERATION_KERNEL's pattern is matched once per kernel
// in linear time, whatever the kernel's name.
#include <catch2/catch.hpp>

#include "collecting_sink.hpp"
#include "fake_driver.hpp"
#include "memtool/interpose/recorder.hpp"

using namespace memtool::interpose;
using namespace memtool::interpose::testing;
using memtool::trace::FailedFreeReason;
using memtool::trace::MemoryKind;

TEST_CASE("recorder: double, interior and wild frees are failed frees", "[interpose][recorder]") {
  CollectingSink::Shared shared;
  Recorder recorder(default_options(), std::make_unique<CollectingSink>(shared));
  recorder.on_alloc(0x10000, 4096, MemoryKind::device, 0);
  recorder.on_alloc(0x20000, 4096, MemoryKind::device, 0);
  recorder.on_free(0x10000, MemoryKind::device, 0);
  recorder.on_free(0x10000, MemoryKind::device, 0);    // double
  recorder.on_free(0x20040, MemoryKind::device, 7);    // interior
  recorder.on_free(0xdead0000, MemoryKind::async, 0);  // wild
  REQUIRE(shared.failed_frees.size() == 3);
  CHECK(shared.failed_frees[0].reason == FailedFreeReason::not_allocated);
  CHECK(shared.failed_frees[1].reason == FailedFreeReason::interior);
  CHECK(shared.failed_frees[1].address == 0x20040);
  CHECK(shared.failed_frees[1].stream.value() == 7);
  CHECK(shared.failed_frees[2].reason == FailedFreeReason::not_allocated);
  CHECK(shared.failed_frees[2].kind == MemoryKind::async);
  CHECK(shared.events.size() == 3);  // two allocations and the one real free
  const RecorderStats stats = recorder.stats();
  CHECK(stats.frees == 1);
  CHECK(stats.live_buffers == 1);  // the interior free freed nothing
  CHECK(shared.failed_frees[0].header.seq < shared.failed_frees[1].header.seq);
}

TEST_CASE("recorder: a backtracking MEMTOOL_ITERATION_KERNEL on a long kernel name", "[interpose][recorder]") {
  install_fake_kernels();
  std::string name = "_zn2at6native";  // all in [a-z_0-9]: only the final X decides
  while (name.size() < 20000) name += "abcdefghij_0123456789";
  fake_kernels()[0x500] = {name, {{0, 8}}, false};
  fake_kernels()[0x600] = {name + "X", {{0, 8}}, false};
  CollectingSink::Shared shared;
  Options options = default_options();
  options.iteration_kernel = "^(([a-z_0-9])*)*X$";  // std::regex: exponential, and one frame per byte
  Recorder recorder(options, std::make_unique<CollectingSink>(shared));
  recorder.set_driver_queries(fake_queries());
  std::uint64_t p = 0;
  void* params[] = {&p};
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(recorder.on_launch(handle(0x500), 0, LaunchArgs{params, nullptr}).marks_iteration);
    CHECK(recorder.on_launch(handle(0x600), 0, LaunchArgs{params, nullptr}).marks_iteration);
  }
  CHECK(recorder.active());
  std::size_t marks = 0;
  for (const auto& event : shared.events)
    marks += std::holds_alternative<memtool::trace::IterationMarkEvent>(event) ? 1 : 0;
  CHECK(marks == 3);
}
