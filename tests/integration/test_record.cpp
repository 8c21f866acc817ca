// Record mode end to end on fakecuda: the test apps under libmemtool.so print exactly what
// they print without it, and their traces hold exactly the calls the apps make (see
// tests/apps/README.md), the detected iteration, the buffers each launch touched. Also: fork,
// bad settings, 8 threads, `memtool record`.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA

#include <filesystem>
#include <regex>
#include <set>

#include "memtool/interpose/per_thread_streams.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/reader.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::run;
using memtool::trace::EventKind;

std::string work_dir(const std::string& name) {
  const std::string dir = std::string(INTEGRATION_WORK_DIR) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::map<std::string, std::string> on_fakecuda(std::map<std::string, std::string> env = {}) {
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  return env;
}

std::map<std::string, std::string> recorded(const std::string& trace, std::map<std::string, std::string> env = {}) {
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["MEMTOOL_TRACE"] = trace;
  return on_fakecuda(std::move(env));
}

struct Trace {
  memtool::trace::TraceModel model;
  memtool::trace::TraceReadResult read;
  memtool::trace::Iterations iterations;

  std::size_t count(EventKind kind) const {
    std::size_t n = 0;
    for (const auto& event : model.events()) n += event.kind == kind ? 1 : 0;
    return n;
  }
  std::size_t count_if(const std::function<bool(const memtool::trace::ModelEvent&)>& predicate) const {
    std::size_t n = 0;
    for (const auto& event : model.events()) n += predicate(event) ? 1 : 0;
    return n;
  }
};

std::unique_ptr<Trace> load(const std::string& path) {
  auto trace = std::make_unique<Trace>();
  trace->read = memtool::trace::read_trace(path, trace->model);
  trace->iterations = memtool::trace::find_iterations(trace->model);
  return trace;
}

struct AppRun {
  Outcome plain;
  Outcome preloaded;
  std::unique_ptr<Trace> trace;
};

AppRun run_app(const std::string& name, const std::vector<std::string>& argv,
               std::map<std::string, std::string> extra_env = {}) {
  AppRun result;
  const std::string dir = work_dir(name);
  result.plain = run(argv, on_fakecuda(), dir + "/plain");
  result.preloaded = run(argv, recorded(dir + "/app.trace", std::move(extra_env)), dir + "/preloaded");
  REQUIRE(result.plain.status == 0);
  INFO(result.preloaded.err);
  REQUIRE(result.preloaded.status == 0);
  result.trace = load(dir + "/app.trace");
  return result;
}

// "iter 3 loss ... checksum 0x..." lines: one per iteration.
std::size_t iteration_lines(const std::string& out) {
  return static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n'));
}

}  // namespace

TEST_CASE("mlp_train: same output, exact trace, period found", "[integration][record]") {
  for (const char* program : {MLP_TRAIN, MLP_TRAIN_GETPROC}) {
    INFO(program);
    const AppRun six = run_app("mlp6", {program, "--iterations", "6"}, {{"MEMTOOL_LOG", "info"}});
    const AppRun eight = run_app("mlp8", {program, "--iterations", "8"});
    CHECK(six.preloaded.out == six.plain.out);  // bit-identical checksums and losses
    CHECK(iteration_lines(six.plain.out) == 6);
    const Trace& t = *six.trace;
    CHECK(t.read.clean_end);
    CHECK(t.count(EventKind::alloc) == 6 + 19 * 6);
    CHECK(t.count(EventKind::free) == 6 + 19 * 6);
    CHECK(t.count(EventKind::launch) == 25 * 6);
    CHECK(t.model.stats().unknown_frees == 0);
    // Every launch of these kernels takes device pointers: each one touched buffers.
    std::size_t launches_without_touches = 0;
    for (std::size_t i = 0; i < t.model.event_count(); ++i) {
      if (t.model.event(i).kind == EventKind::launch && t.model.touched(i).empty()) ++launches_without_touches;
    }
    CHECK(launches_without_touches == 0);
    CHECK(t.model.stats().unresolved_touches == 0);
    // The period: 19 allocations, and as many events as two more iterations add.
    REQUIRE(t.iterations.found());
    CHECK(t.iterations.period_allocs == 19);
    const std::uint64_t per_iteration = (eight.trace->model.event_count() - t.model.event_count()) / 2;
    CHECK(t.iterations.period_events == per_iteration);
    // The online detector (in the program) reported the same period in tokens.
    const std::regex online("iteration found: ([0-9]+) events");
    std::smatch match;
    REQUIRE(std::regex_search(six.preloaded.err, match, online));
    CHECK(std::stoull(match[1].str()) == t.iterations.period_tokens);
  }
}

