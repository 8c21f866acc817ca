// The resolver end to end, against a stub driver with odd answers (stub_driver.cpp): every
// check is in resolver_client.cpp, which runs under libmemtool.so.
#include <catch2/catch.hpp>

#include "memtool/trace/model.hpp"
#include "memtool/trace/reader.hpp"
#include "process.hpp"

TEST_CASE("resolution through dlsym and cuGetProcAddress_v2 passes the driver's answers through",
          "[integration][resolver]") {
  const std::string work = std::string(INTEGRATION_WORK_DIR) + "/resolver";
  const auto outcome = memtool::testing::run({RESOLVER_CLIENT},
                                             {{"LD_PRELOAD", MEMTOOL_PRELOAD},
                                              {"LD_LIBRARY_PATH", STUB_DRIVER_DIR},
                                              {"MEMTOOL_TRACE", work + "/resolver.trace"},
                                              {"MEMTOOL_LOG", "error"}},
                                             work);
  INFO(outcome.out << outcome.err);
  CHECK(outcome.status == 0);
  CHECK(outcome.out == "resolver ok\n");
  // The client called four hooked functions through our wrappers: cuMemAlloc_v2, both launches
  // and cuCtxSynchronize_v2, then memtool_iteration_mark(). The stub's nested cuMemsetD8_v2
  // passed through unrecorded.
  memtool::trace::TraceModel model;
  const auto read = memtool::trace::read_trace(work + "/resolver.trace", model);
  CHECK(read.clean_end);
  CHECK(model.stats().allocs == 1);
  CHECK(model.stats().launches == 2);
  CHECK(model.stats().syncs == 1);
  CHECK(model.stats().memsets == 0);
  CHECK(model.stats().marks == 1);
  CHECK(model.event_count() == 5);
}

TEST_CASE("without the preload the client sees the stub's own functions", "[integration][resolver]") {
  // The same client, no libmemtool.so: its memtool-specific checks must fail — proof that the
  // checks can fail at all.
  const std::string work = std::string(INTEGRATION_WORK_DIR) + "/resolver_plain";
  const auto outcome = memtool::testing::run({RESOLVER_CLIENT}, {{"LD_LIBRARY_PATH", STUB_DRIVER_DIR}}, work);
  CHECK(outcome.status == 1);
  CHECK_THAT(outcome.out, Catch::Contains("FAILED: dlsym(libcuda, cuGetProcAddress_v2) is memtool's"));
}
