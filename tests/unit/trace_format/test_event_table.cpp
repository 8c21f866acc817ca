// The event table (trace/core/include/memtool/trace/events.def) and what is generated from it:
// every kind round-trips with every field set, a note leaves the running state and the event
// count alone, and docs/trace-format.md lists every kind's tag. A kind added to the table is
// covered here without a new line of test.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "memtool/trace/reader.hpp"
#include "memtool/trace/writer.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

namespace {

const std::uint64_t kTouched[] = {0x7f0000001000, 0x10, 0xffffffffffffff00};

// A value other than the member's initial one, with high bits where the type has them, so a
// field that is dropped, swapped with another or cut shows.
struct Filler {
  StringId string;
  StackId stack;
  std::uint64_t salt = 0;

  void operator()(std::uint64_t& v) { v = 0xfedcba9876543210ULL ^ (salt++ << 8); }
  void operator()(std::uint32_t& v) { v = 0xfedcba98U - static_cast<std::uint32_t>(salt++); }
  void operator()(std::int32_t& v) { v = std::numeric_limits<std::int32_t>::min() + static_cast<std::int32_t>(salt++); }
  void operator()(bool& v) { v = true; }
  void operator()(StreamHandle& v) { v = StreamHandle{0x5555000000000000ULL + salt++}; }
  void operator()(StringId& v) { v = string; }
  void operator()(StackId& v) { v = stack; }
  void operator()(std::span<const std::uint64_t>& v) { v = kTouched; }
  template <class Enum>
  requires std::is_enum_v<Enum>
  void operator()(Enum& v) { v = static_cast<Enum>(1); }
};

bool same(const auto& a, const auto& b) { return a == b; }
bool same(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

template <class Event>
bool same_event(const Event& a, const Event& b) {
  bool equal =
      a.header.seq == b.header.seq && a.header.time_ns == b.header.time_ns && a.header.thread == b.header.thread;
  std::vector<const void*> fields_a;
  EventTraits<Event>::for_each_field(
      a, [&](auto, const char*, const auto&... member) { (fields_a.push_back(&member), ...); });
  std::size_t i = 0;
  EventTraits<Event>::for_each_field(b, [&](auto, const char* what, const auto&... member) {
    auto check = [&](const auto& mb) {
      const auto& ma = *static_cast<const std::remove_cvref_t<decltype(mb)>*>(fields_a[i++]);
      if (!same(ma, mb)) {
        UNSCOPED_INFO("field " << what << " differs");
        equal = false;
      }
    };
    (check(member), ...);
  });
  return equal;
}

// Keeps the one event of kind `Event` it is given (the touched list copied out of the reader).
template <class Event>
class Capture : public EventVisitor {
 public:
  std::vector<Event> events;
  std::vector<std::vector<std::uint64_t>> touched;

#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void on_##name(const Type& e) override { keep(e); }
#include "memtool/trace/events.def"

 private:
  template <class Other>
  void keep(const Other& e) {
    if constexpr (std::is_same_v<Other, Event>) {
      events.push_back(e);
      if constexpr (requires { e.touched; }) {
        touched.emplace_back(e.touched.begin(), e.touched.end());
        events.back().touched = touched.back();
      }
    }
  }
};

template <class Event>
void check_round_trip() {
  INFO(to_string(EventTraits<Event>::kind));
  TempPath path("table");
  std::string error;
  auto w = TraceWriter::open(path.str(), &error);
  REQUIRE(w != nullptr);
  const StackFrame frame{0x401000, StringId{}, StringId{}, 7};
  Filler fill{w->intern("name"), w->intern_stack(std::span<const StackFrame>(&frame, 1))};
  Event event;
  event.header = EventHeader{0x123456789, 0xabcdef0123, ThreadId{4242}};
  EventTraits<Event>::for_each_field(event, [&](auto, const char*, auto&... member) { (fill(member), ...); });
  const Event initial;
  CHECK_FALSE(same_event(event, initial));  // every field was given a value of its own
  w->write(event);
  event.header.seq += 1;
  w->write(event);  // a second one: deltas from the state the first left
  REQUIRE(w->close());

  Capture<Event> capture;
  const TraceReadResult r = read_trace(path.str(), capture);
  CHECK(r.clean_end);
  REQUIRE(capture.events.size() == 2);
  CHECK(same_event(capture.events[1], event));
  event.header.seq -= 1;
  CHECK(same_event(capture.events[0], event));
  CHECK(r.events == (EventTraits<Event>::is_event ? 2u : 0u));
}

// The bytes of the records of a trace, in order, without the header line (every record of
// these small traces has a one-byte length).
std::vector<std::vector<std::byte>> records_of(const std::vector<std::byte>& file) {
  std::vector<std::vector<std::byte>> records;
  for (std::size_t at = std::string_view("MEMTOOL-TRACE 1\n").size(); at + 1 < file.size();) {
    const auto length = static_cast<std::size_t>(file[at + 1]);
    REQUIRE(length < 128);
    records.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(at),
                         file.begin() + static_cast<std::ptrdiff_t>(at + 2 + length));
    at += 2 + length;
  }
  return records;
}

// A note between two events changes neither the bytes of the event after it nor the event
// count: a reader that predates it skips it whole and reads the rest exactly as before.
template <class Note>
void check_note_leaves_state() {
  INFO(to_string(EventTraits<Note>::kind));
  TempPath with_note("with_note");
  TempPath without("without_note");
  for (const TempPath* path : {&with_note, &without}) {
    std::string error;
    auto w = TraceWriter::open(path->str(), &error);
    REQUIRE(w != nullptr);
    w->write(AllocEvent{{1, 10, ThreadId{1}}, 0x1000, 64, MemoryKind::device, StreamHandle{3}, StackId{}});
    if (path == &with_note) {
      Note note;
      note.header = EventHeader{99, 99999, ThreadId{77}};
      Filler fill;
      EventTraits<Note>::for_each_field(note, [&](auto, const char*, auto&... member) { (fill(member), ...); });
      w->write(note);
    }
    w->write(FreeEvent{{2, 20, ThreadId{1}}, 0x1000, MemoryKind::device, StreamHandle{3}});
    REQUIRE(w->close());
  }
  const auto a = records_of(read_bytes(with_note.str()));
  const auto b = records_of(read_bytes(without.str()));
  REQUIRE(a.size() == 4);  // alloc, note, free, end
  REQUIRE(b.size() == 3);
  CHECK(static_cast<unsigned>(a[1][0]) == EventTraits<Note>::tag);
  CHECK(a[0] == b[0]);
  CHECK(a[2] == b[1]);
  RecordingVisitor v;
  const TraceReadResult ra = read_trace(with_note.str(), v);
  const TraceReadResult rb = read_trace(without.str(), v);
  CHECK(ra.events == rb.events);
  CHECK(ra.records == rb.records + 1);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every kind of the event table round-trips with every field set", "[trace_format][event_table]") {
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) check_round_trip<Type>();
#include "memtool/trace/events.def"
}

TEST_CASE("a note of the event table leaves the running state and the event count alone",
          "[trace_format][event_table]") {
  int notes = 0;
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  if constexpr (EventRole::role == EventRole::note) {      \
    check_note_leaves_state<Type>();                       \
    ++notes;                                               \
  }
#include "memtool/trace/events.def"
  CHECK(notes > 0);
}

TEST_CASE("docs/trace-format.md lists every kind of the event table", "[trace_format][event_table]") {
  const std::string doc = read_text(std::string(MEMTOOL_SOURCE_DIR) + "/docs/trace-format.md");
  auto row = [](unsigned tag) { return fmt::format("| 0x{:02x} |", tag); };
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  {                                                        \
    INFO(#name);                                           \
    CHECK(doc.find(row(tag)) != std::string::npos);        \
  }
#include "memtool/trace/events.def"
  CHECK(doc.find(row(0x7e)) == std::string::npos);  // the check can fail
}
