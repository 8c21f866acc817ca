// Round trip: every record type and field written by TraceWriter comes back unchanged from
// the reader, extreme values included; interning writes each definition once; unknown record
// types and trailing fields are skipped (forward compatibility); the encoding is compact.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();

std::unique_ptr<TraceWriter> open_writer(const TempPath& path, std::size_t buffer = 1 << 20) {
  std::string error;
  auto w = TraceWriter::open(path.str(), TraceWriter::Options{buffer}, &error);
  INFO(error);
  REQUIRE(w != nullptr);
  return w;
}

}  // namespace

TEST_CASE("every record type round-trips", "[trace_format]") {
  TempPath path("roundtrip");
  auto w = open_writer(path);
  const std::vector<std::string> expect = write_sample_trace(*w);
  REQUIRE(w->close());
  REQUIRE_FALSE(w->failed());

  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(v.lines == expect);
  CHECK(r.version == 1);
  CHECK(r.clean_end);
  CHECK_FALSE(r.truncated);
  CHECK(r.torn_bytes == 0);
  CHECK(r.records == expect.size());
  CHECK(r.records == w->records_written());
  CHECK(r.events == 11);
  CHECK(r.bytes_read == read_bytes(path.str()).size());
  CHECK(r.bytes_read == w->bytes_written());
  CHECK(is_trace_file(path.str()));
}

TEST_CASE("extreme field values round-trip", "[trace_format]") {
  TempPath path("extreme");
  auto w = open_writer(path);
  std::vector<std::string> expect;
  auto add = [&](const auto& event) {
    w->write(event);
    expect.push_back(describe(event));
  };
  const StringId name = w->intern("k");
  expect.emplace_back("string 0=k");
  const StackFrame frames[] = {{kMax64, name, name, kMax32}, {0, {}, {}, 0}, {kMax64, {}, name, 1}};
  const StackId stack = w->intern_stack(frames);
  expect.push_back(describe_stack(stack, frames));
  const ModuleMapping backwards{kMax64, 0, kMax64, {}};  // end before start still round-trips
  w->write_module(backwards);
  expect.push_back(describe(backwards));

  // Alternate between the ends of every range so each delta is as large as it gets.
  const std::uint64_t values[] = {0, kMax64, 1, kMax64 - 1, 0x8000000000000000ULL, 0};
  for (const std::uint64_t x : values) {
    const EventHeader h{x, kMax64 - x, ThreadId{static_cast<std::uint32_t>(x)}};
    for (const MemoryKind kind :
         {MemoryKind::device, MemoryKind::async, MemoryKind::managed, MemoryKind::vmm, MemoryKind::pinned_host}) {
      add(AllocEvent{h, x, kMax64 - x, kind, StreamHandle{kMax64 - x}, stack});
      add(FreeEvent{h, kMax64 - x, kind, StreamHandle{x}});
    }
    for (const CopyKind kind : {CopyKind::unknown, CopyKind::h2d, CopyKind::d2h, CopyKind::d2d, CopyKind::h2h}) {
      add(CopyEvent{h, x, kMax64 - x, x, kind, (x & 1) != 0, StreamHandle{x}});
      add(CopyEvent{h, kMax64, 0, kMax64, kind, (x & 1) == 0, StreamHandle{kMax64}});
    }
    for (const SyncKind kind : {SyncKind::context, SyncKind::stream, SyncKind::event, SyncKind::stream_wait_event}) {
      add(SyncEvent{h, kind, StreamHandle{kMax64 - x}});
    }
    const std::uint64_t touched[] = {x, kMax64 - x, 0, kMax64};
    add(LaunchEvent{h, name, StreamHandle{x}, touched});
    add(LaunchEvent{h, StringId{}, StreamHandle{0}, {}});
    add(GraphLaunchEvent{h, kMax64 - x, StreamHandle{x}, {}, false});
    add(GraphLaunchEvent{h, x, StreamHandle{kMax64 - x}, touched, true});
    add(MemsetEvent{h, x, kMax64, true, StreamHandle{x}});
    add(MemsetEvent{h, kMax64, 0, false, StreamHandle{0}});
    add(IterationMarkEvent{h, x});
    add(StreamCreateEvent{h, StreamHandle{x}, kMax32, std::numeric_limits<std::int32_t>::min()});
    add(StreamCreateEvent{h, StreamHandle{kMax64}, 0, std::numeric_limits<std::int32_t>::max()});
  }
  w->write_metadata("", "");
  expect.emplace_back("metadata =");
  REQUIRE(w->close());

  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  REQUIRE(v.lines.size() == expect.size());
  for (std::size_t i = 0; i < expect.size(); ++i) {
    INFO("record " << i);
    CHECK(v.lines[i] == expect[i]);
  }
}

