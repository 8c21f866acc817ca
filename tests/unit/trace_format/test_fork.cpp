// Fork: a child that inherits an open writer abandons it and must never write into the
// parent's file — neither the records still in the inherited buffer nor new ones — nor hang.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

TEST_CASE("a forked child abandons the writer and leaves the parent's trace intact", "[trace_format][fork]") {
  TempPath path("fork");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w != nullptr);
  std::vector<std::string> expect = write_sample_trace(*w);  // still in the buffer: not flushed
  const std::uint64_t on_disk_before = w->bytes_written();

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(10);  // a hang in the child fails the test instead of blocking it
    w->abandon_after_fork();
    w->write(IterationMarkEvent{{99, 99, ThreadId{99}}, 99});
    w->intern("child-only");
    const bool flushed = w->flush();
    const bool closed = w->close();
    const bool counters_ok = w->bytes_written() == on_disk_before;
    w.reset();  // the destructor must not flush either
    ::_exit(!flushed && !closed && counters_ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_bytes(path.str()).size() == on_disk_before);  // the child wrote nothing

  const IterationMarkEvent after{{100, 100, ThreadId{1}}, 1};
  w->write(after);
  expect.push_back(describe(after));
  REQUIRE(w->close());
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  CHECK(v.lines == expect);
}

// Forks while other threads are writing, so some children are born with the writer's lock
// held by a thread that does not exist in them. Abandoning must neither hang nor crash, and
// the parent's trace must stay complete.
TEST_CASE("fork while other threads write", "[trace_format][fork]") {
  TempPath path("fork-busy");
  std::string error;
  auto w = TraceWriter::open(path.str(), TraceWriter::Options{4096}, &error);
  REQUIRE(w != nullptr);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> written{0};
  std::vector<std::thread> writers;
  for (std::uint32_t t = 1; t <= 2; ++t) {
    writers.emplace_back([&, t] {
      for (std::uint64_t i = 0; !stop.load(); ++i) {
        w->write(AllocEvent{{i, i, ThreadId{t}}, 0x1000 * i, 64, MemoryKind::device, StreamHandle{t}, {}});
        written.fetch_add(1);
      }
    });
  }
  int failures = 0;
  for (int round = 0; round < 20; ++round) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::alarm(10);
      w->abandon_after_fork();
      w->write(IterationMarkEvent{{1, 1, ThreadId{1}}, 1});
      w->flush();
      w.reset();
      ::_exit(0);
    }
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
    }
  }
  stop = true;
  for (std::thread& t : writers) t.join();
  CHECK(failures == 0);
  REQUIRE(w->close());
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  CHECK(r.events == written.load());
}
