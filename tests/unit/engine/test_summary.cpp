// The MEMTOOL_SUMMARY JSON object and the exit line.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "memtool/engine/summary.hpp"

using namespace memtool::engine;

TEST_CASE("summary JSON carries every counter", "[engine][summary]") {
  Summary s;
  s.strategy = "pool";
  s.state = "apply";
  s.period_allocations = 180;
  s.period_events = 556;
  s.period_peak_bytes = 887414904;
  s.iterations_planned = 7;
  s.pool_bytes = 1 << 20;
  s.lower_bound_bytes = 1000000;
  s.allocs_from_pool = 91;
  s.allocs_passed_through = 12;
  s.misses = 2;
  s.replans = 1;
  s.peak_device_bytes_with_pool = 5;
  s.peak_device_bytes_without_pool = 6;
  const auto j = nlohmann::json::parse(to_json(s));
  CHECK(j.at("strategy") == "pool");
  CHECK(j.at("state") == "apply");
  CHECK(j.at("iterations_planned") == 7);
  CHECK(j.at("pool_bytes") == 1 << 20);
  CHECK(j.at("lower_bound_bytes") == 1000000);
  CHECK(j.at("allocs_from_pool") == 91);
  CHECK(j.at("allocs_passed_through") == 12);
  CHECK(j.at("misses") == 2);
  CHECK(j.at("replans") == 1);
  CHECK(j.at("peak_device_bytes_with_pool") == 5);
  CHECK(j.at("peak_device_bytes_without_pool") == 6);
  CHECK(j.at("period_allocations") == 180);
  CHECK(j.at("period_events") == 556);
  const std::string line = summary_line(s);
  CHECK(line.find("5 B with memtool") != std::string::npos);
  CHECK(line.find("6 B without") != std::string::npos);
  // The step it found, in words.
  CHECK(line.find("iteration of 180 allocations (556 events, up to 887414904 B live)") != std::string::npos);

  const std::string path = "memtool_pool_summary_test.json";
  REQUIRE(write_summary_file(s, path));
  std::ifstream in(path);
  CHECK(nlohmann::json::parse(in) == j);
  std::remove(path.c_str());
  CHECK_FALSE(write_summary_file(s, "/nonexistent-dir/x.json"));
  s.period_allocations = 0;
  CHECK(summary_line(s).find("no iteration planned") != std::string::npos);
}
