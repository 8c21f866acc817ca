// Pool mode end to end on fakecuda (asynchronous streams): the test apps under
// MEMTOOL_STRATEGY=pool print exactly what they print without memtool, and the plan is really
// used (MEMTOOL_SUMMARY); the device peak in the pooled steady state stays within 5% of
// persistent + LB computed independently from a recorded trace; the adversarial app never sees
// a corrupted byte and makes the pool re-plan; out of memory reaches the app as
// CUDA_ERROR_OUT_OF_MEMORY; nothing is left allocated; `memtool run`.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/reader.hpp"
#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;

constexpr std::uint64_t kGranule = 512;  // what fakecuda's cuMemAlloc charges per allocation

std::string fresh_dir(const std::string& name) { return memtool::testing::fresh_work_dir("pool", name); }

Env fakecuda(const std::string& dir, Env env = {}) {
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  env["FAKECUDA_STATS"] = dir + "/fakecuda.json";
  return env;
}

Env pooled(const std::string& dir, Env env = {}) {
  env["LD_PRELOAD"] = env.count("LD_PRELOAD") ? env["LD_PRELOAD"] + ":" + MEMTOOL_PRELOAD : MEMTOOL_PRELOAD;
  env["MEMTOOL_STRATEGY"] = "pool";
  env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
  env["MEMTOOL_LOG"] = "info";
  return fakecuda(dir, std::move(env));
}

struct Pair {
  Outcome plain;
  Outcome pool;
  nlohmann::json summary;
  nlohmann::json plain_stats;
  nlohmann::json pool_stats;
};

Pair run_both(const std::string& name, const std::vector<std::string>& argv, const Env& plain_env = {},
              const Env& pool_env = {}) {
  Pair p;
  const std::string dir = fresh_dir(name);
  p.plain = run(argv, fakecuda(dir + "/plain", plain_env), dir + "/plain");
  p.pool = run(argv, pooled(dir + "/pool", pool_env), dir + "/pool");
  INFO(p.pool.err);
  REQUIRE(p.plain.status == 0);
  REQUIRE(p.pool.status == 0);
  p.summary = read_json(dir + "/pool/summary.json");
  p.plain_stats = read_json(dir + "/plain/fakecuda.json");
  p.pool_stats = read_json(dir + "/pool/fakecuda.json");
  return p;
}

}  // namespace

