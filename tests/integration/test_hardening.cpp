// libmemtool.so against a hostile host program and environment (issue 13), on fakecuda: a run
// killed by a signal keeps its trace up to the kill (and the program's own handler still runs);
// a FIFO as MEMTOOL_TRACE or MEMTOOL_LOG_FILE never blocks the program; misconfigurations and
// write errors are said once, with the reason; failed frees are recorded as failed.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "memtool/trace/model.hpp"
#include "memtool/trace/reader.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::run;

std::string work_dir(const std::string& name) {
  const std::string dir = std::string(INTEGRATION_WORK_DIR) + "/hardening/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::map<std::string, std::string> preloaded(std::map<std::string, std::string> env) {
  env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  return env;
}

// Every run goes through timeout(1): a regression that blocks fails the test (status 124)
// instead of hanging it.
Outcome run_client(const std::vector<std::string>& argv, std::map<std::string, std::string> env,
                   const std::string& dir) {
  std::vector<std::string> command{"/usr/bin/timeout", "60"};
  command.insert(command.end(), argv.begin(), argv.end());
  return run(command, preloaded(std::move(env)), dir);
}

std::size_t lines_with(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct Loaded {
  memtool::trace::TraceModel model;
  memtool::trace::TraceReadResult read;
};

std::unique_ptr<Loaded> load(const std::string& path) {
  auto loaded = std::make_unique<Loaded>();
  loaded->read = memtool::trace::read_trace(path, loaded->model);
  return loaded;
}

class FailedFrees : public memtool::trace::EventVisitor {
 public:
  void on_failed_free(const memtool::trace::FailedFreeEvent& event) override { reasons.push_back(event.reason); }
  std::vector<memtool::trace::FailedFreeReason> reasons;
};

}  // namespace

TEST_CASE("hardening: a run killed by SIGTERM keeps its trace up to the kill", "[integration][hardening]") {
  const std::string dir = work_dir("sigterm");
  const Outcome r = run_client({HOSTILE_CLIENT, "term"}, {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir);
  INFO(r.err);
  CHECK(r.status == 128 + SIGTERM);  // the default action still ends it
  const auto t = load(dir + "/t.trace");
  CHECK_FALSE(t->read.clean_end);
  CHECK(t->model.stats().allocs == 4);
  CHECK(t->model.stats().frees == 2);
}

TEST_CASE("hardening: the program's own signal handler still runs, after the flush", "[integration][hardening]") {
  const std::string dir = work_dir("handler");
  const Outcome r = run_client({HOSTILE_CLIENT, "handler"}, {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir);
  INFO(r.err);
  CHECK(r.status == 3);
  CHECK(r.out.find("handled") != std::string::npos);
  const auto t = load(dir + "/t.trace");
  CHECK(t->model.stats().allocs == 4);
  CHECK(t->model.stats().frees == 2);
}

TEST_CASE("hardening: an ignored SIGTERM stays ignored", "[integration][hardening]") {
  const std::string dir = work_dir("ignore");
  const Outcome r = run_client({HOSTILE_CLIENT, "ignore"}, {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("still running") != std::string::npos);
  const auto t = load(dir + "/t.trace");
  CHECK(t->read.clean_end);
  CHECK(t->model.stats().frees == 4);
}

TEST_CASE("hardening: SIGKILL loses at most the last second (the flush timer)", "[integration][hardening]") {
  const std::string dir = work_dir("sigkill");
  const Outcome r = run_client({HOSTILE_CLIENT, "kill"}, {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir);
  INFO(r.err);
  CHECK(r.status == 128 + SIGKILL);
  const auto t = load(dir + "/t.trace");
  CHECK(t->model.stats().allocs == 4);  // written by the timer while the program slept
  CHECK(t->model.stats().frees == 2);
}

TEST_CASE("hardening: double, interior and wild frees are recorded as failed frees", "[integration][hardening]") {
  const std::string dir = work_dir("frees");
  const Outcome r = run_client({HOSTILE_CLIENT, "frees"}, {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("double 1 interior 1 wild 1") != std::string::npos);  // CUDA_ERROR_INVALID_VALUE
  const auto t = load(dir + "/t.trace");
  CHECK(t->read.clean_end);
  CHECK(t->model.stats().frees == 2);
  CHECK(t->model.stats().unknown_frees == 0);
  CHECK(t->model.stats().failed_frees == 3);
  FailedFrees failed;
  (void)memtool::trace::read_trace(dir + "/t.trace", failed);
  using memtool::trace::FailedFreeReason;
  CHECK(failed.reasons == std::vector<FailedFreeReason>{FailedFreeReason::not_allocated, FailedFreeReason::interior,
                                                        FailedFreeReason::not_allocated});
}

TEST_CASE("hardening: a FIFO as MEMTOOL_TRACE or MEMTOOL_LOG_FILE never blocks the program",
          "[integration][hardening]") {
  const std::string dir = work_dir("fifo");
  const std::string fifo = dir + "/fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  SECTION("MEMTOOL_TRACE") {
    const Outcome r = run_client({HOSTILE_CLIENT, "ignore"}, {{"MEMTOOL_TRACE", fifo}}, dir + "/trace");
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "memtool[") == 1);
    CHECK(r.err.find("FIFO") != std::string::npos);
  }
  SECTION("MEMTOOL_LOG_FILE") {
    const Outcome r = run_client({HOSTILE_CLIENT, "ignore"},
                                 {{"MEMTOOL_LOG_FILE", fifo}, {"MEMTOOL_TRACE", dir + "/t.trace"}}, dir + "/log");
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "memtool[") == 1);
    CHECK(r.err.find("MEMTOOL_LOG_FILE") != std::string::npos);
    CHECK(load(dir + "/t.trace")->read.clean_end);  // recording carried on
  }
}

