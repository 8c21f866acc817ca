// The CUPTI tracer end to end on fakecuda, with fakecupti as libcupti: the test apps under
// libmemtool.so print what they print without it, and every launch, copy and memset in their
// trace has exactly one GPU time, joined to it, in the trace's clock and in stream order —
// with buffers coming back in any order, with kernels that carry their runtime call's
// correlation, in pool mode. Also: buffers at their cap, another tool holding CUPTI (from the
// start or taking it later), CUPTI missing or refusing, MEMTOOL_CUPTI=off, CUDA_HOME, fork,
// and `memtool report`'s GPU figures.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "memtool/trace/model.hpp"
#include "memtool/trace/reader.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::run;
using memtool::testing::slurp;
using memtool::trace::EventKind;
using memtool::trace::GpuWorkKind;
using memtool::trace::TraceModel;

std::string work_dir(const std::string& name) {
  const std::string dir = std::string(INTEGRATION_WORK_DIR) + "/cupti/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

using Env = std::map<std::string, std::string>;

Env plain_env() { return {{"LD_LIBRARY_PATH", FAKECUDA_DIR}}; }

// Recording with fakecupti; its counts go to <dir>/fakecupti.json.
Env traced(const std::string& dir, Env extra = {}) {
  Env env = plain_env();
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_TRACE"] = dir + "/app.trace";
  env["MEMTOOL_CUPTI_LIBRARY"] = FAKECUPTI_LIBRARY;
  env["FAKECUPTI_STATS"] = dir + "/fakecupti.json";
  env["MEMTOOL_LOG"] = "info";
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

struct Loaded {
  TraceModel model;
  memtool::trace::TraceReadResult read;
  std::vector<std::uint64_t> events_before_gpu;  // per GPU time: events read before it
};

class PositionVisitor : public TraceModel {
 public:
  std::vector<std::uint64_t>* positions = nullptr;
  void on_gpu_time(const memtool::trace::GpuTimeRecord& record) override {
    positions->push_back(event_count());
    TraceModel::on_gpu_time(record);
  }
};

std::unique_ptr<Loaded> load(const std::string& path) {
  auto loaded = std::make_unique<Loaded>();
  PositionVisitor visitor;
  visitor.positions = &loaded->events_before_gpu;
  loaded->read = memtool::trace::read_trace(path, visitor);
  loaded->model = std::move(visitor);
  return loaded;
}

nlohmann::json fakecupti_stats(const std::string& dir) {
  const std::string text = slurp(dir + "/fakecupti.json");
  REQUIRE_FALSE(text.empty());
  return nlohmann::json::parse(text);
}

std::size_t gpu_work_events(const TraceModel& m) {
  std::size_t n = 0;
  for (const auto& e : m.events()) {
    n += e.kind == EventKind::launch || e.kind == EventKind::copy || e.kind == EventKind::memset ? 1 : 0;
  }
  return n;
}

std::size_t lines_containing(const std::string& text, const std::string& words) {
  std::size_t n = 0;
  std::size_t at = 0;
  while ((at = text.find(words, at)) != std::string::npos) {
    ++n;
    at += words.size();
  }
  return n;
}

// Every launch, copy and memset has exactly one GPU time naming it, of its kind, starting after
// the call was recorded; on each stream the GPU times follow one another.
void check_all_joined(const TraceModel& m) {
  const auto times = m.gpu_times();
  CHECK(m.stats().gpu_unjoined == 0);
  CHECK(m.stats().gpu_mismatched == 0);
  CHECK(times.size() == gpu_work_events(m));
  std::vector<int> per_event(m.event_count(), 0);
  for (const auto& g : times) {
    REQUIRE(g.joined());
    ++per_event[g.event];
    const auto& e = m.event(g.event);
    CHECK(g.kind == (e.kind == EventKind::launch ? GpuWorkKind::kernel
                     : e.kind == EventKind::copy ? GpuWorkKind::copy
                                                 : GpuWorkKind::memset));
    CHECK(g.start_ns + 1000000 >= e.time_ns);  // the GPU ran it after the call (1 ms for the clocks)
  }
  std::size_t twice = 0;
  for (std::size_t i = 0; i < per_event.size(); ++i) twice += per_event[i] > 1 ? 1 : 0;
  CHECK(twice == 0);
  std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> streams;
  for (const auto& g : times) streams[g.stream].emplace_back(g.start_ns, g.end_ns);
  std::size_t overlaps = 0;
  for (auto& [stream, intervals] : streams) {
    std::sort(intervals.begin(), intervals.end());
    for (std::size_t i = 1; i < intervals.size(); ++i) overlaps += intervals[i].first + 20000 < intervals[i - 1].second;
  }
  CHECK(overlaps == 0);
}

struct AppCase {
  const char* name;
  std::vector<std::string> argv;
};

}  // namespace

TEST_CASE("CUPTI: every launch, copy and memset of the test apps is timed and joined", "[integration][cupti]") {
  const std::vector<AppCase> apps{{"mlp", {MLP_TRAIN, "--iterations", "4"}},
                                  {"conv", {CONV_TRAIN, "--iterations", "4"}},
                                  {"mlp_getproc", {MLP_TRAIN_GETPROC, "--iterations", "3"}},
                                  {"conv_getproc_ptsz", {CONV_TRAIN_GETPROC, "--iterations", "3", "--per-thread"}}};
  for (const AppCase& app : apps) {
    INFO(app.name);
    const std::string dir = work_dir(app.name);
    const Outcome plain = run(app.argv, plain_env(), dir + "/plain");
    const Outcome traced_run = run(app.argv, traced(dir), dir + "/traced");
    INFO(traced_run.err);
    REQUIRE(plain.status == 0);
    REQUIRE(traced_run.status == 0);
    CHECK(traced_run.out == plain.out);
    const auto t = load(dir + "/app.trace");
    CHECK(t->read.clean_end);
    check_all_joined(t->model);
    CHECK(t->model.stats().launches > 0);
    const auto stats = fakecupti_stats(dir);
    CHECK(stats["pushes"] == gpu_work_events(t->model));  // one id per recorded call
    CHECK(stats["pops"] == stats["pushes"]);
    CHECK(stats["depth_at_exit"] == 0);
    CHECK(stats["serial_kernel_kind"] == false);  // never the serialising KERNEL kind
    CHECK(stats["dropped"] == 0);
    CHECK(lines_containing(traced_run.err, "CUPTI 130001") == 1);
  }
}

TEST_CASE("CUPTI: buffers in any order, and kernels that carry their runtime call's id", "[integration][cupti]") {
  for (const auto& [knob, name] : std::vector<std::pair<std::string, std::string>>{
           {"FAKECUPTI_CORRELATION_LAST", "late_correlation"}, {"FAKECUPTI_RUNTIME_LAUNCH", "runtime_launch"}}) {
    INFO(name);
    const std::string dir = work_dir(name);
    const std::vector<std::string> argv{CONV_TRAIN, "--iterations", "3"};
    const Outcome plain = run(argv, plain_env(), dir + "/plain");
    const Outcome traced_run = run(argv, traced(dir, {{knob, "1"}}), dir + "/traced");
    INFO(traced_run.err);
    REQUIRE(traced_run.status == 0);
    CHECK(traced_run.out == plain.out);
    const auto t = load(dir + "/app.trace");
    check_all_joined(t->model);
    if (name == "runtime_launch") CHECK(fakecupti_stats(dir)["runtime_records"] > 0);
  }
}

TEST_CASE("CUPTI: iteration marks flush GPU times while the program runs", "[integration][cupti]") {
  const std::string dir = work_dir("marks");
  const Outcome r = run({MLP_TRAIN, "--iterations", "8"}, traced(dir, {{"MEMTOOL_ITERATION_KERNEL", "^softmax_xent$"}}),
                        dir + "/traced");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto t = load(dir + "/app.trace");
  check_all_joined(t->model);
  REQUIRE_FALSE(t->events_before_gpu.empty());
  // Some GPU times were written before the last iteration's events: flushed at a boundary.
  const std::uint64_t last_mark = t->model.marks().back();
  CHECK(t->events_before_gpu.front() < last_mark);
}

TEST_CASE("CUPTI: in pool mode too", "[integration][cupti][pool]") {
  const std::string dir = work_dir("pool");
  const std::vector<std::string> argv{CONV_TRAIN, "--iterations", "6"};
  const Outcome plain = run(argv, plain_env(), dir + "/plain");
  const Outcome r =
      run(argv, traced(dir, {{"MEMTOOL_STRATEGY", "pool"}, {"MEMTOOL_POOL_SYNC_PLANNING", "1"}}), dir + "/traced");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == plain.out);
  check_all_joined(load(dir + "/app.trace")->model);
}