TEST_CASE("MEMTOOL_TRACE_LIMIT: the trace ends cleanly at the limit, the program runs on unchanged",
          "[integration][record]") {
  const AppRun r = run_app("mlp_limit", {MLP_TRAIN, "--iterations", "40"}, {{"MEMTOOL_TRACE_LIMIT", "8K"}});
  CHECK(r.preloaded.out == r.plain.out);
  CHECK(iteration_lines(r.plain.out) == 40);
  CHECK(std::filesystem::file_size(std::string(INTEGRATION_WORK_DIR) + "/mlp_limit/app.trace") <= 8192);
  CHECK(r.trace->read.clean_end);  // a complete trace of the first iterations
  CHECK(r.trace->iterations.found());
  CHECK(r.trace->count(EventKind::launch) < 25 * 40);
  const std::regex warning("reached MEMTOOL_TRACE_LIMIT after ([0-9]+) events");
  std::smatch match;
  REQUIRE(std::regex_search(r.preloaded.err, match, warning));
  CHECK(std::stoull(match[1].str()) == r.trace->model.event_count());
}

TEST_CASE("conv_train: two streams, async allocations, same output", "[integration][record]") {
  for (const char* program : {CONV_TRAIN, CONV_TRAIN_GETPROC}) {
    INFO(program);
    const AppRun r = run_app("conv5", {program, "--iterations", "5"});
    CHECK(r.preloaded.out == r.plain.out);
    const Trace& t = *r.trace;
    CHECK(t.read.clean_end);
    CHECK(t.count(EventKind::alloc) == 4 + 3 + 17 * 5);
    CHECK(t.count(EventKind::free) == 4 + 3 + 17 * 5);
    CHECK(t.count(EventKind::launch) == 19 * 5);
    CHECK(t.count(EventKind::stream_create) == 2);
    CHECK(t.count_if([](const auto& e) {
      return e.kind == EventKind::alloc && e.memory == memtool::trace::MemoryKind::async;
    }) == 13 * 5);
    CHECK(t.count_if([](const auto& e) {
      return e.kind == EventKind::alloc && e.memory == memtool::trace::MemoryKind::pinned_host;
    }) == 3);
    REQUIRE(t.iterations.found());
    CHECK(t.iterations.period_allocs == 17);
  }
}

