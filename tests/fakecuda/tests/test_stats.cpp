// Counting: the control API in-process, and FAKECUDA_STATS=FILE written at exit by a child.
#include "fixture.hpp"
#include "spawn.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace fakecuda_test;

namespace {

std::string temp_path(const char* stem) {
  return std::string("/tmp/") + stem + "-" + std::to_string(getpid()) + ".json";
}

}  // namespace

TEST_CASE("FAKECUDA_STATS writes exact counts when the program exits", "[fakecuda][stats]") {
  const std::string path = temp_path("fakecuda-stats");
  std::remove(path.c_str());
  REQUIRE(run_with_env({FAKECUDA_STATS_CHILD, FAKECUDA_TEST_KERNELS}, {"FAKECUDA_STATS=" + path}) == 0);
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json stats = nlohmann::json::parse(in);
  std::remove(path.c_str());
  CHECK(stats.at("capacity_bytes") == (1ULL << 32));  // the default device: 4 GiB
  CHECK(stats.at("allocations") == 3);
  CHECK(stats.at("frees") == 3);
  CHECK(stats.at("async_allocations") == 1);
  CHECK(stats.at("async_frees") == 1);
  CHECK(stats.at("bytes_h2d") == 4096);
  CHECK(stats.at("bytes_d2h") == 4096);
  CHECK(stats.at("launches") == 5);
  CHECK(stats.at("kernel_launches").at("fill_u32") == 5);
  CHECK(stats.at("peak_bytes_in_use") == 1024 + 4096 + 512);
  CHECK(stats.at("bytes_in_use") == 0);
  CHECK(stats.at("link_transfers") == 0);  // the default link is not modelled
}

TEST_CASE("with FAKECUDA_LINK_GBPS the copies cross the link, counted in FAKECUDA_STATS", "[fakecuda][link]") {
  const std::string path = temp_path("fakecuda-link-stats");
  std::remove(path.c_str());
  REQUIRE(run_with_env({FAKECUDA_STATS_CHILD, FAKECUDA_TEST_KERNELS},
                       {"FAKECUDA_STATS=" + path, "FAKECUDA_LINK_GBPS=0.001", "FAKECUDA_LINK_LATENCY_US=100"}) == 0);
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json stats = nlohmann::json::parse(in);
  std::remove(path.c_str());
  CHECK(stats.at("link_transfers") == 2);  // one H2D, one D2H (pageable: both)
  CHECK(stats.at("link_pageable_transfers") == 2);
  CHECK(stats.at("link_bytes_h2d") == 4096);
  CHECK(stats.at("link_bytes_d2h") == 4096);
  // 4096 bytes at 1 MB/s, pageable (half speed): 8.2 ms, plus 0.1 ms latency, each way.
  CHECK(stats.at("link_busy_ns_h2d").get<double>() >= 0.9 * 8.3e6);
  CHECK(stats.at("link_busy_ns_d2h").get<double>() >= 0.9 * 8.3e6);
}

TEST_CASE("a bad FAKECUDA_MEMORY_BYTES makes the program fail, not run on a wrong device", "[fakecuda][stats]") {
  CHECK(run_with_env({FAKECUDA_STATS_CHILD, FAKECUDA_TEST_KERNELS}, {"FAKECUDA_MEMORY_BYTES=lots"}) == 1);
  CHECK(run_with_env({FAKECUDA_STATS_CHILD, FAKECUDA_TEST_KERNELS}, {"FAKECUDA_MEMORY_BYTES=64M"}) == 0);
}

TEST_CASE("freed device memory is decommitted: touching it faults", "[fakecuda][memory]") {
  // Sanitizers would catch the fault themselves; let it kill the child as it would unsanitized.
  CHECK(run_with_env({FAKECUDA_STATS_CHILD, FAKECUDA_TEST_KERNELS, "use-after-free"},
                     {"TSAN_OPTIONS=handle_segv=0", "ASAN_OPTIONS=handle_segv=0"}) == 1000 + SIGSEGV);
}

TEST_CASE("fakecuda_stats_snapshot, reset and write_json", "[fakecuda][stats]") {
  driver_ready();
  CUdeviceptr keep = 0;
  CU_REQUIRE_OK(cuMemAlloc(&keep, 2048));
  fakecuda_stats_reset();
  fakecuda_stats s = stats_now();
  CHECK(s.allocations == 0);
  CHECK(s.launches == 0);
  CHECK(s.peak_bytes_in_use == s.bytes_in_use);
  CHECK(s.capacity_bytes == kTestCapacity);
  CUdeviceptr p = 0;
  CU_REQUIRE_OK(cuMemAlloc(&p, 4096));
  CU_REQUIRE_OK(cuMemFree(p));
  s = stats_now();
  CHECK(s.allocations == 1);
  CHECK(s.frees == 1);
  CHECK(s.peak_bytes_in_use - s.bytes_in_use == 4096);
  // A caller built against a smaller struct gets only what it asked for.
  fakecuda_stats partial{};
  partial.bytes_in_use = 12345;
  CHECK(fakecuda_stats_snapshot(&partial, 2 * sizeof(unsigned long long)) == 2 * sizeof(unsigned long long));
  CHECK(partial.bytes_in_use == s.bytes_in_use);
  CHECK(partial.peak_bytes_in_use == 0);

  const std::string path = temp_path("fakecuda-snapshot");
  REQUIRE(fakecuda_stats_write_json(path.c_str()) == 0);
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in);
  std::remove(path.c_str());
  CHECK(json.at("allocations") == 1);
  CHECK(json.at("bytes_in_use") == s.bytes_in_use);
  CHECK(fakecuda_stats_write_json("/nonexistent-dir/stats.json") != 0);
  CU_REQUIRE_OK(cuMemFree(keep));
}
