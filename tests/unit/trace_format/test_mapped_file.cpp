// A writer over a shared mapping of its file (TraceWriter::Options::map_file, issue 39 item 4):
// every record is in the file as soon as it is written, so a process that dies in any way keeps
// them all; the reserved zeros past the last record read as a trace cut short, and a closed
// trace has no tail. Windows smaller than a record, and the size limit, still give the same
// records as the buffered writer.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

TraceWriter::Options mapped_options(std::size_t window = std::size_t{1} << 20) {
  TraceWriter::Options options;
  options.map_file = true;
  options.buffer_bytes = window;
  return options;
}

}  // namespace

TEST_CASE("a mapped writer's records are in the file before any flush or close", "[trace_format][mapped]") {
  TempPath path("mapped-open");
  std::string error;
  auto w = TraceWriter::open(path.str(), mapped_options(), &error);
  REQUIRE(w != nullptr);
  REQUIRE(w->mapped());
  const std::vector<std::string> expect = write_sample_trace(*w);

  // What a process that died now would leave: every record, then the reserved zeros.
  const std::vector<std::byte> now = read_bytes(path.str());
  CHECK(now.size() > w->bytes_written());
  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(now, "now", v);
  CHECK(r.truncated);
  CHECK_FALSE(r.clean_end);
  CHECK(r.torn_bytes == 0);
  CHECK(r.bytes_read == w->bytes_written());
  CHECK(v.lines == expect);

  REQUIRE(w->close());
  const std::uint64_t size = read_bytes(path.str()).size();
  CHECK(size == w->bytes_written());  // the tail is gone
  RecordingVisitor closed;
  const TraceReadResult c = read_trace(path.str(), closed);
  CHECK(c.clean_end);
  CHECK(closed.lines == expect);
}

TEST_CASE("a process killed by SIGKILL keeps every record of its mapped trace", "[trace_format][mapped]") {
  TempPath path("mapped-kill");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::string error;
    auto w = TraceWriter::open(path.str(), mapped_options(4096), &error);
    if (w == nullptr || !w->mapped()) ::_exit(1);
    for (int i = 0; i < 2000; ++i) {  // many windows of one page
      w->write(IterationMarkEvent{{static_cast<std::uint64_t>(i + 1), static_cast<std::uint64_t>(i), ThreadId{1}},
                                  static_cast<std::uint64_t>(i)});
    }
    ::raise(SIGKILL);
    ::_exit(2);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.truncated);
  CHECK(r.events == 2000);
  CHECK(r.torn_bytes == 0);
}

TEST_CASE("records larger than a window, and windows of one page, read back whole", "[trace_format][mapped]") {
  TempPath path("mapped-large");
  std::string error;
  auto w = TraceWriter::open(path.str(), mapped_options(4096), &error);
  REQUIRE(w != nullptr);
  REQUIRE(w->mapped());
  std::vector<std::string> expect = write_sample_trace(*w);
  const std::string long_text(100000, 'k');  // 24 pages: one record over many windows' size
  const StringId id = w->intern(long_text);
  REQUIRE(id.valid());
  expect.push_back("string " + std::to_string(id.value()) + "=" + long_text);
  for (int i = 0; i < 500; ++i) {
    const IterationMarkEvent mark{{1000 + static_cast<std::uint64_t>(i), 5000, ThreadId{3}},
                                  static_cast<std::uint64_t>(i)};
    w->write(mark);
    expect.push_back(describe(mark));
  }
  REQUIRE(w->close());
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  CHECK(v.lines == expect);
}

TEST_CASE("a mapped trace keeps to its size limit", "[trace_format][mapped]") {
  TempPath path("mapped-limit");
  TraceWriter::Options options = mapped_options(4096);
  options.max_bytes = 10000;
  std::string error;
  auto w = TraceWriter::open(path.str(), options, &error);
  REQUIRE(w != nullptr);
  for (int i = 0; i < 5000 && !w->limit_reached(); ++i) {
    w->write(IterationMarkEvent{{static_cast<std::uint64_t>(i + 1), 7, ThreadId{1}}, static_cast<std::uint64_t>(i)});
    // Never more than the limit on disk, even while writing (the reserved tail included).
    REQUIRE(read_bytes(path.str()).size() <= options.max_bytes);
  }
  CHECK(w->limit_reached());
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  CHECK(read_bytes(path.str()).size() <= options.max_bytes);
}

TEST_CASE("a zero tag is the end of a dead writer's records, not corruption", "[trace_format][mapped]") {
  // A record it never finished (its tag, stored last, still zero), then the reserved zeros.
  ByteBuilder bytes;
  bytes.header().record(0x01, ByteBuilder().varint(3).raw("pid").varint(2).raw("42"));
  const std::size_t complete = bytes.size();
  bytes.u8(0).u8(5).raw("abc");
  const std::size_t unfinished = bytes.size() - complete;
  for (int i = 0; i < 4096; ++i) bytes.u8(0);
  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(bytes.bytes, "dead", v);
  CHECK(r.truncated);
  CHECK(r.records == 1);
  CHECK(r.bytes_read == complete);
  CHECK(r.torn_bytes == unfinished);
}