TEST_CASE("pool mode: the test apps print identical checksums and are served from the plan", "[integration][pool]") {
  struct Case {
    const char* name;
    std::vector<std::string> argv;
  };
  const std::vector<Case> cases = {
      {"mlp", {MLP_TRAIN, "--iterations", "40"}},
      {"mlp_getproc", {MLP_TRAIN_GETPROC, "--iterations", "40", "--per-thread"}},
      {"conv", {CONV_TRAIN, "--iterations", "40"}},
      {"conv_getproc", {CONV_TRAIN_GETPROC, "--iterations", "40"}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const Pair p = run_both(c.name, c.argv);
    CHECK(p.pool.out == p.plain.out);  // bit-identical losses and weight checksums
    CHECK(std::count(p.plain.out.begin(), p.plain.out.end(), '\n') == 40);
    CHECK(p.summary.at("strategy") == "pool");
    CHECK(u(p.summary, "iterations_planned") > 5);  // the plan served several iterations
    CHECK(u(p.summary, "allocs_from_pool") > 0);
    CHECK(u(p.summary, "misses") == 0);  // the apps repeat exactly
    CHECK(u(p.summary, "pool_bytes") >= u(p.summary, "lower_bound_bytes"));
    CHECK(u(p.summary, "lower_bound_bytes") > 0);
    // The apps free everything: nothing of ours is left on the device either (pools released).
    CHECK(u(p.pool_stats, "bytes_in_use") == 0);
    CHECK(u(p.plain_stats, "bytes_in_use") == 0);
    // Log lines at info: the plan applied against LB, and the exit summary.
    CHECK_THAT(p.pool.err, Catch::Contains("plan applied: pool") && Catch::Contains("LB") &&
                               Catch::Contains("device peak") && Catch::Contains("without"));
  }
}

TEST_CASE("pool mode: cross-stream reuse in conv_train is ordered by events, not by the host", "[integration][pool]") {
  const Pair p = run_both("conv_waits", {CONV_TRAIN, "--iterations", "30"});
  CHECK(p.pool.out == p.plain.out);
  // dlogits and the side stream's uploads move between the two streams every iteration.
  CHECK(u(p.summary, "stream_waits") > 0);
  CHECK(u(p.summary, "events_recorded") > 0);
}

TEST_CASE("pool mode: MEMTOOL_ITERATION_KERNEL boundaries reach the pool", "[integration][pool]") {
  // softmax_xent runs once per mlp iteration, mid-iteration: the marks alone define the period.
  const Pair p =
      run_both("kernel_marks", {MLP_TRAIN, "--iterations", "30"}, {}, {{"MEMTOOL_ITERATION_KERNEL", "^softmax_xent$"}});
  CHECK(p.pool.out == p.plain.out);
  CHECK(u(p.summary, "iterations_planned") > 5);
  CHECK(u(p.summary, "allocs_from_pool") > 0);
  CHECK(u(p.summary, "misses") == 0);
}

namespace {

// persistent + LB from a recorded trace, independently of the engine: the persistent buffers'
// requested bytes (and how many there are), and the lower bound of a steady iteration's
// problem (wrap view, 512-byte footprints: what the pool's alignment is), the largest over the
// complete steady iterations.
struct Bound {
  std::uint64_t persistent_bytes = 0;
  std::uint64_t persistent_count = 0;
  std::uint64_t lower_bound = 0;
};

Bound bound_from_trace(const std::string& name, const std::vector<std::string>& argv) {
  const std::string dir = fresh_dir(name + "_trace");
  Env env = fakecuda(dir);
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_TRACE"] = dir + "/app.trace";
  const Outcome recorded = run(argv, env, dir);
  REQUIRE(recorded.status == 0);
  memtool::trace::TraceModel model;
  (void)memtool::trace::read_trace(dir + "/app.trace", model);
  const memtool::trace::Iterations iterations = memtool::trace::find_iterations(model);
  REQUIRE(iterations.found());
  REQUIRE(iterations.spans.size() > 2);
  Bound b;
  // Persistent for the pool: live from the start of the second iteration to the end of the
  // last-but-one (weights and optimizer state; the apps free them only at exit).
  const std::uint64_t loop_begin = iterations.spans[1].first_event;
  const std::uint64_t loop_end = iterations.spans[iterations.spans.size() - 2].end_event;
  for (const auto& buffer : model.buffers()) {
    const bool device = buffer.kind == memtool::trace::MemoryKind::device ||
                        buffer.kind == memtool::trace::MemoryKind::async;  // not the pinned staging
    if (device && buffer.live_at(loop_begin) && (!buffer.freed() || buffer.free_event >= loop_end)) {
      b.persistent_bytes += buffer.size;
      ++b.persistent_count;
    }
  }
  for (std::size_t i = 1; i + 1 < iterations.spans.size(); ++i) {
    const auto problem = memtool::trace::to_problem(model, iterations, i, kGranule);
    b.lower_bound = std::max(b.lower_bound, memtool::trace::problem_lower_bound(problem));
  }
  return b;
}

}  // namespace

TEST_CASE("pool mode: steady-state device peak within 5% of persistent + LB", "[integration][pool]") {
  // allocs_before: cuMemAlloc_v2 calls before iteration 20 (persistent ones, then per iteration);
  // the peak window opens there (PEAK_WINDOW_AFTER_ALLOCS), long after the plan was applied.
  struct Case {
    const char* name;
    const char* program;
    long allocs_before;
  };
  for (const Case& c : {Case{"mlp", MLP_TRAIN, 6 + 19 * 20}, Case{"conv", CONV_TRAIN, 4 + 4 * 20}}) {
    INFO(c.name);
    const std::vector<std::string> argv{c.program, "--iterations", "40"};
    const Bound b = bound_from_trace(c.name, argv);
    const Env window{{"LD_PRELOAD", PEAK_WINDOW_SHIM}, {"PEAK_WINDOW_AFTER_ALLOCS", std::to_string(c.allocs_before)}};
    const Pair p = run_both(std::string(c.name) + "_peak", argv, window, window);
    CHECK(p.pool.out == p.plain.out);
    const std::uint64_t pool_peak = u(p.pool_stats, "peak_bytes_in_use");
    const std::uint64_t plain_peak = u(p.plain_stats, "peak_bytes_in_use");
    // fakecuda charges every allocation in 512-byte granules: each persistent buffer (passed
    // through) and the pool's one allocation may each round up by < 512 bytes.
    const std::uint64_t granularity = kGranule * (b.persistent_count + 1);
    const double limit =
        1.05 * static_cast<double>(b.persistent_bytes + b.lower_bound) + static_cast<double>(granularity);
    INFO("persistent " << b.persistent_bytes << " B in " << b.persistent_count << " buffers, LB (trace) "
                       << b.lower_bound << " B, LB (engine) " << u(p.summary, "lower_bound_bytes") << " B, pool "
                       << u(p.summary, "pool_bytes") << " B; steady peak: pool " << pool_peak << " B, plain "
                       << plain_peak << " B; limit " << limit);
    CHECK(u(p.summary, "iterations_planned") > 20);
    CHECK(static_cast<double>(pool_peak) <= limit);
    CHECK(pool_peak <= plain_peak);
    // Report the figures in the test log (ctest -V).
    WARN(c.name << ": persistent " << b.persistent_bytes << " B, LB " << b.lower_bound << " B, pool "
                << u(p.summary, "pool_bytes") << " B; steady peak pool " << pool_peak << " B vs plain " << plain_peak
                << " B (limit " << static_cast<std::uint64_t>(limit) << " B)");
  }
}

#ifdef ADVERSARIAL_TRAIN
TEST_CASE("pool mode: adversarial_train never sees a corrupted byte and makes the pool re-plan",
          "[integration][pool]") {
  // Shapes changing every 5 iterations (one thread, then four, each with two streams), and every
  // 20 (long enough for pooled hand-outs and cross-stream waits between the changes).
  const std::vector<std::vector<std::string>> runs = {
      {ADVERSARIAL_TRAIN, "--iterations", "60"},
      {ADVERSARIAL_TRAIN, "--iterations", "60", "--threads", "4"},
      {ADVERSARIAL_TRAIN, "--iterations", "80", "--shape-period", "20"},
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::vector<std::string>& argv = runs[i];
    INFO(i);
    // One thread: the step found and planned on the calling thread, so what the pool does is the
    // same in every run.
    const Env sync = i != 1 ? Env{{"MEMTOOL_POOL_SYNC_PLANNING", "1"}} : Env{};
    const Pair p = run_both("adversarial" + std::to_string(i), argv, {}, sync);
    CHECK(p.pool.out == p.plain.out);  // status 0 checked by run_both: no CORRUPTED buffer
    CHECK_THAT(p.pool.err, !Catch::Contains("CORRUPTED"));
    // Four threads interleave their calls differently in every run, so whether an iteration is
    // found there is up to the scheduler; one thread repeats: plans, and drops each plan when
    // the shape changes (a plan that failed at once rules its period out for a while, one that
    // served whole iterations is a re-plan). A shape smaller than the one before is the step
    // after its confirming periods (the step finder judges it over its own regime, issue 35).
    if (i != 1) {
      CHECK(u(p.summary, "plans_made") > 0);
      CHECK(u(p.summary, "replans") + u(p.summary, "periods_rejected") > 0);
    }
    CHECK(u(p.pool_stats, "bytes_in_use") == 0);
    if (i == 2) CHECK(u(p.summary, "allocs_from_pool") > 0);
    WARN("adversarial run " << i << ": plans " << u(p.summary, "plans_made") << ", re-plans " << u(p.summary, "replans")
                            << ", periods rejected " << u(p.summary, "periods_rejected") << ", from the pool "
                            << u(p.summary, "allocs_from_pool"));
  }
}

// Swap mode, both mechanisms, against the adversarial app: shapes that drift every 5 iterations,
// late frees, buffers traded between streams, 1 and 4 threads, every buffer pattern-checked,
// under a budget far below what it keeps live, so buffers are out while other streams and
// threads reach them (explicit mode: each one's address then maps the host copy).
TEST_CASE("swap mode: adversarial_train under a tiny budget never sees a wrong byte", "[integration][swap]") {
  for (const char* mode : {"explicit", "uvm"})
    for (const char* threads : {"1", "4"}) {
      INFO("mode " << mode << ", threads " << threads);
      const std::vector<std::string> argv{ADVERSARIAL_TRAIN, "--iterations", "30", "--threads", threads};
      const std::string dir = fresh_dir(std::string("swap_adversarial_") + mode + threads);
      const Outcome plain = run(argv, fakecuda(dir + "/plain"), dir + "/plain");
      Env env = fakecuda(dir + "/swap");
      env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
      env["MEMTOOL_STRATEGY"] = "swap";
      env["MEMTOOL_SWAP_MODE"] = mode;
      env["MEMTOOL_BUDGET"] = "64K";
      env["MEMTOOL_SWAP_MIN_BYTES"] = "0";
      env["MEMTOOL_SUMMARY"] = dir + "/swap/summary.json";
      const Outcome swapped = run(argv, env, dir + "/swap");
      INFO(swapped.err);
      REQUIRE(plain.status == 0);
      REQUIRE(swapped.status == 0);
      CHECK(swapped.out == plain.out);
      const nlohmann::json summary = read_json(dir + "/swap/summary.json");
      CHECK(summary.at("strategy") == "swap");
      CHECK(summary.at("swap_mode") == mode);
      CHECK(u(summary, "bytes_swapped_out") > 0);
      CHECK(u(summary, "bytes_swapped_in") > 0);
      CHECK(u(read_json(dir + "/swap/fakecuda.json"), "bytes_in_use") == 0);
    }
}
#endif

// A buffer reached only through a pointer in device memory is swapped out (memtool cannot see
// its uses): kernels still read and write the true bytes through it — the host copy is mapped at
// its address (explicit mode), or the driver migrates it (uvm) — and what they wrote comes back.
TEST_CASE("swap mode: a buffer reached through a pointer table reads and writes true bytes while out",
          "[integration][swap]") {
  for (const char* mode : {"explicit", "uvm"}) {
    INFO("mode " << mode);
    const std::string dir = fresh_dir(std::string("swap_stray_") + mode);
    Env env = fakecuda(dir);
    env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
    env["MEMTOOL_STRATEGY"] = "swap";
    env["MEMTOOL_SWAP_MODE"] = mode;
    env["MEMTOOL_BUDGET"] = "13M";
    env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
    const Outcome o = run({STRAY_CLIENT, APP_MODULE_IMAGE}, env, dir);
    INFO(o.out << o.err);
    CHECK(o.status == 0);
    CHECK_THAT(o.out, Catch::Contains("indirect read ok") && Catch::Contains("indirect write ok"));
    const nlohmann::json summary = read_json(dir + "/summary.json");
    CHECK(summary.at("swap_mode") == mode);
    CHECK(u(summary, "bytes_swapped_out") >= (std::uint64_t{4} << 20));
    CHECK(u(read_json(dir + "/fakecuda.json"), "bytes_in_use") == 0);
  }
}

TEST_CASE("pool mode: 8 threads allocating, launching and freeing at once", "[integration][pool]") {
  const std::string dir = fresh_dir("stress");
  const Outcome r = run({STRESS_CLIENT, APP_MODULE_IMAGE, "400"}, pooled(dir), dir);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "stress ok\n");
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(u(summary, "allocs_passed_through") + u(summary, "allocs_from_pool") == 8 * 400 * 2);
}

