// Trace format hardening (issue 13): the failed-free record (0x21) round-trips and is skipped
// whole by a reader that does not know it, with every other record read exactly as before;
// the writer never blocks on a FIFO and accepts only regular files (test_io_errors.cpp: a
// write error keeps its errno).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

class WithFailedFrees : public RecordingVisitor {
 public:
  void on_failed_free(const FailedFreeEvent& e) override {
    failed.push_back(e);
    lines.push_back("failed free");
  }
  std::vector<FailedFreeEvent> failed;
};

// alloc, failed free (interior), free, failed free (not allocated), alloc: the failed frees sit
// between events whose deltas they must not disturb.
void write_with_failed_frees(TraceWriter& w) {
  w.write(AllocEvent{{10, 100, ThreadId{7}}, 0x10000, 4096, MemoryKind::device, StreamHandle{3}, {}});
  w.write(FailedFreeEvent{
      {11, 150, ThreadId{9}}, 0x10040, MemoryKind::device, StreamHandle{5}, FailedFreeReason::interior});
  w.write(FreeEvent{{12, 200, ThreadId{7}}, 0x10000, MemoryKind::device, StreamHandle{3}});
  w.write(FailedFreeEvent{
      {13, 250, ThreadId{7}}, 0x10000, MemoryKind::async, StreamHandle{0}, FailedFreeReason::not_allocated});
  w.write(AllocEvent{{14, 300, ThreadId{7}}, 0x30000, 64, MemoryKind::device, StreamHandle{3}, {}});
}

}  // namespace

TEST_CASE("format: failed frees round-trip and are not events", "[trace_format][hardening]") {
  TempPath path("failed_frees");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w);
  write_with_failed_frees(*w);
  REQUIRE(w->close());
  WithFailedFrees v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);  // the end record's counts: 5 records, 3 events
  CHECK(r.records == 5);
  CHECK(r.events == 3);
  REQUIRE(v.failed.size() == 2);
  CHECK(v.failed[0].header.seq == 11);
  CHECK(v.failed[0].header.time_ns == 150);
  CHECK(v.failed[0].header.thread.value() == 9);
  CHECK(v.failed[0].address == 0x10040);
  CHECK(v.failed[0].stream.value() == 5);
  CHECK(v.failed[0].reason == FailedFreeReason::interior);
  CHECK(v.failed[1].kind == MemoryKind::async);
  CHECK(v.failed[1].reason == FailedFreeReason::not_allocated);
  CHECK(v.lines[1] == "failed free");
}

TEST_CASE("format: a reader that does not know failed frees reads the rest as before", "[trace_format][hardening]") {
  TempPath path("failed_frees_skipped");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w);
  write_with_failed_frees(*w);
  REQUIRE(w->close());
  std::vector<std::byte> bytes = read_bytes(path.str());
  // Turn every 0x21 record into a tag no reader knows (0x7e): what an older reader sees.
  std::size_t pos = 16;
  int renamed = 0;
  while (pos < bytes.size()) {
    const auto tag = static_cast<std::uint8_t>(bytes[pos]);
    const auto length = static_cast<std::uint8_t>(bytes[pos + 1]);  // every record here is < 128 bytes
    if (tag == 0x21) {
      bytes[pos] = std::byte{0x7e};
      ++renamed;
    }
    pos += 2 + length;
  }
  REQUIRE(renamed == 2);
  RecordingVisitor older;
  const TraceReadResult r = read_trace_bytes(bytes, "older", older);
  CHECK(r.clean_end);
  RecordingVisitor current;
  (void)read_trace(path.str(), current);
  CHECK(older.lines == current.lines);  // the same events, deltas intact
  REQUIRE(older.lines.size() == 3);
  CHECK(older.lines[2].find("seq=14") != std::string::npos);
}

TEST_CASE("format: an unknown failed-free reason is corrupt", "[trace_format][hardening]") {
  ByteBuilder payload;
  payload.varint(0).varint(0).varint(0).varint(0).u8(0).varint(0).u8(2);
  ByteBuilder b;
  b.header().record(0x21, payload);
  RecordingVisitor v;
  try {
    (void)read_trace_bytes(b.bytes, "reason", v);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.offset() == 16 + 2 + 6);
    CHECK_THAT(e.message(), Catch::Contains("failed free reason"));
  }
}

TEST_CASE("format: the writer never blocks on a FIFO and wants a regular file", "[trace_format][hardening]") {
  TempPath fifo("fifo");
  REQUIRE(mkfifo(fifo.str().c_str(), 0600) == 0);
  std::string error;
  SECTION("nobody reads it") {
    CHECK(TraceWriter::open(fifo.str(), &error) == nullptr);  // would block without O_NONBLOCK
    CHECK_THAT(error, Catch::Contains("FIFO"));
  }
  SECTION("somebody reads it") {
    const int reader = ::open(fifo.str().c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    CHECK(TraceWriter::open(fifo.str(), &error) == nullptr);
    CHECK_THAT(error, Catch::Contains("not a regular file"));
    ::close(reader);
  }
  SECTION("a directory, a device") {
    CHECK(TraceWriter::open("/tmp", &error) == nullptr);
    CHECK(TraceWriter::open("/dev/null", &error) == nullptr);
    CHECK_THAT(error, Catch::Contains("not a regular file"));
  }
}
