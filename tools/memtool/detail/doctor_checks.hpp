// The checks of `memtool doctor`: each one what it looked at, its verdict and the fix. The
// driver's come from the probe's facts (doctor_probe.hpp); the environment's from the very
// tables memtool run/record and libmemtool.so use (the frameworks' allocator switches,
// detail/preload_run.hpp; the MEMTOOL_* options and their parser, options.def).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "detail/doctor_probe.hpp"

namespace memtool::cli {

enum class Verdict { ok, info, warn, fail };

struct Check {
  std::string name;  // stable id: driver, argument-scanning, device.0, env.MEMTOOL_LOG, ...
  Verdict verdict = Verdict::ok;
  std::string detail;  // what was found, in words
  std::string fix;     // what to do about it (empty: nothing to do)
};

[[nodiscard]] std::string_view to_string(Verdict verdict);

// getenv-like (nullptr: unset) and the NAME=VALUE list, so tests and the verb read the same.
struct DoctorEnvironment {
  std::function<const char*(const char*)> getenv;
  const char* const* environ = nullptr;
  std::string library;  // libmemtool.so as memtool run/record would find it ("" when not found)
};

[[nodiscard]] std::vector<Check> driver_checks(const ProbeResult& probe);
[[nodiscard]] std::vector<Check> environment_checks(const DoctorEnvironment& environment);

[[nodiscard]] std::string render_checks_text(const std::vector<Check>& checks);
[[nodiscard]] nlohmann::json render_checks_json(const std::vector<Check>& checks, const ProbeResult& probe);

}  // namespace memtool::cli
