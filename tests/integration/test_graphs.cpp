// Stream capture and CUDA graphs under every strategy, end to end on fakecuda (issue 32): the
// graph apps (graphed_train whole and split, in global, thread-local and relaxed capture, its
// getproc twin; xla_train) print exactly what they print without memtool, no capture is
// invalidated and no call fails; record and pool find the step with its graph launches, pool
// serves the eager allocations between replays; swap (UVM and explicit) at 60% of the plain
// peak moves bytes between replays; and capture_client's adversarial programs (a thread
// hammering the allocator beside global captures, a graph destroyed with its launch pending, a
// pending replay's buffer as the best eviction candidate) keep every byte.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA && defined(GRAPHED_TRAIN)

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;

constexpr int kIterations = 24;

struct App {
  std::string name;
  std::vector<std::string> argv;
  std::uint64_t graph_launches_per_step = 1;
  bool captures = true;  // xla_train builds its graph node by node
};

std::vector<std::string> graphed(const char* program, const char* graphs, const char* mode, int hidden = 512) {
  return {program,    "--iterations",         std::to_string(kIterations),
          "--hidden", std::to_string(hidden), "--graphs",
          graphs,     "--capture-mode",       mode};
}

std::vector<App> graph_apps() {
  return {
      {"whole_global", graphed(GRAPHED_TRAIN, "whole", "global"), 1, true},
      {"whole_thread_local", graphed(GRAPHED_TRAIN, "whole", "thread-local"), 1, true},
      {"whole_relaxed", graphed(GRAPHED_TRAIN, "whole", "relaxed"), 1, true},
      {"split_global", graphed(GRAPHED_TRAIN, "split", "global"), 2, true},
      {"split_thread_local", graphed(GRAPHED_TRAIN, "split", "thread-local"), 2, true},
      {"split_relaxed", graphed(GRAPHED_TRAIN, "split", "relaxed"), 2, true},
      {"getproc_whole", graphed(GRAPHED_TRAIN_GETPROC, "whole", "global"), 1, true},
      {"xla", {XLA_TRAIN, "--iterations", std::to_string(kIterations), "--hidden", "512"}, 1, false},
  };
}

// NOLINTNEXTLINE(bugprone-exception-escape): clang-tidy 14 flags the members it makes through nlohmann::json
struct Run {
  Outcome outcome;
  nlohmann::json stats;    // FAKECUDA_STATS
  nlohmann::json summary;  // MEMTOOL_SUMMARY (empty for a plain run)
};

Run run_app(const std::string& dir, const std::vector<std::string>& argv, Env env, bool with_memtool) {
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  env["FAKECUDA_STATS"] = dir + "/fakecuda.json";
  if (with_memtool) {
    env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
    env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
    env["MEMTOOL_LOG"] = "info";
  }
  Run r;
  r.outcome = run(argv, env, dir);
  INFO(r.outcome.err);
  REQUIRE(r.outcome.status == 0);
  r.stats = read_json(dir + "/fakecuda.json");
  if (with_memtool) r.summary = read_json(dir + "/summary.json");
  return r;
}

// What must hold whatever the strategy: the plain run's lines, every capture the plain run
// made and none invalidated, every replay launched, and memtool saw them as such.
void check_transparent(const App& app, const Run& plain, const Run& with) {
  INFO(app.name << "\n" << with.outcome.err);
  CHECK(with.outcome.out == plain.outcome.out);
  CHECK(std::count(with.outcome.out.begin(), with.outcome.out.end(), '\n') == kIterations);
  CHECK(u(with.stats, "graph_captures_invalidated") == 0);
  CHECK(u(with.stats, "graph_captures") == u(plain.stats, "graph_captures"));
  CHECK(u(with.stats, "graph_launches") == u(plain.stats, "graph_launches"));
  CHECK(u(with.stats, "graph_mem_allocs") == u(plain.stats, "graph_mem_allocs"));
  const nlohmann::json& s = with.summary;
  CHECK(u(s, "graph_launches") == u(plain.stats, "graph_launches"));  // each one work item
  CHECK(u(s, "opaque_graph_launches") == 0);                          // every node read
  if (app.captures) {
    CHECK(u(s, "captures") == u(plain.stats, "graph_captures"));
    CHECK(u(s, "captured_work") > 0);
    CHECK(u(s, "graph_memory_allocations") > 0);  // the captured cuMemAllocAsync: the graph's
  } else {
    CHECK(u(s, "captures") == 0);
  }
}

