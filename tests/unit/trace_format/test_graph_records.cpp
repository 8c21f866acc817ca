// Stream capture and CUDA graphs in the trace (issue 32): graph notes (0x22) round-trip, are no
// events, and are skipped whole by a reader that predates them; a graph launch's touched list
// and opaque flag round-trip, and a graph launch written before they existed reads as opaque
// with nothing touched.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

std::string describe(const GraphNote& n) {
  return fmt::format("graph_note seq={} kind={} value={:#x} size={} stream={:#x}", n.header.seq,
                     static_cast<int>(n.kind), n.value, n.size, n.stream.value());
}

class WithGraphNotes : public RecordingVisitor {
 public:
  void on_graph_note(const GraphNote& n) override {
    notes.push_back(n);
    lines.push_back(describe(n));
  }
  std::vector<GraphNote> notes;
};

// A capture with graph memory between two allocations: every note kind, and graph launches.
void write_graph_run(TraceWriter& w) {
  const std::uint64_t touched[] = {0x10000, 0x30000};
  w.write(AllocEvent{{10, 100, ThreadId{7}}, 0x10000, 4096, MemoryKind::device, StreamHandle{3}, {}});
  w.write(GraphNote{{11, 110, ThreadId{7}}, GraphNoteKind::capture_begin, 0, 0, StreamHandle{5}});
  w.write(GraphNote{{12, 120, ThreadId{7}}, GraphNoteKind::graph_alloc, 0x20000, 512, StreamHandle{5}});
  w.write(GraphNote{{13, 130, ThreadId{7}}, GraphNoteKind::captured_work, 0, 0, StreamHandle{5}});
  w.write(GraphNote{{14, 140, ThreadId{7}}, GraphNoteKind::graph_free, 0x20000, 1, StreamHandle{5}});
  w.write(GraphNote{{15, 150, ThreadId{7}}, GraphNoteKind::capture_end, 0, 0, StreamHandle{5}});
  w.write(GraphNote{{16, 160, ThreadId{7}}, GraphNoteKind::exec_created, 0x7700, 512, StreamHandle{0}});
  w.write(AllocEvent{{17, 170, ThreadId{7}}, 0x30000, 64, MemoryKind::device, StreamHandle{3}, {}});
  w.write(GraphLaunchEvent{{18, 180, ThreadId{7}}, 0x7700, StreamHandle{3}, touched, true});
  w.write(GraphLaunchEvent{{19, 190, ThreadId{7}}, 0x8800, StreamHandle{3}, {}, false});
  w.write(GraphNote{{20, 200, ThreadId{7}}, GraphNoteKind::exec_destroyed, 0x7700, 0, StreamHandle{0}});
  w.write(FreeEvent{{21, 210, ThreadId{7}}, 0x10000, MemoryKind::device, StreamHandle{3}});
}

std::vector<std::byte> written(TempPath& path) {
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w);
  write_graph_run(*w);
  REQUIRE(w->close());
  return read_bytes(path.str());
}

}  // namespace

TEST_CASE("format: graph notes round-trip and are not events; graph launches carry their buffers",
          "[trace_format][graphs]") {
  TempPath path("graph_notes");
  (void)written(path);
  WithGraphNotes v;
  const TraceReadResult r = read_trace(path.str(), v);
  CHECK(r.clean_end);
  CHECK(r.records == 12);
  CHECK(r.events == 5);  // two allocations, two graph launches, a free
  REQUIRE(v.notes.size() == 7);
  CHECK(v.notes[0].kind == GraphNoteKind::capture_begin);
  CHECK(v.notes[0].header.seq == 11);
  CHECK(v.notes[0].stream.value() == 5);
  CHECK(v.notes[1].kind == GraphNoteKind::graph_alloc);
  CHECK(v.notes[1].value == 0x20000);
  CHECK(v.notes[1].size == 512);
  CHECK(v.notes[3].size == 1);  // freed in the capture
  CHECK(v.notes[5].value == 0x7700);
  CHECK(v.notes[6].kind == GraphNoteKind::exec_destroyed);
  const auto launch = std::find_if(v.lines.begin(), v.lines.end(),
                                   [](const std::string& l) { return l.rfind("graph_launch", 0) == 0; });
  REQUIRE(launch != v.lines.end());
  CHECK_THAT(*launch, Catch::Contains("touched=[ 0x10000 0x30000 ]") && Catch::Contains("nodes_read=true"));
  CHECK_THAT(*(launch + 1), Catch::Contains("touched=[ ]") && Catch::Contains("nodes_read=false"));
  // The events after the notes decode with their own deltas, untouched by the notes'.
  CHECK_THAT(v.lines.back(), Catch::Contains("seq=21"));
}

TEST_CASE("format: a reader that does not know graph notes reads the rest as before", "[trace_format][graphs]") {
  TempPath path("graph_notes_skipped");
  std::vector<std::byte> bytes = written(path);
  std::size_t pos = 16;
  int renamed = 0;
  while (pos < bytes.size()) {
    const auto tag = static_cast<std::uint8_t>(bytes[pos]);
    const auto length = static_cast<std::uint8_t>(bytes[pos + 1]);  // every record here is < 128 bytes
    if (tag == 0x22) {
      bytes[pos] = std::byte{0x7e};
      ++renamed;
    }
    pos += 2 + length;
  }
  REQUIRE(renamed == 7);
  RecordingVisitor older;
  const TraceReadResult r = read_trace_bytes(bytes, "older", older);
  CHECK(r.clean_end);
  RecordingVisitor current;  // knows the notes, shows none of them
  (void)read_trace(path.str(), current);
  CHECK(older.lines == current.lines);
  CHECK(older.lines.size() == 5);
}

TEST_CASE("format: a graph launch of the first form is opaque; an unknown graph note kind is corrupt",
          "[trace_format][graphs]") {
  ByteBuilder first_form;  // header, exec, stream: no touched list, no flags
  first_form.varint(2).varint(4).varint(2).varint(0x77).varint(0);
  ByteBuilder b;
  b.header().record(0x13, first_form);
  WithGraphNotes v;
  (void)read_trace_bytes(b.bytes, "first form", v);
  ByteBuilder newer;
  newer.varint(0).varint(0).varint(0).u8(7).varint(1).varint(2).varint(0);
  ByteBuilder c;
  c.header().record(0x22, newer);
  WithGraphNotes w;
  CHECK_THROWS_AS(read_trace_bytes(c.bytes, "kind", w), InputError);
  REQUIRE(v.lines.size() == 1);
  CHECK_THAT(v.lines[0],
             Catch::Contains("exec=0x77") && Catch::Contains("touched=[ ]") && Catch::Contains("nodes_read=false"));
}

TEST_CASE("format: unknown graph launch flags are corrupt", "[trace_format][graphs]") {
  ByteBuilder payload;
  payload.varint(0).varint(0).varint(0).varint(0x77).varint(0).varint(0).u8(0x82);
  ByteBuilder b;
  b.header().record(0x13, payload);
  RecordingVisitor v;
  try {
    (void)read_trace_bytes(b.bytes, "flags", v);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.offset() == 16 + 2 + 6);
    CHECK_THAT(e.message(), Catch::Contains("flag"));
  }
}
