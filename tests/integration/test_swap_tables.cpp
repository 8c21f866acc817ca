// Swap mode against kernels that reach their buffers through pointer tables in device memory
// (issue 33), on fakecuda with a modelled host link (so copies take time and races have room):
// table_train in every way a table can be made — uploaded from pinned or pageable memory, built
// by kernels, published in a device global, inside a large buffer, interior entries, refreshed
// each step, all buffers or only the written ones through it, sync and stream-ordered
// allocation — under the default mode and explicit copies, at 65% of its plain peak: every word
// it reads is what its last writer left, and the device never holds more than the budget. And
// MEMTOOL_SWAP_VERIFY: a buffer written through an address memtool cannot follow is named, with
// its writer, in the summary.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA && defined(TABLE_TRAIN)

#include <nlohmann/json.hpp>

#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;

std::string fresh_dir(const std::string& name) { return memtool::testing::fresh_work_dir("swap_tables", name); }

Env fakecuda(const std::string& dir) {
  Env env;
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  env["FAKECUDA_STATS"] = dir + "/fakecuda.json";
  env["FAKECUDA_LINK_GBPS"] = "2";  // copies take time: a move under a kernel has room to go wrong
  return env;
}

struct Variant {
  const char* name;
  std::vector<std::string> args;
};

// Small enough for the 2-core machine: 4 layers of 2 groups of 2 MiB buffers (48 MiB; 2 MiB, the VMM
// granularity, so that explicit copies hold what they are asked), 4 steps.
const std::vector<std::string> kShape{"--steps", "4", "--layers", "4", "--groups", "2", "--words", "524288"};

const std::vector<Variant> kVariants{
    {"pinned_all", {}},
    {"pageable_written_refresh_async",
     {"--table", "pageable", "--through", "written", "--refresh", "--alloc", "async"}},
    {"written_refresh", {"--through", "written", "--refresh"}},
    {"kernel_refresh", {"--table", "kernel", "--refresh"}},
    {"kernel_written_refresh", {"--table", "kernel", "--through", "written", "--refresh"}},
    {"global_all", {"--table", "global"}},
    {"large_interior_refresh", {"--table-in-large", "--interior", "--refresh"}},
};

}  // namespace

TEST_CASE("swap: kernels that reach their buffers through pointer tables read what was written, within the budget",
          "[integration][swap_tables]") {
  for (const Variant& v : kVariants) {
    std::vector<std::string> argv{TABLE_TRAIN};
    argv.insert(argv.end(), kShape.begin(), kShape.end());
    argv.insert(argv.end(), v.args.begin(), v.args.end());
    const std::string dir = fresh_dir(v.name);
    const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
    REQUIRE(plain.status == 0);
    const std::uint64_t peak = u(read_json(dir + "/plain/fakecuda.json"), "peak_bytes_in_use");
    const std::uint64_t budget = peak * 65 / 100;
    for (const char* mode : {"", "explicit"}) {
      INFO(v.name << ", mode " << (*mode != 0 ? mode : "default"));
      const std::string at = dir + "/" + (*mode != 0 ? mode : "default");
      Env env = fakecuda(at);
      env["FAKECUDA_MEMORY_BYTES"] = std::to_string(2 * peak);  // room to see the budget passed
      env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
      env["MEMTOOL_STRATEGY"] = "swap";
      if (*mode != 0) env["MEMTOOL_SWAP_MODE"] = mode;
      env["MEMTOOL_BUDGET"] = std::to_string(budget);
      env["MEMTOOL_SUMMARY"] = at + "/summary.json";
      const Outcome swapped = run(argv, env, at);
      INFO(swapped.err);
      CHECK(swapped.status == 0);
      CHECK(swapped.out == plain.out);
      const nlohmann::json summary = read_json(at + "/summary.json");
      CHECK(summary.at("swap_mode") == (*mode != 0 ? mode : "uvm"));
      CHECK(u(summary, "bytes_swapped_out") > 0);
      CHECK(u(summary, "peak_device_bytes") <= budget);
      const nlohmann::json stats = read_json(at + "/fakecuda.json");
      CHECK(u(stats, "peak_bytes_in_use") <= budget);
      CHECK(u(stats, "bytes_in_use") == 0);
    }
  }
}

