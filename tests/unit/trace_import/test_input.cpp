// Input sniffing and load_events: each kind of file is recognised from its first bytes and
// dispatched to its reader; files without events are refused with a message saying what is
// expected.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "memtool/trace/input.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/writer.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::fixture;
using memtool::trace::testing::RecordingVisitor;
using memtool::trace::testing::TempFile;

namespace {

std::string load_error(const std::string& path) {
  RecordingVisitor visitor;
  try {
    (void)load_events(path, visitor);
  } catch (const InputError& error) {
    return error.message();
  }
  FAIL("expected an InputError for " << path);
  return {};
}

}  // namespace

TEST_CASE("input: sniffing first bytes", "[input]") {
  using namespace std::string_view_literals;
  CHECK(sniff_input_bytes("\x80\x04\x95"sv) == InputKind::snapshot_pickle);
  CHECK(sniff_input_bytes("\x80\x02}"sv) == InputKind::snapshot_pickle);
  CHECK(sniff_input_bytes("{\"segments\": []") == InputKind::snapshot_json);
  CHECK(sniff_input_bytes(" \r\n\t{") == InputKind::snapshot_json);
  CHECK(sniff_input_bytes("id,lower,upper,size\n") == InputKind::problem_csv);
  CHECK(sniff_input_bytes("[1, 2]") == InputKind::unknown);
  CHECK(sniff_input_bytes("A 1 0x10 8\n") == InputKind::unknown);
  CHECK(sniff_input_bytes("") == InputKind::unknown);
  CHECK(sniff_input_bytes("id;lower") == InputKind::unknown);
  // Random or zero bytes are no input (issue 39): a pickle names a protocol PyTorch writes, a
  // JSON head has no control bytes and is UTF-8.
  CHECK(sniff_input_bytes("\x80\xff\x00"sv) == InputKind::unknown);
  CHECK(sniff_input_bytes("\x80"sv) == InputKind::unknown);
  CHECK(sniff_input_bytes("{\"a\": \x00\x00"sv) == InputKind::unknown);
  CHECK(sniff_input_bytes("{\"a\": \"\xff\xfe\""sv) == InputKind::unknown);
  CHECK(sniff_input_bytes("{\"caf\xc3\xa9\": \"\xe2\x82"sv) == InputKind::snapshot_json);  // cut in a sequence

  CHECK(sniff_input(fixture("snapshots/small.p2.pickle")) == InputKind::snapshot_pickle);
  CHECK(sniff_input(fixture("snapshots/alexnet.p4.pickle")) == InputKind::snapshot_pickle);
  CHECK(sniff_input(fixture("traces/alexnet.snapshot.json")) == InputKind::snapshot_json);
  CHECK(sniff_input(fixture("planner/minimalloc-challenging-A.csv")) == InputKind::problem_csv);
  CHECK(sniff_input(fixture("traces/alexnet.log")) == InputKind::unknown);
  CHECK_THROWS_AS(sniff_input(fixture("no-such-file")), InputError);
  CHECK(to_string(InputKind::snapshot_json) == "PyTorch memory snapshot (JSON)");
}

TEST_CASE("input: load_events reads snapshots in either encoding", "[input]") {
  for (const char* name : {"snapshots/small.json", "snapshots/small.p4.pickle"}) {
    INFO(name);
    RecordingVisitor visitor;
    const LoadSummary summary = load_events(fixture(name), visitor);
    REQUIRE(summary.snapshot.has_value());
    CHECK_FALSE(summary.trace.has_value());
    CHECK(summary.events == 7);  // 4 allocs + 3 frees
    CHECK(summary.events == visitor.allocs.size() + visitor.frees.size());
    CHECK_FALSE(summary.truncated);
    CHECK(summary.snapshot->device == 1);
  }
  LoadOptions options;
  options.snapshot.device = 0;
  RecordingVisitor visitor;
  const LoadSummary device0 = load_events(fixture("snapshots/small.p2.pickle"), visitor, options);
  CHECK(device0.kind == InputKind::snapshot_pickle);
  CHECK(device0.events == 2);
}

TEST_CASE("input: load_events reads memtool traces through the trace reader", "[input]") {
  TempFile file("roundtrip.trace");
  {
    std::string error;
    auto writer = TraceWriter::open(file.path(), &error);
    REQUIRE(writer != nullptr);
    const StringId kernel = writer->intern("sgemm");
    writer->write(AllocEvent{EventHeader{0, 10, ThreadId{1}}, 0x1000, 256, MemoryKind::device, StreamHandle{0}, {}});
    const std::uint64_t touched[] = {0x1000};
    writer->write(LaunchEvent{EventHeader{1, 20, ThreadId{1}}, kernel, StreamHandle{0}, touched});
    writer->write(FreeEvent{EventHeader{2, 30, ThreadId{1}}, 0x1000, MemoryKind::device, StreamHandle{0}});
    REQUIRE(writer->close());
  }
  CHECK(sniff_input(file.path()) == InputKind::trace);
  RecordingVisitor visitor;
  const LoadSummary summary = load_events(file.path(), visitor);
  CHECK(summary.kind == InputKind::trace);
  REQUIRE(summary.trace.has_value());
  CHECK_FALSE(summary.snapshot.has_value());
  CHECK(summary.events == 3);
  CHECK_FALSE(summary.truncated);
  REQUIRE(visitor.allocs.size() == 1);
  CHECK(visitor.allocs[0].size == 256);
  CHECK(visitor.frees.size() == 1);
}

TEST_CASE("input: files without events are refused, saying what is expected", "[input]") {
  CHECK_THAT(load_error(fixture("planner/minimalloc-challenging-A.csv")), Catch::Contains("planner problem"));
  const std::string unknown = load_error(fixture("traces/alexnet.log"));
  CHECK_THAT(unknown, Catch::Contains("expected a memtool trace"));
  CHECK_THAT(unknown, Catch::Contains("0x80"));
  CHECK_THAT(load_error(fixture("no-such-file")), Catch::Contains("cannot open"));
  TempFile empty("empty");
  empty.write("");
  CHECK_THAT(load_error(empty.path()), Catch::Contains("unrecognised input"));
}