TEST_CASE("getproc clients: per-thread variants and the CUDA 13 ABI are hooked", "[integration][record]") {
  SECTION("--per-thread: default-stream work is recorded on the thread's own per-thread stream") {
    const AppRun r = run_app("mlp_ptds", {MLP_TRAIN_GETPROC, "--iterations", "3", "--per-thread"});
    CHECK(r.preloaded.out == r.plain.out);
    const Trace& t = *r.trace;
    CHECK(t.count(EventKind::launch) == 25 * 3);
    // One thread: one per-thread stream id (never the shared handle 2), for launches and copies.
    std::set<std::uint64_t> launch_streams;
    (void)t.count_if([&](const auto& e) {
      if (e.kind == EventKind::launch) launch_streams.insert(e.stream);
      return false;
    });
    REQUIRE(launch_streams.size() == 1);
    const std::uint64_t stream = *launch_streams.begin();
    CHECK(memtool::interpose::is_per_thread_stream(stream));
    CHECK(t.count_if([&](const auto& e) { return e.kind == EventKind::launch && e.stream == stream; }) == 25 * 3);
    CHECK(t.count_if([&](const auto& e) { return e.kind == EventKind::copy && e.stream != stream; }) == 0);
  }
  SECTION("--cuda-version 13000: cuCtxSynchronize_v2 is recorded like cuCtxSynchronize") {
    const AppRun v12 = run_app("mlp_v12", {MLP_TRAIN_GETPROC, "--iterations", "3"});
    const AppRun v13 = run_app("mlp_v13", {MLP_TRAIN_GETPROC, "--iterations", "3", "--cuda-version", "13000"});
    CHECK(v13.preloaded.out == v12.plain.out);
    CHECK(v13.trace->count(EventKind::sync) == v12.trace->count(EventKind::sync));
    CHECK(v13.trace->model.event_count() == v12.trace->model.event_count());
  }
}

TEST_CASE("every hook of the table resolves against fakecuda", "[integration][resolver]") {
  const std::string dir = work_dir("coverage");
  const Outcome r = run({HOOK_COVERAGE_CLIENT}, recorded(dir + "/coverage.trace"), dir);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
}

TEST_CASE("a forked child does not write into the parent's trace", "[integration][fork]") {
  const std::string dir = work_dir("fork");
  const Outcome r = run({FORK_CLIENT}, recorded(dir + "/fork.trace"), dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == "fork ok\n");
  const auto t = load(dir + "/fork.trace");
  CHECK(t->read.clean_end);
  CHECK_FALSE(t->read.truncated);
  // Parent: alloc 1024, sync, free, alloc 4096, free. Nothing of the child's 2048 bytes.
  REQUIRE(t->model.event_count() == 5);
  CHECK(t->count(EventKind::alloc) == 2);
  CHECK(t->count_if([](const auto& e) { return e.kind == EventKind::alloc && e.bytes == 2048; }) == 0);
  CHECK(t->count(EventKind::free) == 2);
  CHECK(t->count(EventKind::sync) == 1);
}