TEST_CASE("CUPTI: buffers at their cap drop records, said once; the program is untouched", "[integration][cupti]") {
  const std::string dir = work_dir("overflow");
  const std::vector<std::string> argv{MLP_TRAIN, "--iterations", "4"};
  const Outcome plain = run(argv, plain_env(), dir + "/plain");
  const Outcome r =
      run(argv, traced(dir, {{"MEMTOOL_CUPTI_BUFFERS", "1"}, {"MEMTOOL_CUPTI_BUFFER_BYTES", "1K"}}), dir + "/traced");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == plain.out);
  CHECK(lines_containing(r.err, "CUPTI dropped") == 1);
  const auto stats = fakecupti_stats(dir);
  CHECK(stats["dropped"] > 0);
  const auto t = load(dir + "/app.trace");
  CHECK(t->read.clean_end);
  CHECK(t->model.stats().gpu_mismatched == 0);  // what came back names the right calls
  CHECK(t->model.gpu_times().size() < gpu_work_events(t->model));
}

TEST_CASE("CUPTI: another tool holding CUPTI is left alone", "[integration][cupti]") {
  SECTION("from the start (FAKECUPTI_OTHER_SUBSCRIBER)") {
    const std::string dir = work_dir("other_subscriber");
    const std::vector<std::string> argv{MLP_TRAIN, "--iterations", "3"};
    const Outcome plain = run(argv, plain_env(), dir + "/plain");
    Env env = traced(dir, {{"FAKECUPTI_OTHER_SUBSCRIBER", "1"}});
    env.erase("MEMTOOL_LOG");
    env["MEMTOOL_CUPTI"] = "on";  // said as a warning (in auto mode, an info line)
    const Outcome r = run(argv, env, dir + "/traced");
    REQUIRE(r.status == 0);
    CHECK(r.out == plain.out);
    CHECK(lines_containing(r.err, "another tool already uses CUPTI") == 1);
    const auto t = load(dir + "/app.trace");
    CHECK(t->read.clean_end);
    CHECK(t->model.gpu_times().empty());
    CHECK(t->model.stats().launches > 0);
    CHECK(fakecupti_stats(dir)["pushes"] == 0);
  }
  SECTION("the program's own CUPTI client, there before memtool") {
    const std::string dir = work_dir("own_client");
    Env env = traced(dir);
    env.erase("MEMTOOL_CUPTI_LIBRARY");  // memtool must find the one the program loaded
    env["CUDA_HOME"] = "/nonexistent";
    const Outcome r = run({CUPTI_CLIENT, "own", FAKECUPTI_LIBRARY}, env, dir + "/run");
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "own records 20\n");  // the program's tool got all of its records
    CHECK(lines_containing(r.err, "another tool already uses CUPTI") == 1);
    CHECK(load(dir + "/app.trace")->model.gpu_times().empty());
  }
  SECTION("a tool that takes CUPTI while memtool traces") {
    const std::string dir = work_dir("late_client");
    const Outcome r = run({CUPTI_CLIENT, "late", FAKECUPTI_LIBRARY}, traced(dir), dir + "/run");
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex("own records ([0-9]+)")));
    CHECK(std::stoi(m[1].str()) >= 40);  // the newcomer gets its records
    CHECK(lines_containing(r.err, "another tool took CUPTI's activity buffers") == 1);
    const auto stats = fakecupti_stats(dir);
    CHECK(stats["pushes"] < 5 + 40);  // memtool stopped pushing its ids into the newcomer's records
    CHECK(stats["pops"] == stats["pushes"]);
  }
}