TEST_CASE("pool mode: out of device memory reaches the app as CUDA_ERROR_OUT_OF_MEMORY", "[integration][pool]") {
  const std::string dir = fresh_dir("oom");
  const std::vector<std::string> argv{MLP_TRAIN, "--iterations", "20"};
  // Too small for the app at all: the fallback (real) allocation fails inside pool mode.
  Env tiny{{"FAKECUDA_MEMORY_BYTES", "80K"}};
  const Outcome plain = run(argv, fakecuda(dir + "/plain", tiny), dir + "/plain");
  const Outcome pool = run(argv, pooled(dir + "/pool", tiny), dir + "/pool");
  CHECK(plain.status == 1);
  CHECK(pool.status == 1);  // the app's own error path, not a crash
  CHECK_THAT(pool.err, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(pool.out == plain.out);
  // Nothing of ours is left beyond what the app itself still held when it gave up.
  CHECK(u(read_json(dir + "/pool/fakecuda.json"), "bytes_in_use") <=
        u(read_json(dir + "/plain/fakecuda.json"), "bytes_in_use"));

  // Just enough for the plain run's peak: the pool (persistent + pool ≤ that peak) fits, and
  // the run is identical, with nothing left allocated.
  const Env tight{{"FAKECUDA_MEMORY_BYTES", "96K"}};
  const Pair p = run_both("oom_tight", argv, tight, tight);
  CHECK(p.pool.out == p.plain.out);
  CHECK(u(p.summary, "iterations_planned") > 0);
  CHECK(u(p.pool_stats, "bytes_in_use") == 0);
}

TEST_CASE("pool mode: the engine's device accounting agrees with fakecuda's", "[integration][pool]") {
  // Pooled buffers are not counted twice: the engine's peak with the pool (pools + requested
  // bytes passed through) never exceeds what the driver charged (512-byte granules).
  // (cuMemGetInfo's adjustment, Runtime::program_free, is unit-tested in tests/unit/engine/test_engine_serving.cpp.)
  const Pair p = run_both("meminfo", {MLP_TRAIN, "--iterations", "20"});
  CHECK(u(p.summary, "peak_device_bytes_with_pool") >= u(p.summary, "pool_bytes"));
  CHECK(u(p.summary, "peak_device_bytes_with_pool") <= u(p.pool_stats, "peak_bytes_in_use"));
}

TEST_CASE("memtool run --strategy pool: preloads, passes the exit code through, prints the summary",
          "[integration][pool][cli]") {
  const std::string dir = fresh_dir("run");
  const Outcome ran = run({MEMTOOL_TOOL, "run", "--strategy", "pool", "--summary", dir + "/s.json", "--trace",
                           dir + "/app.trace", "--", MLP_TRAIN, "--iterations", "30"},
                          fakecuda(dir), dir);
  INFO(ran.err);
  REQUIRE(ran.status == 0);
  const Outcome plain = run({MLP_TRAIN, "--iterations", "30"}, fakecuda(dir + "/plain"), dir + "/plain");
  CHECK(ran.out == plain.out);
  CHECK_THAT(ran.err, Catch::Contains("memtool: strategy pool: ") && Catch::Contains("iterations from a plan") &&
                          Catch::Contains("device peak"));
  const nlohmann::json summary = read_json(dir + "/s.json");
  CHECK(u(summary, "iterations_planned") > 0);
  // Record-mode tracing works in pool mode: the trace holds what the program asked for, every
  // call (6 persistent buffers, 19 per iteration), pooled or not.
  memtool::trace::TraceModel model;
  const auto read = memtool::trace::read_trace(dir + "/app.trace", model);
  CHECK(read.clean_end);
  CHECK(model.stats().allocs == 6 + 19 * 30);
  CHECK(model.stats().frees == 6 + 19 * 30);
  CHECK(model.stats().unknown_frees == 0);

  // The command's failure is memtool's exit status; record and off run too.
  const Outcome failed = run({MEMTOOL_TOOL, "run", "--strategy", "pool", "--", MLP_TRAIN, "--batch", "0"},
                             fakecuda(dir + "/failed"), dir + "/failed");
  CHECK(failed.status == 2);
  const Outcome off = run({MEMTOOL_TOOL, "run", "--strategy", "off", "--", MLP_TRAIN, "--iterations", "3"},
                          fakecuda(dir + "/off"), dir + "/off");
  CHECK(off.status == 0);
  CHECK(off.out.substr(0, 20) == plain.out.substr(0, 20));
  const Outcome bad =
      run({MEMTOOL_TOOL, "run", "--strategy", "spill", "--", MLP_TRAIN}, fakecuda(dir + "/bad"), dir + "/bad");
  CHECK(bad.status != 0);
  // Swap: the budget reaches the library, the swap line is printed (the default mechanism: UVM),
  // the program's output holds.
  Env small = fakecuda(dir + "/swap");
  small["MEMTOOL_SWAP_MIN_BYTES"] = "0";
  const Outcome swapped =
      run({MEMTOOL_TOOL, "run", "--strategy", "swap", "--budget", "32K", "--", MLP_TRAIN, "--iterations", "30"}, small,
          dir + "/swap");
  INFO(swapped.err);
  CHECK(swapped.status == 0);
  CHECK(swapped.out == plain.out);
  CHECK_THAT(swapped.err, Catch::Contains("memtool: moved (uvm swap, ") && Catch::Contains("(budget 32.0 KiB)"));
}

// Invariant 3: a pooled buffer is described as itself, and is never shared as the whole pool:
// its export succeeds as without memtool and opens, in another process under memtool, to the
// buffer's own bytes (memtool's handle: the pool's allocation and the buffer's offset in it).
TEST_CASE("pool mode: pointer queries describe the buffer, and an IPC export reaches the buffer itself",
          "[integration][pool]") {
  const Pair p = run_both("pointers", {POINTER_CLIENT, "12"}, {}, {{"MEMTOOL_POOL_SYNC_PLANNING", "1"}});
  INFO(p.pool.out);
  INFO(p.pool.err);
  CHECK(p.plain.out.find("export=refused") == std::string::npos);  // the driver alone exports every one
  CHECK(p.plain.out.find("FAIL") == std::string::npos);
  CHECK(p.pool.out.find("FAIL") == std::string::npos);
  CHECK(u(p.summary, "allocs_from_pool") > 0);
  CHECK(u(p.summary, "exports_refused") == 0);
  CHECK(p.pool.out.find("export=refused") == std::string::npos);
  CHECK(p.pool.out.find("iter 11 ok export=ok") != std::string::npos);
  // The first planned iteration exported a pooled buffer in place; the plan keeps that
  // allocation out of the pool from then on (said once).
  const auto said = p.pool.err.find("a pooled buffer");
  CHECK(said != std::string::npos);
  CHECK(p.pool.err.find("a pooled buffer", said + 1) == std::string::npos);
}

// The same questions of swapped buffers (explicit mode: VMM ranges rounded to 2 MiB, remapped at
// each move): each is described as itself, with an id that survives its moves; an export pins
// the buffer and shares its physical memory, so it succeeds and opens to the buffer's bytes.
TEST_CASE("swap mode: pointer queries describe the buffer, and an IPC export pins and shares it",
          "[integration][swap]") {
  const std::string dir = fresh_dir("swap_pointers");
  Env env = fakecuda(dir);
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_STRATEGY"] = "swap";
  env["MEMTOOL_SWAP_MODE"] = "explicit";
  env["MEMTOOL_BUDGET"] = "5M";
  env["MEMTOOL_SWAP_MIN_BYTES"] = "0";
  env["MEMTOOL_POOL_SYNC_PLANNING"] = "1";
  env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
  const Outcome o = run({POINTER_CLIENT, "12"}, env, dir);
  INFO(o.out);
  INFO(o.err);
  CHECK(o.status == 0);
  CHECK(o.out.find("FAIL") == std::string::npos);
  const nlohmann::json summary = read_json(dir + "/summary.json");
  CHECK(u(summary, "bytes_swapped_out") > 0);
  CHECK(u(summary, "exports_refused") == 0);
  CHECK(o.out.find("export=refused") == std::string::npos);
  CHECK(o.out.find("iter 11 ok export=ok") != std::string::npos);
}

#endif  // MEMTOOL_HAVE_FAKECUDA