TEST_CASE("strings and stacks are interned once with ids in first-use order", "[trace_format]") {
  TempPath path("intern");
  auto w = open_writer(path);
  const StringId a = w->intern("alpha");
  const StringId b = w->intern("beta");
  CHECK(a.value() == 0);
  CHECK(b.value() == 1);
  CHECK(w->intern("alpha") == a);
  CHECK(w->intern(std::string("beta")) == b);
  const std::string with_nul("a\0b", 3);
  const StringId c = w->intern(with_nul);
  const StringId empty = w->intern("");
  CHECK(c.value() == 2);
  CHECK(empty.value() == 3);
  CHECK(w->intern(std::string_view("a\0b", 3)) == c);
  const StringId just_a = w->intern("a");  // a prefix of "a\0b", still another string
  CHECK(just_a.value() == 4);

  const StackFrame s1[] = {{1, a, b, 3}, {2, {}, {}, 0}};
  const StackFrame s2[] = {{1, a, b, 4}, {2, {}, {}, 0}};  // differs in one line number
  const StackId k1 = w->intern_stack(s1);
  const StackId k2 = w->intern_stack(s2);
  CHECK(k1.value() == 0);
  CHECK(k2.value() == 1);
  CHECK(w->intern_stack(s1) == k1);
  CHECK(w->intern_stack(s2) == k2);
  CHECK(w->intern_stack({}) == StackId{2});
  CHECK(w->intern_stack(std::span<const StackFrame>(s1, 1)) == StackId{3});
  const std::uint64_t definitions = w->records_written();
  CHECK(definitions == 9);  // 5 strings + 4 stacks, each written once
  REQUIRE(w->close());

  RecordingVisitor v;
  read_trace(path.str(), v);
  const std::vector<std::string> expect{"string 0=alpha",
                                        "string 1=beta",
                                        "string 2=" + with_nul,
                                        "string 3=",
                                        "string 4=a",
                                        "stack 0 [ 0x1/0/1/3 0x2/4294967295/4294967295/0 ]",
                                        "stack 1 [ 0x1/0/1/4 0x2/4294967295/4294967295/0 ]",
                                        "stack 2 [ ]",
                                        "stack 3 [ 0x1/0/1/3 ]"};
  CHECK(v.lines == expect);
}

TEST_CASE("records larger than the buffer stream through it", "[trace_format]") {
  TempPath path("large");
  auto w = open_writer(path, 4096);  // the smallest buffer the writer accepts
  std::string long_name(200000, 'x');
  for (std::size_t i = 0; i < long_name.size(); i += 7) long_name[i] = static_cast<char>('a' + i % 26);
  const StringId name = w->intern(long_name);
  std::vector<StackFrame> frames;
  for (std::uint32_t i = 0; i < 10000; ++i) frames.push_back({0x400000 + i * 97ULL, name, {}, i});
  const StackId stack = w->intern_stack(frames);
  std::vector<std::uint64_t> touched;
  for (std::uint64_t i = 0; i < 5000; ++i) touched.push_back(0x7f0000000000 + (i * 7919) % 100000);
  const LaunchEvent launch{{1, 2, ThreadId{3}}, name, StreamHandle{4}, touched};
  w->write(launch);
  REQUIRE(w->close());

  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  REQUIRE(v.lines.size() == 3);
  CHECK(v.lines[0] == "string 0=" + long_name);
  CHECK(v.lines[1] == describe_stack(stack, frames));
  CHECK(v.lines[2] == describe(launch));
}

