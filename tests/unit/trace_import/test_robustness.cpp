// Truncated, corrupt and hostile inputs: every importer either succeeds or throws InputError —
// never crashes, hangs, or throws anything else — and the fuzzers' regression files replay.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::fixture;
using memtool::trace::testing::PickleBuilder;
using memtool::trace::testing::read_bytes;
using memtool::trace::testing::RecordingVisitor;
using memtool::trace::testing::source_path;

namespace {

enum class Reader { pickle, snapshot_json, problem_csv };

// Runs one reader; true when it accepted the input, false on InputError. Any other exception
// escapes and fails the test.
bool accepts(Reader reader, std::string_view bytes) {
  RecordingVisitor visitor;
  try {
    switch (reader) {
      case Reader::pickle:
        (void)import_snapshot_pickle(bytes, "input", visitor);
        break;
      case Reader::snapshot_json:
        (void)import_snapshot_json(bytes, "input", visitor);
        break;
      case Reader::problem_csv:
        (void)parse_problem_csv(bytes, "input");
        break;
    }
  } catch (const InputError& error) {
    CHECK(error.offset() <= bytes.size());
    return false;
  }
  return true;
}

std::string message_of(Reader reader, std::string_view bytes) {
  RecordingVisitor visitor;
  try {
    if (reader == Reader::pickle) (void)import_snapshot_pickle(bytes, "input", visitor);
    if (reader == Reader::snapshot_json) (void)import_snapshot_json(bytes, "input", visitor);
  } catch (const InputError& error) {
    return error.message();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("robustness: every truncation of a pickle or JSON snapshot is an InputError", "[robustness]") {
  for (const char* name : {"snapshots/small.p2.pickle", "snapshots/small.p3.pickle", "snapshots/small.p4.pickle"}) {
    const std::string bytes = read_bytes(fixture(name));
    REQUIRE(accepts(Reader::pickle, bytes));
    std::size_t rejected = 0;
    for (std::size_t length = 0; length < bytes.size(); ++length) {
      rejected += accepts(Reader::pickle, std::string_view(bytes).substr(0, length)) ? 0 : 1;
    }
    INFO(name);
    CHECK(rejected == bytes.size());
  }
  const std::string json = read_bytes(fixture("snapshots/small.json"));
  REQUIRE(accepts(Reader::snapshot_json, json));
  std::size_t rejected = 0;
  for (std::size_t length = 0; length < json.size(); ++length) {
    rejected += accepts(Reader::snapshot_json, std::string_view(json).substr(0, length)) ? 0 : 1;
  }
  CHECK(rejected == json.size());
}

TEST_CASE("robustness: corrupting any byte never crashes", "[robustness]") {
  const std::string pickle = read_bytes(fixture("snapshots/small.p4.pickle"));
  const std::string json = read_bytes(fixture("snapshots/small.json"));
  std::size_t pickle_rejected = 0;
  std::size_t json_rejected = 0;
  for (char replacement : {'\x00', '\xff', '\x80', 'X', '('}) {
    for (std::size_t at = 0; at < pickle.size(); ++at) {
      std::string corrupt = pickle;
      corrupt[at] = replacement;
      pickle_rejected += accepts(Reader::pickle, corrupt) ? 0 : 1;
    }
    for (std::size_t at = 0; at < json.size(); ++at) {
      std::string corrupt = json;
      corrupt[at] = replacement;
      json_rejected += accepts(Reader::snapshot_json, corrupt) ? 0 : 1;
    }
  }
  // Many corruptions land in ignored data; many must be caught.
  CHECK(pickle_rejected > pickle.size());
  CHECK(json_rejected > json.size());
}

TEST_CASE("robustness: memo references cannot multiply the work of a small pickle", "[robustness]") {
  // One entry dict with 3000 junk keys, referenced 3000 times through the memo: 6 KB of
  // references asking for 9 M key visits.
  PickleBuilder b;
  b.proto(4)
      .op('}')
      .short_text("device_traces")
      .op(']')
      .op(']')
      .op('}')
      .op(std::uint8_t{0x94})
      .op('(')
      .short_text("action")
      .short_text("alloc")
      .short_text("addr")
      .int1(1)
      .short_text("size")
      .int1(8);
  for (int k = 0; k < 3000; ++k) b.short_text(fmt::format("k{:04d}", k)).int1(0);
  b.op('u').op('a').op('(');
  for (int i = 0; i < 3000; ++i) b.op('j').le(0, 4);
  b.op('e').op('a').op('s').stop();
  const std::string message = message_of(Reader::pickle, b.bytes());
  CHECK_THAT(message, Catch::Contains("shared references"));
}

TEST_CASE("robustness: hostile shapes are refused or ignored, quickly", "[robustness]") {
  // A doubling chain of memoised lists (2^60 leaves if expanded) under an ignored key.
  PickleBuilder bomb;
  bomb.proto(4)
      .op('}')
      .op('(')
      .short_text("device_traces")
      .op(']')
      .short_text("bomb")
      .op(']')
      .int1(1)
      .op('a')
      .op(std::uint8_t{0x94});
  for (std::uint64_t level = 0; level < 60; ++level) {
    bomb.op('0').op(']').op('(').op('j').le(level, 4).op('j').le(level, 4).op('e').op(std::uint8_t{0x94});
  }
  bomb.op('u').stop();
  CHECK(accepts(Reader::pickle, bomb.bytes()));

  // The same chain as device_traces: refused at the first entry that is not a dict.
  PickleBuilder traces;
  traces.proto(4).op('}').short_text("device_traces").op(']').int1(1).op('a').op(std::uint8_t{0x94});
  for (std::uint64_t level = 0; level < 60; ++level) {
    traces.op('0').op(']').op('(').op('j').le(level, 4).op('j').le(level, 4).op('e').op(std::uint8_t{0x94});
  }
  traces.op('s').stop();
  CHECK_THAT(message_of(Reader::pickle, traces.bytes()), Catch::Contains("expected a dict"));

  // A payload that would run a command in Python is only ever an opaque value here.
  PickleBuilder payload;
  payload.proto(2).op('c').raw("os\nsystem\n").text("rm -rf /").op(std::uint8_t{0x85}).op('R').stop();
  CHECK_THAT(message_of(Reader::pickle, payload.bytes()), Catch::Contains("this document is a object"));

  // 100k unclosed brackets, and 100k closed ones: no recursion anywhere.
  std::string deep(100000, '[');
  CHECK_FALSE(accepts(Reader::snapshot_json, deep));
  deep += std::string(100000, ']');
  CHECK_THAT(message_of(Reader::snapshot_json, deep), Catch::Contains("this document is a list"));
  CHECK_FALSE(accepts(Reader::snapshot_json, "{\"device_traces\": [[" + std::string(100000, '{')));

  // 200k MARKs and a giant declared length.
  PickleBuilder marks;
  marks.proto(2);
  for (int i = 0; i < 200000; ++i) marks.op('(');
  marks.stop();
  CHECK_FALSE(accepts(Reader::pickle, marks.bytes()));
  CHECK_FALSE(accepts(Reader::pickle, std::string("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", 11)));

  // CSV with a huge number of columns and a binary blob.
  CHECK_FALSE(accepts(Reader::problem_csv, "id,lower,upper,size\n" + std::string(100000, ',')));
  CHECK_FALSE(accepts(Reader::problem_csv, std::string("id,lower,upper,size\n\0\0\0", 23)));
}

TEST_CASE("robustness: the fuzzers' regression files replay cleanly", "[robustness][fuzz]") {
  const std::pair<const char*, Reader> folders[] = {
      {"pickle", Reader::pickle}, {"snapshot_json", Reader::snapshot_json}, {"problem_csv", Reader::problem_csv}};
  std::size_t replayed = 0;
  for (const auto& [folder, reader] : folders) {
    const std::filesystem::path dir = source_path(std::string("tests/fuzz/regressions/") + folder);
    REQUIRE(std::filesystem::is_directory(dir));
    for (const auto& file : std::filesystem::directory_iterator(dir)) {
      const std::string filename = file.path().filename().string();
      if (!file.is_regular_file() || filename.starts_with(".") || filename.ends_with(".md")) continue;
      INFO(file.path().string());
      (void)accepts(reader, read_bytes(file.path().string()));
      ++replayed;
    }
  }
  CHECK(replayed >= 3);
}
