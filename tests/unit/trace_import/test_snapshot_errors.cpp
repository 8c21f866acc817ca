// Snapshot documents that parse but do not match the schema, and JSON syntax errors: each
// gives one InputError naming the entry (device_traces[d][i]) and the best offset we have.
#include <catch2/catch.hpp>

#include <string>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::PickleBuilder;
using memtool::trace::testing::RecordingVisitor;

namespace {

InputError json_error(const std::string& text) {
  RecordingVisitor visitor;
  try {
    (void)import_snapshot_json(text, "bad.json", visitor);
  } catch (const InputError& error) {
    CHECK(visitor.log.empty());  // nothing is delivered from a bad document
    CHECK(error.file() == "bad.json");
    return error;
  }
  FAIL("expected an InputError for " << text);
  return InputError("", 0, "");
}

std::string one_entry(const std::string& entry) {
  return R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 2}, )" + entry + "]]}";
}

}  // namespace

TEST_CASE("snapshot schema: every mismatch names its entry", "[snapshot][errors]") {
  struct Case {
    std::string document;
    std::string expected;
  };
  const Case cases[] = {
      {"[1]", "is a list"},
      {R"({"segments": []})", "no 'device_traces'"},
      {R"({"device_traces": {}})", "'device_traces' is a dict"},
      {R"({"device_traces": [[], 3]})", "device_traces[1] is a int"},
      {one_entry("7"), "device_traces[0][1] is a int, expected a dict"},
      {one_entry(R"({"addr": 1})"), "device_traces[0][1]: 'action' is missing"},
      {one_entry(R"({"action": 5})"), "'action' is a int"},
      {one_entry(R"({"action": "alloc", "addr": 1})"), "device_traces[0][1] (alloc): 'size' is missing"},
      {one_entry(R"({"action": "alloc", "size": 1})"), "'addr' is missing"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": -4})"), "'size' is negative"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": "4"})"), "'size' is a str"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4.0})"), "'size' is a float"},
      {one_entry(R"({"action": "alloc", "addr": 1e30, "size": 4})"), "'addr' is a float"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "stream": []})"), "'stream' is a list"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "time_us": 18446744073709552})"),
       "'time_us' is too large"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "frames": {}})"), "'frames' is a dict"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "frames": [3]})"), "frames[0] is a int"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "frames": [{"name": 1}]})"), "frames[0].name is a int"},
      {one_entry(R"({"action": "alloc", "addr": 1, "size": 4, "frames": [{"line": 4294967296}]})"),
       "frames[0].line is too large"},
      {one_entry(R"({"action": "free_requested", "size": 4})"), "(free_requested): 'addr' is missing"},
      {one_entry(R"({"action": "free_completed", "addr": 1, "size": -1})"), "'size' is negative"},
      {one_entry(R"({"action": "segment_alloc", "addr": 1})"), "(segment_alloc): 'size' is missing"},
      {one_entry(R"({"action": "segment_map", "size": 9223372036854775808})"), "'size' is too large"},
      {R"({"device_traces": [[{"action": "segment_alloc", "size": 9223372036854775807},
                              {"action": "segment_alloc", "size": 1}]]})",
       "device_traces[0][1]: reserved bytes overflow"},
  };
  for (const Case& c : cases) {
    INFO(c.document);
    const InputError error = json_error(c.document);
    CHECK_THAT(error.message(), Catch::Contains(c.expected));
  }
}

TEST_CASE("snapshot schema: offsets point at the offending value", "[snapshot][errors]") {
  // JSON: just past the scalar the parser delivered (nlohmann has read one character beyond
  // a number to see where it ends).
  const std::string json = R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": -4}]]})";
  const InputError from_json = json_error(json);
  const std::size_t minus = json.find("-4");
  CHECK(from_json.offset() >= minus);
  CHECK(from_json.offset() <= minus + 3);

  // An entry that is not a dict: the container's opening bracket.
  const std::string list_entry = R"({"device_traces": [[ [1] ]]})";
  CHECK(json_error(list_entry).offset() == list_entry.find("[1]"));

  // Pickle: the opcode that made the value.
  // {"device_traces": [[{"action": "alloc", "addr": 1, "size": -4}]]}
  PickleBuilder b;
  b.proto(2)
      .op('}')
      .text("device_traces")
      .op(']')
      .op(']')
      .op('}')
      .op('(')
      .text("action")
      .text("alloc")
      .text("addr")
      .int1(1)
      .text("size");
  const std::size_t size_at = b.bytes().size();
  b.int4(-4).op('u').op('a').op('a').op('s').stop();
  RecordingVisitor visitor;
  try {
    (void)import_snapshot_pickle(b.bytes(), "bad.pickle", visitor);
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK_THAT(error.message(), Catch::Contains("'size' is negative"));
    CHECK(error.offset() == size_at);
  }
}

TEST_CASE("snapshot JSON: syntax errors carry nlohmann's offset", "[snapshot][errors]") {
  struct Case {
    std::string text;
    std::size_t offset;
  };
  const Case cases[] = {
      {R"({"device_traces": [}])", 19},
      {R"({"device_traces" [[]]})", 17},
      {R"({"device_traces": [[]]} x)", 24},
      {"{\"a\": \"\xff\"}", 7},
      {"", 0},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const InputError error = json_error(c.text);
    CHECK(error.offset() == c.offset);
    CHECK_THAT(error.what(), Catch::Contains("bad.json"));
  }
  // An invalid literal: somewhere inside "tru}" (nlohmann reads the token before judging it).
  const InputError literal = json_error(R"({"device_traces": tru})");
  CHECK(literal.offset() >= 18);
  CHECK(literal.offset() <= 21);
}
