// Options::max_bytes: the writer ends the trace before the file passes the limit, with an end
// record whose counts match what the file holds, tells on_limit once, and ignores what follows.
#include <catch2/catch.hpp>

#include <filesystem>

#include <fmt/format.h>

#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {
struct LimitSeen {
  int calls = 0;
  std::uint64_t events = 0;
};
}  // namespace

TEST_CASE("a size limit ends the trace cleanly before the file passes it", "[trace_format][limit]") {
  const std::uint64_t limit = GENERATE(std::uint64_t{600}, std::uint64_t{5000}, std::uint64_t{70000});
  INFO("limit " << limit);
  TempPath path("limit");
  LimitSeen seen;
  TraceWriter::Options options{4096};
  options.max_bytes = limit;
  options.on_limit = [](void* context, std::uint64_t events) {
    auto& s = *static_cast<LimitSeen*>(context);
    ++s.calls;
    s.events = events;
  };
  options.on_limit_context = &seen;
  std::string error;
  auto w = TraceWriter::open(path.str(), options, &error);
  REQUIRE(w != nullptr);
  w->write_metadata("pid", "42");
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    // New names and stacks along the way: definitions count against the limit too.
    const StringId kernel = w->intern(fmt::format("kernel_{}", i % 50));
    const StackFrame frame{0x400000 + (i % 30) * 16, kernel, StringId{}, 0};
    const StackId stack = w->intern_stack(std::span<const StackFrame>(&frame, 1));
    w->write(AllocEvent{{seq, seq * 10, ThreadId{1}}, 0x1000 * i, 64, MemoryKind::device, StreamHandle{0}, stack});
    ++seq;
    const std::uint64_t touched[] = {0x1000 * i};
    w->write(LaunchEvent{{seq, seq * 10, ThreadId{1}}, kernel, StreamHandle{0}, touched});
    ++seq;
  }
  CHECK(w->limit_reached());
  CHECK(seen.calls == 1);
  CHECK(w->close());  // closing again after the limit is fine
  CHECK_FALSE(w->failed());

  CHECK(std::filesystem::file_size(path.str()) <= limit);
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);  // the end record's counts match the file (the reader checks them)
  CHECK_FALSE(r.truncated);
  CHECK(r.events == seen.events);
  CHECK(r.events < 2 * 20000);
  if (limit >= 5000) CHECK(r.events > 0);
}

TEST_CASE("no limit by default", "[trace_format][limit]") {
  TempPath path("nolimit");
  std::string error;
  auto w = TraceWriter::open(path.str(), TraceWriter::Options{4096}, &error);
  REQUIRE(w != nullptr);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    w->write(AllocEvent{{i, i, ThreadId{1}}, 0x1000 * i, 64, MemoryKind::device, StreamHandle{0}, {}});
  }
  CHECK_FALSE(w->limit_reached());
  REQUIRE(w->close());
  RecordingVisitor v;
  CHECK(read_trace(path.str(), v).events == 5000);
}
