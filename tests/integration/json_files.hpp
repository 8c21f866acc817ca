// What the end-to-end tests of libmemtool.so share about their files: a fresh work folder per
// case under INTEGRATION_WORK_DIR, and the JSON the runs leave there (MEMTOOL_SUMMARY,
// FAKECUDA_STATS). Header-only; include after Catch2.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace memtool::testing {

// INTEGRATION_WORK_DIR/<area>/<name>, emptied.
inline std::string fresh_work_dir(const std::string& area, const std::string& name) {
  const std::string dir = std::string(INTEGRATION_WORK_DIR) + "/" + area + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

inline std::uint64_t u(const nlohmann::json& j, const char* key) { return j.at(key).get<std::uint64_t>(); }

}  // namespace memtool::testing