// The step found after the warm-up: graph launches plus the eager work around them.
void check_step(const App& app, const nlohmann::json& s) {
  INFO(app.name << " " << s.dump());
  CHECK(u(s, "period_events") > 0);
  CHECK(u(s, "period_graph_launches") == app.graph_launches_per_step);
}

std::string dir_of(const std::string& part, const std::string& name) {
  return memtool::testing::fresh_work_dir("graphs", part + "_" + name);
}

std::uint64_t plain_peak(const Run& plain) { return u(plain.stats, "peak_bytes_in_use"); }

}  // namespace

TEST_CASE("graphs: record mode sees captures, graph memory and the step with its replays", "[graphs_record]") {
  for (const App& app : graph_apps()) {
    const std::string dir = dir_of("record", app.name);
    const Run plain = run_app(dir + "/plain", app.argv, {}, false);
    const Run recorded = run_app(dir + "/record", app.argv, {{"MEMTOOL_STRATEGY", "record"}}, true);
    check_transparent(app, plain, recorded);
    check_step(app, recorded.summary);
  }
}

TEST_CASE("graphs: the trace says what was captured, the graph memory and the launches per step", "[graphs_record]") {
  const App app{"split_global", graphed(GRAPHED_TRAIN, "split", "global"), 2, true};
  const std::string dir = dir_of("record_trace", app.name);
  const Run recorded =
      run_app(dir, app.argv, {{"MEMTOOL_STRATEGY", "record"}, {"MEMTOOL_TRACE", dir + "/run.trace"}}, true);
  const Outcome report = run({MEMTOOL_TOOL, "report", "--format", "json", dir + "/run.trace"}, {}, dir + "/report");
  INFO(report.err);
  REQUIRE(report.status == 0);
  const nlohmann::json r = nlohmann::json::parse(report.out);
  CHECK(u(r, "captures") == u(recorded.stats, "graph_captures"));
  CHECK(u(r, "graph_launches") == u(recorded.stats, "graph_launches"));
  CHECK(u(r, "opaque_graph_launches") == 0);
  CHECK(u(r, "iteration_period_graph_launches") == app.graph_launches_per_step);
  CHECK(u(r, "captured_work") == u(recorded.summary, "captured_work"));
  CHECK(u(r, "graph_memory_allocations") == u(recorded.summary, "graph_memory_allocations"));
  CHECK(u(r, "graph_memory_bytes") > 0);
  CHECK(u(r, "graphs_with_memory") == 2);  // the forward graph's and the backward graph's
  const Outcome text = run({MEMTOOL_TOOL, "report", dir + "/run.trace"}, {}, dir + "/report_text");
  CHECK_THAT(text.out, Catch::Contains("2 per iteration") && Catch::Contains("graph memory"));
}

TEST_CASE("graphs: pool mode serves the eager allocations between replays", "[graphs_pool]") {
  for (const App& app : graph_apps()) {
    const std::string dir = dir_of("pool", app.name);
    const Run plain = run_app(dir + "/plain", app.argv, {}, false);
    const Run pooled = run_app(dir + "/pool", app.argv, {{"MEMTOOL_STRATEGY", "pool"}}, true);
    check_transparent(app, plain, pooled);
    const nlohmann::json& s = pooled.summary;
    check_step(app, s);
    {
      // The pool never adds to the device's peak: the warm-up's pool, idle when the driver
      // takes the replays' graph memory, is given back first (it held 1.34x the plain peak).
      INFO(app.name << ": fakecuda peak " << u(pooled.stats, "peak_bytes_in_use") << " B with the pool, "
                    << plain_peak(plain) << " B plain");
      CHECK(u(pooled.stats, "peak_bytes_in_use") <= plain_peak(plain));
    }
    {
      INFO(app.name << " " << s.dump());
      // The eager warm-up's step is found and planned on time (the finder runs on the calling
      // thread until it accepts a step), so its plan serves whole warm-up steps; when the replays
      // begin it stops matching: the program changed, and it is re-planned once, for the
      // replays' step (the warm-up is planned no more after that).
      CHECK(u(s, "replans") <= 1);
      if (!app.captures) {
        // xla_train allocates nothing per step (one arena): there is nothing to serve.
        CHECK(u(s, "period_allocations") == 0);
        CHECK(u(s, "allocs_from_pool") == 0);
        continue;
      }
      // Planned soon after the warm-up (3 eager steps, then the capture), and every allocation
      // of every planned step served from the plan.
      CHECK(u(s, "period_allocations") > 0);
      CHECK(u(s, "iterations_planned") >= kIterations / 2);
      CHECK(u(s, "allocs_from_pool") >= u(s, "iterations_planned") * u(s, "period_allocations"));
    }
    WARN(app.name << " pool: step " << u(s, "period_events") << " events, " << u(s, "period_graph_launches")
                  << " graph launches, " << u(s, "period_allocations") << " allocations; " << u(s, "iterations_planned")
                  << " of " << kIterations << " steps planned, " << u(s, "allocs_from_pool")
                  << " allocations from the pool ("
                  << u(s, "allocs_from_pool") * 100 /
                         std::max<std::uint64_t>(1, u(s, "iterations_planned") * u(s, "period_allocations"))
                  << "% of the planned steps')");
  }
}

