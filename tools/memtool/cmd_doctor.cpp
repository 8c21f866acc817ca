// `memtool doctor [--format text|json] [--driver LIB] [--timeout S]`: what this machine and this
// environment let memtool do — the driver and its features, the devices, CUPTI, libmemtool.so,
// the frameworks' allocator switches and the MEMTOOL_* variables — each a check with its
// verdict and fix (detail/doctor_checks.hpp). Exit status 0 when no check fails, 1 otherwise.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "command.hpp"
#include "detail/doctor_checks.hpp"
#include "detail/doctor_probe.hpp"
#include "detail/preload_run.hpp"

extern char** environ;

namespace memtool::cli {
namespace {

struct DoctorArgs {
  std::string format = "text";
  std::string driver = "libcuda.so.1";
  double timeout_seconds = 30;
};

int run_doctor(const DoctorArgs& args) {
  const ProbeResult probe = probe_driver(args.driver, args.timeout_seconds);
  DoctorEnvironment environment;
  environment.getenv = [](const char* name) -> const char* { return std::getenv(name); };
  environment.environ = environ;
  environment.library = find_preload_library();
  std::vector<Check> checks = driver_checks(probe);
  for (Check& check : environment_checks(environment)) checks.push_back(std::move(check));
  const std::string text =
      args.format == "json" ? render_checks_json(checks, probe).dump(2) + "\n" : render_checks_text(checks);
  std::fwrite(text.data(), 1, text.size(), stdout);
  for (const Check& check : checks) {
    if (check.verdict == Verdict::fail) return 1;
  }
  return 0;
}

std::function<int()> setup_doctor(CLI::App& sub) {
  auto args = std::make_shared<DoctorArgs>();
  sub.add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub.add_option("--driver", args->driver,
                 "the CUDA driver library to examine, as dlopen finds it (LD_LIBRARY_PATH, ldconfig) or a path")
      ->capture_default_str();
  sub.add_option("--timeout", args->timeout_seconds, "seconds to wait for the driver's answers before calling it stuck")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  return [args] { return run_doctor(*args); };
}

MEMTOOL_COMMAND("doctor", setup_doctor);

}  // namespace
}  // namespace memtool::cli
