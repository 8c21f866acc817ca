// GPU time records (tag 0x20): they round-trip with extreme values, count as records but not
// events, leave the events around them decoding exactly as without them (so readers that skip
// the tag read the same events), survive truncation at every byte, and are checked like any
// other record when corrupt. The bytes are the layout of docs/trace-format.md.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();

std::string describe_gpu(const GpuTimeRecord& r) {
  return fmt::format("gpu {} seq={} start={} end={} device={} stream={} kernel={} bytes={} copy={}", to_string(r.kind),
                     r.joined() ? std::to_string(r.event_seq) : std::string("none"), r.start_ns, r.end_ns, r.device,
                     r.stream, r.kernel.valid() ? std::to_string(r.kernel.value()) : "-", r.bytes,
                     to_string(r.copy_kind));
}

class GpuVisitor : public RecordingVisitor {
 public:
  std::vector<std::string> gpu;
  void on_gpu_time(const GpuTimeRecord& r) override { gpu.push_back(describe_gpu(r)); }
};

GpuTimeRecord record(GpuWorkKind kind, std::uint64_t seq, std::uint64_t start, std::uint64_t end) {
  GpuTimeRecord r;
  r.kind = kind;
  r.event_seq = seq;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

std::unique_ptr<TraceWriter> open_writer(const TempPath& path) {
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  INFO(error);
  REQUIRE(w != nullptr);
  return w;
}

// Events with GPU times between them (or not): what a recorder with the tracer writes.
std::vector<std::string> write_events(TraceWriter& w, bool with_gpu, std::vector<std::string>* gpu_lines) {
  std::vector<std::string> lines;
  const StringId kernel = w.intern("gemm");
  for (std::uint64_t i = 0; i < 6; ++i) {
    LaunchEvent launch;
    launch.header = EventHeader{10 + 2 * i, 1000 * i, ThreadId{3}};
    launch.kernel = kernel;
    launch.stream = StreamHandle{0x50};
    w.write(launch);
    lines.push_back(describe(launch));
    CopyEvent copy;
    copy.header = EventHeader{11 + 2 * i, 1000 * i + 5, ThreadId{3}};
    copy.dst = 0x1000 + i;
    copy.src = 0x2000;
    copy.bytes = 64;
    copy.kind = CopyKind::h2d;
    copy.stream = StreamHandle{0x60};
    w.write(copy);
    lines.push_back(describe(copy));
    if (with_gpu && i >= 1) {  // the tracer delivers a little later
      GpuTimeRecord k = record(GpuWorkKind::kernel, 10 + 2 * (i - 1), 5000 * i, 5000 * i + 700);
      k.stream = 7;
      GpuTimeRecord c = record(GpuWorkKind::copy, 11 + 2 * (i - 1), 5000 * i + 800, 5000 * i + 900);
      c.copy_kind = CopyKind::h2d;
      c.bytes = 64;
      for (const GpuTimeRecord& r : {k, c}) {
        w.write(r);
        if (gpu_lines != nullptr) gpu_lines->push_back(describe_gpu(r));
      }
    }
  }
  return lines;
}

}  // namespace

TEST_CASE("GPU times round-trip, extreme values included", "[trace_format][gpu]") {
  TempPath path("gpu_roundtrip");
  auto w = open_writer(path);
  const StringId name = w->intern("bypassed_kernel");
  std::vector<GpuTimeRecord> records{
      record(GpuWorkKind::kernel, 0, 0, 0),
      record(GpuWorkKind::copy, kMax64 - 1, kMax64, kMax64),  // the largest seq that names an event
      record(GpuWorkKind::memset, 5, 1, kMax64),
      record(GpuWorkKind::kernel, GpuTimeRecord::kNoEvent, 123, 456),
  };
  records[1].copy_kind = CopyKind::h2h;
  records[1].bytes = kMax64;
  records[1].device = std::numeric_limits<std::uint32_t>::max();
  records[1].stream = std::numeric_limits<std::uint32_t>::max();
  records[3].kernel = name;
  std::vector<std::string> expect;
  for (const GpuTimeRecord& r : records) {
    w->write(r);
    expect.push_back(describe_gpu(r));
  }
  REQUIRE(w->close());
  GpuVisitor v;
  const TraceReadResult result = read_trace(path.str(), v);
  CHECK(v.gpu == expect);
  CHECK(result.clean_end);  // the end record's counts agree: records counted, no events
  CHECK(result.records == 1 + records.size());
  CHECK(result.events == 0);
}

