// Swap mode under a budget with stream-ordered allocation (issue 34): async_pool_client allocates
// and frees as PyTorch's cudaMallocAsync backend does (cuMemAllocAsync / cuMemFreeAsync, small
// temporaries on a second stream ordered by events, no synchronisation inside a step), so the
// driver's pool keeps the temporaries' memory after their frees until the step's end. At 65% of
// its plain peak, in both modes: every word it reads back is what it wrote, and the device
// (fakecuda's peak: everything on it, memtool's own memory and the pool's included) never holds
// more than the budget. With the pool told to keep its memory (a release threshold of
// UINT64_MAX), the budget holds too: what the pool keeps counts, and buffers leave for it while
// the pool keeps what the program asked it to; only where no buffer can leave (none is swapped)
// does the pool give it back.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA && defined(ASYNC_POOL_CLIENT)

#include <nlohmann/json.hpp>

#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;

// What the current pool held after the client's last step (its stderr).
std::uint64_t last_pool_reserved(const std::string& err) {
  const std::string key = "pool_reserved ";
  const std::size_t at = err.rfind(key);
  return at == std::string::npos ? ~std::uint64_t{0} : std::stoull(err.substr(at + key.size()));
}

Env fakecuda(const std::string& dir) {
  Env env;
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  env["FAKECUDA_STATS"] = dir + "/fakecuda.json";
  return env;
}

}  // namespace

TEST_CASE("swap: stream-ordered allocation stays within the budget, the driver's pool included",
          "[integration][swap][async_pool]") {
  for (const bool keep : {false, true}) {
    std::vector<std::string> argv{ASYNC_POOL_CLIENT, "4"};
    if (keep) argv.emplace_back("--keep");
    const std::string dir = memtool::testing::fresh_work_dir("async_pool", keep ? "keep" : "default");
    const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
    INFO(plain.err);
    REQUIRE(plain.status == 0);
    const std::uint64_t peak = u(read_json(dir + "/plain/fakecuda.json"), "peak_bytes_in_use");
    const std::uint64_t budget = peak * 65 / 100;
    for (const char* mode : {"explicit", "uvm"}) {
      INFO((keep ? "threshold UINT64_MAX" : "default threshold") << ", mode " << mode);
      const std::string at = dir + "/" + mode;
      Env env = fakecuda(at);
      env["FAKECUDA_MEMORY_BYTES"] = std::to_string(2 * peak);  // room to see the budget passed
      env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
      env["MEMTOOL_STRATEGY"] = "swap";
      env["MEMTOOL_SWAP_MODE"] = mode;
      env["MEMTOOL_BUDGET"] = std::to_string(budget);
      env["MEMTOOL_SUMMARY"] = at + "/summary.json";
      const Outcome swapped = run(argv, env, at);
      INFO(swapped.err);
      CHECK(swapped.status == 0);
      CHECK(swapped.out == plain.out);
      const nlohmann::json summary = read_json(at + "/summary.json");
      CHECK(u(summary, "bytes_swapped_out") > 0);
      const nlohmann::json stats = read_json(at + "/fakecuda.json");
      CHECK(u(stats, "peak_bytes_in_use") <= budget);
      CHECK(u(stats, "async_allocations") > 0);
      // Buffers could leave: the pool kept what the program asked it to keep (its temporaries).
      if (keep) CHECK(last_pool_reserved(swapped.err) > 0);
    }
  }
}

TEST_CASE("swap: a pool told to keep its memory gives it back when no buffer can leave for the budget",
          "[integration][swap][async_pool]") {
  // Each step's activations larger than the last's: what the pool kept of them cannot serve again.
  const std::vector<std::string> argv{ASYNC_POOL_CLIENT, "3", "--keep", "--grow"};
  const std::string dir = memtool::testing::fresh_work_dir("async_pool", "nothing_swapped");
  const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
  INFO(plain.err);
  REQUIRE(plain.status == 0);
  const std::uint64_t peak = u(read_json(dir + "/plain/fakecuda.json"), "peak_bytes_in_use");
  // The client's live bytes at most (its last step: 4 weights of 4 MiB, 8 activations of 4.5 MiB),
  // and a step's temporaries (under 8 MiB), whose frees the side stream may not have reached yet
  // (the pool cannot give those back), with 2 MiB to spare.
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  const std::uint64_t budget = 4 * 4 * kMiB + 8 * (4 * kMiB + kMiB / 2) + 10 * kMiB;
  REQUIRE(peak > budget);  // the pool's kept memory passes it without memtool
  Env env = fakecuda(dir + "/swap");
  env["FAKECUDA_MEMORY_BYTES"] = std::to_string(2 * peak);
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_STRATEGY"] = "swap";
  env["MEMTOOL_SWAP_MIN_BYTES"] = "1G";  // nothing is swapped
  env["MEMTOOL_BUDGET"] = std::to_string(budget);
  const Outcome swapped = run(argv, env, dir + "/swap");
  INFO(swapped.err);
  CHECK(swapped.status == 0);
  CHECK(swapped.out == plain.out);
  CHECK(u(read_json(dir + "/swap/fakecuda.json"), "peak_bytes_in_use") <= budget);
}

TEST_CASE("swap: the pool's frees the GPU has not reached are waited for when the bytes are needed now",
          "[integration][swap][async_pool]") {
  // The side stream is busy before each temporary's free: the host allocates the next buffers
  // while those frees are queued, not reached, and the pool cannot give their memory back yet.
  // Nothing is swapped (no buffer can leave), so only waiting for the frees, then trimming, holds
  // a budget of the client's live bytes with room for one layer's temporaries: below what the
  // pool keeps of a step's temporaries (about 7.6 MiB) on top of them. The host's time in those
  // waits is the summary's stall (no copy to wait for: nothing else stalls).
  for (const bool keep : {false, true}) {
    std::vector<std::string> argv{ASYNC_POOL_CLIENT, "2", "--busy"};
    if (keep) argv.emplace_back("--keep");
    INFO((keep ? "threshold UINT64_MAX" : "default threshold"));
    const std::string dir = memtool::testing::fresh_work_dir("async_pool", keep ? "busy_keep" : "busy");
    const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
    INFO(plain.err);
    REQUIRE(plain.status == 0);
    const std::uint64_t peak = u(read_json(dir + "/plain/fakecuda.json"), "peak_bytes_in_use");
    // 4 weights and 8 activations of 4 MiB, and a layer's two temporaries (under 2 MiB).
    constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
    const std::uint64_t budget = (4 + 8) * 4 * kMiB + 2 * kMiB;
    REQUIRE(peak > budget + 4 * kMiB);  // what the pool keeps passes it without memtool
    Env env = fakecuda(dir + "/swap");
    env["FAKECUDA_MEMORY_BYTES"] = std::to_string(2 * peak);
    env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
    env["MEMTOOL_STRATEGY"] = "swap";
    env["MEMTOOL_SWAP_MIN_BYTES"] = "1G";  // nothing is swapped
    env["MEMTOOL_BUDGET"] = std::to_string(budget);
    env["MEMTOOL_SUMMARY"] = dir + "/swap/summary.json";
    const Outcome swapped = run(argv, env, dir + "/swap");
    INFO(swapped.err);
    CHECK(swapped.status == 0);  // 3: a word read back differs from what was written
    CHECK(swapped.out == plain.out);
    CHECK(u(read_json(dir + "/swap/fakecuda.json"), "peak_bytes_in_use") <= budget);
    CHECK(u(read_json(dir + "/swap/summary.json"), "stall_ns") > 0);
  }
}

#endif