// A budget no step fits (64K) with every buffer a candidate (tests/gpu/run.sh's swap stage): the
// tables published in a device global, so each grouped kernel may reach anything and buffers
// leave at once under it, reading their host copies. A copy back must not remap one of them while
// such a kernel still runs (it faulted: leaving at once forgot the kernel's stream).
TEST_CASE("explicit swap: buffers that left under a kernel reaching anything stay mapped while it runs",
          "[integration][swap_tables]") {
  const std::vector<std::string> argv{TABLE_TRAIN, "--steps", "4",     "--layers", "4",     "--groups",
                                      "2",         "--words", "65536", "--table",  "global"};
  const std::string dir = fresh_dir("global_tiny_budget");
  const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
  REQUIRE(plain.status == 0);
  Env env = fakecuda(dir + "/explicit");
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_STRATEGY"] = "swap";
  env["MEMTOOL_SWAP_MODE"] = "explicit";
  env["MEMTOOL_BUDGET"] = "64K";
  env["MEMTOOL_SWAP_MIN_BYTES"] = "0";
  env["MEMTOOL_SUMMARY"] = dir + "/explicit/summary.json";
  const Outcome swapped = run(argv, env, dir + "/explicit");
  INFO(swapped.err);
  CHECK(swapped.status == 0);
  CHECK(swapped.out == plain.out);
  CHECK(u(read_json(dir + "/explicit/summary.json"), "bytes_swapped_out") > 0);
}

// Verify mode: the buffer verify_client writes through an address memtool cannot follow is
// said, with the kernel that wrote it; the program still reads what it wrote (both mechanisms
// keep a buffer that is out right at its address).
TEST_CASE("swap verify: a buffer changed behind memtool's back is named, with the last launch that could have",
          "[integration][swap_tables]") {
  for (const char* mode : {"explicit", "uvm"}) {
    INFO("mode " << mode);
    const std::string dir = fresh_dir(std::string("verify_") + mode);
    Env env = fakecuda(dir);
    env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
    env["MEMTOOL_STRATEGY"] = "swap";
    env["MEMTOOL_SWAP_MODE"] = mode;
    env["MEMTOOL_SWAP_VERIFY"] = "1";
    env["MEMTOOL_BUDGET"] = "13M";
    env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
    const Outcome o = run({VERIFY_CLIENT, APP_MODULE_IMAGE}, env, dir);
    INFO(o.out << o.err);
    CHECK(o.status == 0);
    CHECK_THAT(o.out, Catch::Contains("indirect write ok"));
    CHECK_THAT(o.err, Catch::Contains("changed behind memtool's back") && Catch::Contains("pattern_fill_indirect"));
    const nlohmann::json summary = read_json(dir + "/summary.json");
    CHECK(u(summary, "swap_verify_mismatches") == 1);
    CHECK(u(summary, "swap_verify_checks") >= 2);
    CHECK_THAT(summary.at("swap_verify_first_mismatch").get<std::string>(),
               Catch::Contains("while out") && Catch::Contains("pattern_fill_indirect"));
  }
}

// Without verify, the same program says nothing and checks nothing.
TEST_CASE("swap verify: off by default", "[integration][swap_tables]") {
  const std::string dir = fresh_dir("verify_off");
  Env env = fakecuda(dir);
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_STRATEGY"] = "swap";
  env["MEMTOOL_SWAP_MODE"] = "explicit";
  env["MEMTOOL_BUDGET"] = "13M";
  env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
  const Outcome o = run({VERIFY_CLIENT, APP_MODULE_IMAGE}, env, dir);
  CHECK(o.status == 0);
  CHECK_THAT(o.err, !Catch::Contains("behind memtool's back"));
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(u(summary, "swap_verify_checks") == 0);
  CHECK(u(summary, "bytes_swapped_out") >= (std::uint64_t{4} << 20));
}

#endif