TEST_CASE("GPU times leave the events around them decoding as without them", "[trace_format][gpu]") {
  TempPath with_path("gpu_with");
  TempPath without_path("gpu_without");
  auto with = open_writer(with_path);
  auto without = open_writer(without_path);
  std::vector<std::string> gpu_lines;
  const auto lines = write_events(*with, true, &gpu_lines);
  CHECK(write_events(*without, false, nullptr) == lines);
  REQUIRE(with->close());
  REQUIRE(without->close());
  GpuVisitor a;
  GpuVisitor b;
  const TraceReadResult ra = read_trace(with_path.str(), a);
  const TraceReadResult rb = read_trace(without_path.str(), b);
  CHECK(a.lines == b.lines);  // every event field, delta-coded across the GPU records
  CHECK(a.gpu == gpu_lines);
  CHECK(b.gpu.empty());
  CHECK(ra.events == rb.events);
  CHECK(ra.records == rb.records + gpu_lines.size());
}

TEST_CASE("a trace with GPU times cut at any byte reads up to its last whole record", "[trace_format][gpu]") {
  TempPath path("gpu_cut");
  auto w = open_writer(path);
  std::vector<std::string> gpu_lines;
  (void)write_events(*w, true, &gpu_lines);
  REQUIRE(w->close());
  const std::vector<std::byte> bytes = read_bytes(path.str());
  std::size_t last_gpu = 0;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    GpuVisitor v;
    const TraceReadResult r = read_trace_bytes(std::span(bytes.data(), cut), "cut.trace", v);
    CHECK(r.truncated);
    CHECK(v.gpu.size() >= last_gpu);  // a longer prefix never delivers fewer
    last_gpu = v.gpu.size();
    for (std::size_t i = 0; i < v.gpu.size(); ++i) CHECK(v.gpu[i] == gpu_lines[i]);
  }
  CHECK(last_gpu == gpu_lines.size());
}

TEST_CASE("corrupt GPU time records are errors at the offending byte", "[trace_format][gpu][corruption]") {
  auto expect_error = [](const ByteBuilder& payload, std::uint64_t offset, const std::string& words) {
    ByteBuilder file;
    file.header().record(0x20, payload);
    GpuVisitor v;
    try {
      read_trace_bytes(file.bytes, "bad.trace", v);
      FAIL("no InputError");
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(e.offset() == offset);
      CHECK(e.message().find(words) != std::string::npos);
    }
  };
  auto payload = [](std::uint8_t flags, std::uint64_t seq = 0, std::uint64_t start = 0, std::uint64_t duration = 0) {
    ByteBuilder p;
    p.u8(flags).varint(seq).varint(start).varint(duration).varint(0).varint(0).varint(0).varint(0);
    return p;
  };
  expect_error(payload(0x40), 18, "unknown gpu time flag bits");
  expect_error(payload(0x03), 18, "unknown gpu work kind 3");
  expect_error(payload(0x01 | (5 << 2)), 18, "unknown copy kind 5");
  // start 2^64 - 1 (zigzag of -1 is 1) lasting 2 ns ends past 2^64.
  expect_error(payload(0x00, 0, 1, 2), 21, "ends past");
  // joined, naming seq 2^64 - 1: the value that means "no event".
  expect_error(payload(0x80, 1), 18, "2^64-1");
  ByteBuilder name;
  name.u8(0).varint(0).varint(0).varint(0).varint(0).varint(0).varint(4).varint(0);
  expect_error(name, 24, "gpu kernel name refers to undefined string id 3");
  ByteBuilder short_payload;
  short_payload.u8(0).varint(0);
  expect_error(short_payload, 20, "its gpu start");
}