TEST_CASE("hardening: misconfigurations are said once, with the reason", "[integration][hardening]") {
  const std::string dir = work_dir("misconfigured");
  SECTION("a log file that cannot be opened") {
    const Outcome r =
        run_client({HOSTILE_CLIENT, "ignore"}, {{"MEMTOOL_LOG_FILE", dir + "/no/such/dir/log"}}, dir + "/a");
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "memtool[") == 1);
    CHECK(r.err.find("No such file or directory; memtool's messages go to stderr") != std::string::npos);
  }
  SECTION("MEMTOOL_SUMMARY in record mode: the summary of what was observed, quietly") {
    const Outcome r = run_client({HOSTILE_CLIENT, "ignore"}, {{"MEMTOOL_SUMMARY", dir + "/s.json"}}, dir + "/b");
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "memtool[") == 0);
    std::ifstream in(dir + "/s.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("\"strategy\":\"record\"") != std::string::npos);
  }
  SECTION("MEMTOOL_SUMMARY and MEMTOOL_TRACE naming one file") {
    const std::string both = dir + "/both";
    const Outcome r = run_client(
        {MLP_TRAIN}, {{"MEMTOOL_STRATEGY", "pool"}, {"MEMTOOL_SUMMARY", both}, {"MEMTOOL_TRACE", both}}, dir + "/c");
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "name the same file") == 1);
    CHECK(load(both)->read.clean_end);  // the trace, whole
  }
  SECTION("a summary that cannot be written says why, and a FIFO is not waited on") {
    const std::string fifo = dir + "/summary.fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    for (const std::string& summary : {dir + "/no/such/dir/s.json", fifo}) {
      const Outcome r =
          run_client({MLP_TRAIN}, {{"MEMTOOL_STRATEGY", "pool"}, {"MEMTOOL_SUMMARY", summary}}, dir + "/e");
      INFO(r.err);
      CHECK(r.status == 0);
      CHECK(lines_with(r.err, "cannot write the summary") == 1);
      CHECK((r.err.find("No such file or directory") != std::string::npos ||
             r.err.find("not a regular file") != std::string::npos));
    }
  }
  SECTION("a trace that cannot be written says why") {
    // 8 KiB of file size: the trace of mlp_train is larger, so write(2) fails with EFBIG.
    const Outcome r = run_client({"/bin/sh", "-c", std::string("trap '' XFSZ; ulimit -f 8; exec ") + MLP_TRAIN},
                                 {{"MEMTOOL_TRACE", dir + "/t.trace"}}, dir + "/d");
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(lines_with(r.err, "writing the trace") == 1);
    CHECK(r.err.find("File too large") != std::string::npos);
  }
}

#endif  // MEMTOOL_HAVE_FAKECUDA