TEST_CASE("ids the writer never defined travel as none", "[trace_format]") {
  TempPath path("undefined");
  auto w = open_writer(path);
  w->write(LaunchEvent{{1, 1, ThreadId{1}}, StringId{5}, StreamHandle{0}, {}});
  w->write(AllocEvent{{2, 2, ThreadId{1}}, 0x1000, 16, MemoryKind::device, StreamHandle{0}, StackId{9}});
  REQUIRE(w->close());
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  REQUIRE(v.lines.size() == 2);
  CHECK(v.lines[0].find("kernel=4294967295") != std::string::npos);
  CHECK(v.lines[1].find("stack=4294967295") != std::string::npos);
}

TEST_CASE("close is final and idempotent and open reports errors", "[trace_format]") {
  TempPath path("close");
  auto w = open_writer(path);
  w->write(IterationMarkEvent{{1, 1, ThreadId{1}}, 0});
  REQUIRE(w->close());
  const std::uint64_t bytes = w->bytes_written();
  w->write(IterationMarkEvent{{2, 2, ThreadId{1}}, 1});  // dropped
  CHECK(w->close());
  CHECK(w->bytes_written() == bytes);
  CHECK(read_bytes(path.str()).size() == bytes);
  RecordingVisitor v;
  CHECK(read_trace(path.str(), v).events == 1);

  std::string error;
  CHECK(TraceWriter::open("/nonexistent-dir/x.trace", &error) == nullptr);
  CHECK(error.find("/nonexistent-dir/x.trace") != std::string::npos);
  CHECK_THROWS_AS(read_trace("/nonexistent-dir/x.trace", v), InputError);
  CHECK_FALSE(is_trace_file("/nonexistent-dir/x.trace"));
}

TEST_CASE("unknown record types and trailing fields are skipped", "[trace_format]") {
  ByteBuilder alloc;  // seq 5, t 9, thread 1, address 0x100, size 64, device, stream 0, no stack
  alloc.varint(10).varint(18).varint(2).varint(0x200).varint(64).u8(0).varint(0).varint(0);
  ByteBuilder alloc_with_extra = alloc;
  alloc_with_extra.raw("future field");
  ByteBuilder unknown;
  unknown.raw("a record of a later minor revision");
  ByteBuilder end;
  end.varint(3).varint(2).varint(0).varint(0);
  ByteBuilder file;
  file.header().record(0x10, alloc).record(0x45, unknown).record(0x10, alloc_with_extra).record(0x7f, end);
  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(file.bytes, "handmade", v);
  CHECK(r.clean_end);
  CHECK(r.records == 3);
  CHECK(r.events == 2);
  REQUIRE(v.lines.size() == 2);
  CHECK(v.lines[0] == "alloc seq=5 t=9 thread=1 addr=0x100 size=64 kind=device stream=0x0 stack=4294967295");
  CHECK(v.lines[1] == "alloc seq=10 t=18 thread=2 addr=0x200 size=64 kind=device stream=0x0 stack=4294967295");
}