namespace {

// Swap at 60% of the plain peak, the device no bigger than `capacity_percent` of it; the same
// run with twice the replays must move more: the swapper moves bytes between replays.
void check_swap(const App& app, const std::string& mode, int capacity_percent, const std::string& min_bytes) {
  const std::string dir = dir_of("swap_" + mode, app.name);
  const Run plain = run_app(dir + "/plain", app.argv, {}, false);
  const std::uint64_t peak = plain_peak(plain);
  const std::uint64_t budget = peak * 60 / 100;
  const std::uint64_t capacity = peak * static_cast<std::uint64_t>(capacity_percent) / 100;
  const Env env{{"MEMTOOL_STRATEGY", "swap"},
                {"MEMTOOL_SWAP_MODE", mode},
                {"MEMTOOL_BUDGET", std::to_string(budget)},
                {"MEMTOOL_SWAP_MIN_BYTES", min_bytes},
                {"FAKECUDA_MEMORY_BYTES", std::to_string(capacity)}};
  const Run swapped = run_app(dir + "/swap", app.argv, env, true);
  check_transparent(app, plain, swapped);
  const nlohmann::json& s = swapped.summary;
  std::vector<std::string> longer = app.argv;
  const auto it = std::find(longer.begin(), longer.end(), "--iterations");
  REQUIRE(it != longer.end());
  *(it + 1) = std::to_string(2 * kIterations);
  const Run longer_run = run_app(dir + "/swap_longer", longer, env, true);
  {
    INFO(app.name << " " << s.dump());
    CHECK(s.at("swap_mode") == mode);
    CHECK(u(s, "bytes_swapped_out") > 0);
    CHECK(u(s, "bytes_swapped_in") > 0);
    CHECK(u(swapped.stats, "peak_bytes_in_use") <= capacity);
    // More replays, more bytes moved: the moves are the replays', not the warm-up's alone.
    CHECK(u(longer_run.stats, "graph_captures_invalidated") == 0);
    CHECK(u(longer_run.summary, "bytes_swapped_in") > u(s, "bytes_swapped_in"));
  }
  WARN(app.name << " swap (" << mode << ") at 60%: plain peak " << peak << " B, budget " << budget << " B, device "
                << capacity << " B; fakecuda peak " << u(swapped.stats, "peak_bytes_in_use") << " B, memtool's "
                << u(s, "peak_device_bytes") << " B (graph memory " << u(s, "graph_memory_bytes") << " B); "
                << u(s, "bytes_swapped_out") << " B out, " << u(s, "bytes_swapped_in") << " B in over " << kIterations
                << " steps, " << u(longer_run.summary, "bytes_swapped_in") << " B in over " << 2 * kIterations
                << "; step " << u(s, "period_events") << " events with " << u(s, "period_graph_launches")
                << " graph launches");
}

std::vector<App> swap_apps(int hidden) {
  return {
      {"whole_global", graphed(GRAPHED_TRAIN, "whole", "global", hidden), 1, true},
      {"split_thread_local", graphed(GRAPHED_TRAIN, "split", "thread-local", hidden), 2, true},
      {"xla", {XLA_TRAIN, "--iterations", std::to_string(kIterations), "--hidden", std::to_string(hidden)}, 1, false},
  };
}

}  // namespace

TEST_CASE("graphs: UVM swapping at 60% of the plain peak, on a device that size", "[graphs_swap_uvm]") {
  // Managed memory migrates on demand, so the device can be exactly the budget.
  for (const App& app : swap_apps(512)) check_swap(app, "uvm", 60, "1");
}