TEST_CASE("bad settings: a clear message, and memtool stays out of the way", "[integration][options]") {
  const std::string dir = work_dir("bad_env");
  const Outcome plain = run({MLP_TRAIN, "--iterations", "2"}, on_fakecuda(), dir + "/plain");
  REQUIRE(plain.status == 0);
  struct Case {
    const char* name;
    const char* value;
    const char* message;
  };
  for (const Case& c :
       {Case{"MEMTOOL_LOG", "loud", "MEMTOOL_LOG='loud': expected one of off|error|warn|info|debug"},
        Case{"MEMTOOL_STRATEGY", "spill", "MEMTOOL_STRATEGY='spill': expected one of record|pool|swap|off"},
        Case{"MEMTOOL_STACKS", "2", "MEMTOOL_STACKS='2': expected 0 or 1"},
        Case{"MEMTOOL_ITERATION_KERNEL", "sgd_(", "not a valid regular expression"}}) {
    INFO(c.name << "=" << c.value);
    const std::string trace = dir + "/" + c.name + ".trace";
    const Outcome r = run({MLP_TRAIN, "--iterations", "2"}, recorded(trace, {{c.name, c.value}}), dir + "/" + c.name);
    CHECK(r.status == 0);
    CHECK(r.out == plain.out);
    CHECK_THAT(r.err, Catch::Contains(c.message) && Catch::Contains("stays out of the way"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one message, not one per call
    CHECK_FALSE(std::filesystem::exists(trace));
  }
  const Outcome disabled =
      run({MLP_TRAIN, "--iterations", "2"}, recorded(dir + "/disabled.trace", {{"MEMTOOL_DISABLE", "1"}}), dir + "/d");
  CHECK(disabled.out == plain.out);
  CHECK(disabled.err.empty());
  CHECK_FALSE(std::filesystem::exists(dir + "/disabled.trace"));
}

TEST_CASE("iteration marks from MEMTOOL_ITERATION_KERNEL; stacks with MEMTOOL_STACKS", "[integration][record]") {
  const AppRun r = run_app("mlp_marks", {MLP_TRAIN, "--iterations", "4"},
                           {{"MEMTOOL_ITERATION_KERNEL", "^softmax_xent$"}, {"MEMTOOL_STACKS", "1"}});
  CHECK(r.preloaded.out == r.plain.out);
  const Trace& t = *r.trace;
  CHECK(t.count(EventKind::iteration_mark) == 4);  // one softmax_xent launch per iteration
  CHECK(t.iterations.source == memtool::trace::IterationSource::marks);
  std::size_t with_stack = 0;
  for (const auto& buffer : t.model.buffers()) with_stack += t.model.stack(buffer.stack).empty() ? 0 : 1;
  CHECK(with_stack == t.model.buffer_count());
  CHECK_FALSE(t.model.modules().empty());
}

TEST_CASE("8 threads on their own streams: every call recorded once", "[integration][threads]") {
  const std::string dir = work_dir("stress");
  constexpr std::size_t kRounds = 40;
  const Outcome r =
      run({STRESS_CLIENT, APP_MODULE_IMAGE, std::to_string(kRounds)}, recorded(dir + "/stress.trace"), dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto t = load(dir + "/stress.trace");
  CHECK(t->read.clean_end);
  CHECK(t->model.event_count() == 8 * (1 + 7 * kRounds));
  CHECK(t->count(EventKind::alloc) == 8 * 2 * kRounds);
  CHECK(t->count(EventKind::free) == 8 * 2 * kRounds);
  CHECK(t->count(EventKind::launch) == 8 * kRounds);
  CHECK(t->model.stats().unknown_frees == 0);
  for (std::size_t i = 0; i < t->model.event_count(); ++i) {
    if (t->model.event(i).kind == EventKind::launch) REQUIRE(t->model.touched(i).size() == 2);
  }
}

TEST_CASE("memtool record runs, passes the exit status through and summarises", "[integration][tool]") {
  const std::string dir = work_dir("tool");
  const Outcome plain = run({MLP_TRAIN, "--iterations", "3"}, on_fakecuda(), dir + "/plain");
  const Outcome r =
      run({MEMTOOL_TOOL, "record", "-o", "rec.%p.trace", "--", MLP_TRAIN, "--iterations", "3"}, on_fakecuda(), dir);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out == plain.out);
  CHECK_THAT(r.err, Catch::Contains("recorded") && Catch::Contains("63 allocations") &&
                        Catch::Contains("memtool: next: memtool report"));
  std::size_t traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    traces += entry.path().filename().string().rfind("rec.", 0) == 0 ? 1 : 0;
  }
  CHECK(traces == 1);

  const Outcome failing = run({MEMTOOL_TOOL, "record", "-o", dir + "/none.trace", "--", "/bin/sh", "-c", "exit 3"},
                              on_fakecuda(), dir + "/failing");
  CHECK(failing.status == 3);
  CHECK_THAT(failing.err, Catch::Contains("no trace was written"));

  const Outcome preload =
      run({MEMTOOL_TOOL, "record", "--", "/bin/sh", "-c", "echo \"$LD_PRELOAD\""},
          {{"LD_PRELOAD", "/nonexistent/first.so"}, {"MEMTOOL_LIBRARY", MEMTOOL_PRELOAD}}, dir + "/preload");
  CHECK(preload.out == std::string("/nonexistent/first.so:") + MEMTOOL_PRELOAD + "\n");
}

#endif  // MEMTOOL_HAVE_FAKECUDA
