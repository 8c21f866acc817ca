// I/O errors: the writer reports them (nullptr from open, false from flush/close, failed())
// and drops later records instead of crashing or blocking; what reached the file stays readable.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

TEST_CASE("open reports a header that cannot be written", "[trace_format][io]") {
  std::string error;
  CHECK(TraceWriter::open("/dev/full", &error) == nullptr);
  CHECK(error.find("/dev/full") != std::string::npos);
}

TEST_CASE("a full disk marks the writer failed and later writes are dropped", "[trace_format][io]") {
  TempPath path("full");
  // The file size limit applies to the whole process: try it in a child.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(10);
    std::signal(SIGXFSZ, SIG_IGN);  // write(2) then fails with EFBIG instead of killing us
    const rlimit limit{4000, 4000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string error;
    auto w = TraceWriter::open(path.str(), TraceWriter::Options{4096}, &error);
    if (w == nullptr) ::_exit(2);
    for (std::uint64_t i = 0; i < 2000; ++i) {
      w->write(AllocEvent{{i, i, ThreadId{1}}, 0x1000 * i, 64, MemoryKind::device, StreamHandle{0}, {}});
    }
    const bool flushed = w->flush();
    const bool failed = w->failed();
    const bool closed = w->close();
    ::_exit(!flushed && failed && !closed && w->error_number() == EFBIG ? 0 : 1);  // the reason is kept
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);  // what reached the disk still reads
  CHECK(r.truncated);
  CHECK(r.events > 0);
  CHECK(r.bytes_read <= 4000);
}