TEST_CASE("graphs: explicit swapping at 60% of the plain peak", "[graphs_swap_explicit]") {
  // Explicit mode moves VMM ranges of 2 MiB granularity: the apps' big buffers (2 MiB at hidden
  // 1024) are swap candidates, the rest is cached. What a replay needs cannot all be on a device
  // of 60% (the graph's own memory, which nothing may move, and the weights it reads); what
  // does not fit is read from the host where it is mapped, so the device is the plain peak.
  for (const App& app : swap_apps(1024)) check_swap(app, "explicit", 100, "1M");
}

namespace {

// `dir`/`name`, built in place (no temporaries).
std::string under(const std::string& dir, std::string_view name) {
  std::string path = dir;
  path += '/';
  path += name;
  return path;
}

Run run_client(const std::string& dir, const std::string& mode, Env env, bool with_memtool) {
  return run_app(dir, {CAPTURE_CLIENT, APP_MODULE_IMAGE, mode}, std::move(env), with_memtool);
}

}  // namespace

TEST_CASE("graphs: a thread hammering the allocator beside global captures never invalidates one",
          "[graphs_adversarial]") {
  const std::vector<std::pair<std::string, Env>> strategies = {
      {"record", {{"MEMTOOL_STRATEGY", "record"}}},
      {"pool", {{"MEMTOOL_STRATEGY", "pool"}}},
      {"swap_uvm",
       {{"MEMTOOL_STRATEGY", "swap"},
        {"MEMTOOL_SWAP_MODE", "uvm"},
        {"MEMTOOL_BUDGET", "96K"},
        {"MEMTOOL_SWAP_MIN_BYTES", "1"}}},
      {"swap_explicit", {{"MEMTOOL_STRATEGY", "swap"}, {"MEMTOOL_BUDGET", "96K"}, {"MEMTOOL_SWAP_MIN_BYTES", "1"}}},
  };
  const std::string dir = dir_of("adversarial", "hammer");
  const Run plain = run_client(dir + "/plain", "hammer", {}, false);
  CHECK(u(plain.stats, "graph_captures_invalidated") == 0);
  for (const auto& [name, env] : strategies) {
    const Run r = run_client(under(dir, name), "hammer", env, true);
    INFO(name << "\n" << r.outcome.err);
    CHECK_THAT(r.outcome.out, Catch::Contains("captures replayed ok") && Catch::Contains("hammer rounds ok"));
    CHECK(u(r.stats, "graph_captures") == u(plain.stats, "graph_captures"));
    CHECK(u(r.stats, "graph_captures_invalidated") == 0);
    CHECK(u(r.summary, "captures") == u(plain.stats, "graph_captures"));
    if (name == "pool") CHECK(u(r.summary, "allocs_from_pool") > 0);
    if (name.rfind("swap", 0) == 0) CHECK(u(r.summary, "bytes_swapped_out") > 0);
  }
}

TEST_CASE("graphs: an executable graph destroyed with its launch pending", "[graphs_adversarial]") {
  const std::string dir = dir_of("adversarial", "destroy_pending");
  for (const auto& [name, env] : std::vector<std::pair<std::string, Env>>{
           {"pool", {{"MEMTOOL_STRATEGY", "pool"}}},
           {"swap", {{"MEMTOOL_STRATEGY", "swap"}, {"MEMTOOL_BUDGET", "2M"}, {"MEMTOOL_SWAP_MIN_BYTES", "1"}}}}) {
    const Run r = run_client(under(dir, name), "destroy-pending", env, true);
    INFO(name << "\n" << r.outcome.err);
    CHECK_THAT(r.outcome.out, Catch::Contains("replays ok"));
    CHECK(u(r.stats, "graph_captures_invalidated") == 0);
    CHECK(u(r.summary, "graph_launches") == 12);
  }
}

TEST_CASE("graphs: a pending replay's buffer is the swapper's best eviction candidate", "[graphs_adversarial]") {
  const std::string dir = dir_of("adversarial", "evict_pending");
  for (const std::string mode : {"explicit", "uvm"}) {
    const Run r = run_client(under(dir, mode), "evict-pending",
                             {{"MEMTOOL_STRATEGY", "swap"},
                              {"MEMTOOL_SWAP_MODE", mode},
                              {"MEMTOOL_BUDGET", "12M"},
                              {"MEMTOOL_SWAP_MIN_BYTES", "1M"},
                              {"FAKECUDA_LINK_GBPS", "2"}},
                             true);
    INFO(mode << "\n" << r.outcome.err);
    CHECK_THAT(r.outcome.out, Catch::Contains("replays ok"));
    CHECK(u(r.summary, "bytes_swapped_out") > 0);
    CHECK(u(r.summary, "graph_launches") == 10);
  }
}

#endif