TEST_CASE("CUPTI: missing, refusing or off, memtool records as before", "[integration][cupti]") {
  const std::vector<std::string> argv{MLP_TRAIN, "--iterations", "3"};
  const std::string base = work_dir("missing");
  const Outcome plain = run(argv, plain_env(), base + "/plain");
  struct Case {
    std::string name;
    Env env;
    std::string said;  // "" : nothing on stderr at the default log level
  };
  const std::vector<Case> cases{
      {"missing_on",
       {{"MEMTOOL_CUPTI", "on"}, {"MEMTOOL_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13"}},
       "no GPU times"},
      {"missing_auto", {{"MEMTOOL_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13"}}, ""},
      {"refusing", {{"MEMTOOL_CUPTI", "on"}, {"FAKECUPTI_REFUSE", "1"}}, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
      {"off", {{"MEMTOOL_CUPTI", "off"}}, ""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string dir = base + "/" + c.name;
    Env env = traced(dir, c.env);
    env.erase("MEMTOOL_LOG");
    const Outcome r = run(argv, env, dir);
    REQUIRE(r.status == 0);
    CHECK(r.out == plain.out);
    if (c.said.empty()) {
      CHECK(r.err.empty());
    } else {
      CHECK(lines_containing(r.err, c.said) == 1);
      CHECK(lines_containing(r.err, "\n") == 1);  // one line
    }
    const auto t = load(dir + "/app.trace");
    CHECK(t->read.clean_end);
    CHECK(t->model.gpu_times().empty());
    CHECK(t->model.stats().launches == 25 * 3);
    if (c.name == "off") CHECK_FALSE(std::filesystem::exists(dir + "/fakecupti.json"));  // never loaded
  }
}

TEST_CASE("CUPTI: found through CUDA_HOME", "[integration][cupti]") {
  const std::string dir = work_dir("cuda_home");
  Env env = traced(dir);
  env.erase("MEMTOOL_CUPTI_LIBRARY");
  env["CUDA_HOME"] = FAKECUPTI_HOME;  // holds lib64/libcupti.so.13
  const Outcome r = run({MLP_TRAIN, "--iterations", "2"}, env, dir + "/run");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(lines_containing(r.err, std::string(FAKECUPTI_HOME) + "/lib64/libcupti.so.13") == 1);
  check_all_joined(load(dir + "/app.trace")->model);
}

TEST_CASE("CUPTI: a forked child leaves CUPTI and the parent's trace alone", "[integration][cupti][fork]") {
  const std::string dir = work_dir("fork");
  const Outcome r = run({CUPTI_CLIENT, "fork"}, traced(dir), dir + "/run");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == "fork ok\n");
  const auto t = load(dir + "/app.trace");
  CHECK(t->read.clean_end);
  CHECK(t->model.stats().memsets == 20);  // the parent's; the child's memset was refused
  check_all_joined(t->model);
  const auto stats = fakecupti_stats(dir);  // written by the parent only
  CHECK(stats["pushes"] == 20);
  CHECK(stats["depth_at_exit"] == 0);
}

TEST_CASE("CUPTI: memtool report shows the GPU times", "[integration][cupti][report]") {
  const std::string dir = work_dir("report");
  const Outcome r = run({CONV_TRAIN, "--iterations", "5"}, traced(dir), dir + "/run");
  REQUIRE(r.status == 0);
  const auto t = load(dir + "/app.trace");
  const Outcome json = run({MEMTOOL_TOOL, "report", "--format", "json", dir + "/app.trace"}, {}, dir + "/json");
  INFO(json.err);
  REQUIRE(json.status == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["gpu_timed_launches"] == t->model.stats().launches);
  REQUIRE(j["iterations"].size() >= 3);
  for (const auto& it : j["iterations"]) CHECK(it["gpu_busy_ns"].get<std::uint64_t>() > 0);
  CHECK(j["gpu"]["timed_copies"] == t->model.stats().copies);
  CHECK(j["gpu"]["streams"].size() >= 2);  // conv_train's compute and side streams
  CHECK(j["gpu"]["kernels"].size() > 0);
  const Outcome text = run({MEMTOOL_TOOL, "report", dir + "/app.trace"}, {}, dir + "/text");
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("GPU time (CUPTI"));
  CHECK_THAT(text.out, Catch::Contains("Longest kernels"));
  CHECK_THAT(text.out, Catch::Contains("Copy engines"));
  CHECK_THAT(text.out, Catch::Contains("gpu busy"));
}

#endif  // MEMTOOL_HAVE_FAKECUDA