TEST_CASE("a typical event stream is compact", "[trace_format]") {
  TempPath path("compact");
  auto w = open_writer(path);
  const StringId kernel = w->intern("void at::native::vectorized_elementwise_kernel<4>");
  const StreamHandle stream{0x5555deadb000};
  std::uint64_t seq = 0;
  std::uint64_t t = 1'700'000'000'000'000'000ULL;
  constexpr int kSteps = 1000;
  for (int i = 0; i < kSteps; ++i) {
    const std::uint64_t a = 0x7f3a40000000ULL + static_cast<std::uint64_t>(i % 64) * 0x100000;
    const std::uint64_t touched[] = {a, a - 0x100000};
    w->write(AllocEvent{{++seq, t += 850, ThreadId{31337}}, a, 4096, MemoryKind::device, stream, {}});
    w->write(LaunchEvent{{++seq, t += 1200, ThreadId{31337}}, kernel, stream, touched});
    w->write(FreeEvent{{++seq, t += 640, ThreadId{31337}}, a, MemoryKind::device, stream});
  }
  REQUIRE(w->close());
  const double per_event = static_cast<double>(w->bytes_written()) / (3.0 * kSteps);
  INFO("bytes per event: " << per_event);
  // Fixed-width fields would take 40-60 bytes an event; deltas and varints bring it near 12.
  CHECK(per_event < 14.0);
}

TEST_CASE("progress reports reach the end of the file", "[trace_format]") {
  TempPath path("progress");
  auto w = open_writer(path);
  write_sample_trace(*w);
  REQUIRE(w->close());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  TraceReadOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t total) { calls.emplace_back(done, total); };
  RecordingVisitor v;
  const TraceReadResult r = read_trace(path.str(), v, options);
  REQUIRE_FALSE(calls.empty());
  CHECK(calls.back().first == r.bytes_read);
  CHECK(calls.back().second == r.bytes_read);
}

// The hex dump in docs/trace-format.md ("## Example") is what the writer produces, byte for byte.
TEST_CASE("the documented example is the writer's output", "[trace_format][docs]") {
  std::ifstream doc(std::string(MEMTOOL_SOURCE_DIR) + "/docs/trace-format.md");
  REQUIRE(doc);
  std::vector<std::byte> documented;
  bool in_example = false;
  bool in_block = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) in_example = line == "## Example";
    if (!in_example) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      continue;
    }
    if (!in_block) continue;
    std::istringstream words(line);
    for (std::string w; words >> w && w.size() == 2 && std::isxdigit(w[0]) && std::isxdigit(w[1]);) {
      documented.push_back(static_cast<std::byte>(std::stoul(w, nullptr, 16)));
    }
  }
  REQUIRE(documented.size() > 16);

  TempPath path("doc-example");
  auto w = open_writer(path);
  const StringId k = w->intern("k");
  CHECK(k.value() == 0);
  w->write(AllocEvent{{5, 9, ThreadId{1}}, 0x100, 64, MemoryKind::device, StreamHandle{0}, {}});
  REQUIRE(w->close());
  CHECK(read_bytes(path.str()) == documented);

  RecordingVisitor v;
  const TraceReadResult r = read_trace_bytes(documented, "doc", v);
  CHECK(r.clean_end);
  CHECK(v.lines ==
        std::vector<std::string>{
            "string 0=k", "alloc seq=5 t=9 thread=1 addr=0x100 size=64 kind=device stream=0x0 stack=4294967295"});
}

// A pipe cannot be mapped: the reader falls back to reading it into memory.
TEST_CASE("a trace read through a pipe", "[trace_format]") {
  TempPath path("pipe-src");
  auto w = open_writer(path);
  const std::vector<std::string> expect = write_sample_trace(*w);
  REQUIRE(w->close());
  const std::vector<std::byte> bytes = read_bytes(path.str());

  TempPath fifo("pipe");
  REQUIRE(::mkfifo(fifo.str().c_str(), 0600) == 0);
  std::thread feeder([&] { write_bytes(fifo.str(), bytes); });
  RecordingVisitor v;
  TraceReadResult r;
  try {
    r = read_trace(fifo.str(), v);
  } catch (...) {
    feeder.join();
    throw;
  }
  feeder.join();
  CHECK(r.clean_end);
  CHECK(v.lines == expect);
}
