// Truncation recovery: a trace cut at any byte (the writer died mid-write) yields exactly the
// complete records before the cut, flagged truncated, and never throws. Record boundaries are
// learnt from the writer itself by flushing after every record.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

TEST_CASE("a trace cut at every byte offset yields the records before the cut", "[trace_format][truncation]") {
  TempPath path("cut");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w != nullptr);
  std::vector<std::uint64_t> ends;  // file offset just past each record
  const std::vector<std::string> expect = write_sample_trace(*w, [&] {
    REQUIRE(w->flush());
    ends.push_back(w->bytes_written());
  });
  REQUIRE(w->close());
  const std::vector<std::byte> full = read_bytes(path.str());
  REQUIRE(ends.size() == expect.size());
  REQUIRE(full.size() > ends.back());  // then the end record

  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    INFO("cut at byte " << cut << " of " << full.size());
    RecordingVisitor v;
    TraceReadResult r;
    REQUIRE_NOTHROW(r = read_trace_bytes(std::span(full).first(cut), "cut", v));
    const auto complete = static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin());
    CHECK(r.truncated);
    CHECK_FALSE(r.clean_end);
    CHECK(r.records == complete);
    REQUIRE(v.lines.size() == complete);
    CHECK(std::equal(v.lines.begin(), v.lines.end(), expect.begin()));
    const std::uint64_t last_end = complete == 0 ? (cut < 16 ? 0 : 16) : ends[complete - 1];
    CHECK(r.bytes_read == last_end);
    CHECK(r.torn_bytes == cut - last_end);
    CHECK(r.version == (cut < 16 ? 0U : 1U));
  }

  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(full, "full", v);
  CHECK(r.clean_end);
  CHECK_FALSE(r.truncated);
  CHECK(v.lines == expect);
}

TEST_CASE("a writer that dies leaves a trace readable up to its last flush", "[trace_format][truncation]") {
  TempPath path("died");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w != nullptr);
  CHECK(is_trace_file(path.str()));  // the header is on disk from the start
  const std::vector<std::string> expect = write_sample_trace(*w);
  REQUIRE(w->flush());
  // The process "dies" here: nothing more reaches the file. Cut the last record in half too.
  std::vector<std::byte> bytes = read_bytes(path.str());
  bytes.resize(bytes.size() - 3);
  TempPath cut("died-cut");
  write_bytes(cut.str(), bytes);

  RecordingVisitor whole;
  const TraceReadResult r1 = read_trace(path.str(), whole);
  CHECK(r1.truncated);
  CHECK(r1.torn_bytes == 0);
  CHECK(whole.lines == expect);

  RecordingVisitor partial;
  const TraceReadResult r2 = read_trace(cut.str(), partial);
  CHECK(r2.truncated);
  CHECK(r2.torn_bytes > 0);
  REQUIRE(partial.lines.size() == expect.size() - 1);
  CHECK(std::equal(partial.lines.begin(), partial.lines.end(), expect.begin()));
  w->close();
}
