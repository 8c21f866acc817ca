// MiniMalloc-style CSV problems: the public fixtures parse, and every kind of bad row gives an
// InputError at the offending byte.
#include <catch2/catch.hpp>

#include <string>

#include "memtool/trace/input_error.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::fixture;
using memtool::trace::testing::read_bytes;

namespace {

InputError csv_error(const std::string& text) {
  try {
    (void)parse_problem_csv(text, "bad.csv");
  } catch (const InputError& error) {
    CHECK(error.file() == "bad.csv");
    return error;
  }
  FAIL("expected an InputError for " << text);
  return InputError("", 0, "");
}

}  // namespace

TEST_CASE("csv: a small problem, exactly", "[csv]") {
  const Problem problem = parse_problem_csv("id,lower,upper,size\n0,0,10,64\n7,5,12,4096\n3,11,13,1\n", "p.csv");
  CHECK(problem.name == "p.csv");
  REQUIRE(problem.buffers.size() == 3);
  CHECK(problem.buffers[1].id == 7);
  CHECK(problem.buffers[1].size == 4096);
  CHECK(problem.buffers[1].alignment == 1);
  REQUIRE(problem.buffers[1].intervals.size() == 1);
  CHECK(problem.buffers[1].intervals[0] == LiveInterval{5, 12});
  CHECK_FALSE(problem.buffers[1].crosses_iteration);
  CHECK(problem.time_horizon == 13);
}

TEST_CASE("csv: CRLF, no final newline, trailing blank lines, alignment column", "[csv]") {
  const Problem crlf = parse_problem_csv("id,lower,upper,size\r\n1,0,2,8\r\n2,1,3,8", "crlf.csv");
  REQUIRE(crlf.buffers.size() == 2);
  CHECK(crlf.buffers[1].intervals[0].end == 3);
  const Problem blank = parse_problem_csv("id,lower,upper,size\n1,0,2,8\n\n\r\n\n", "blank.csv");
  CHECK(blank.buffers.size() == 1);
  const Problem aligned = parse_problem_csv("id,lower,upper,size,alignment\r\n1,0,2,8,64\n2,0,2,8,1\n", "a.csv");
  REQUIRE(aligned.buffers.size() == 2);
  CHECK(aligned.buffers[0].alignment == 64);
  CHECK(aligned.buffers[1].alignment == 1);
  const Problem empty = parse_problem_csv("id,lower,upper,size\n", "empty.csv");
  CHECK(empty.buffers.empty());
  CHECK(empty.time_horizon == 0);
  const Problem max = parse_problem_csv(
      "id,lower,upper,size\n18446744073709551615,0,18446744073709551615,"
      "4611686018427387904\n",
      "max.csv");
  CHECK(max.buffers[0].size == 4611686018427387904ULL);  // 2^62: the most the planner plans
}

TEST_CASE("csv: the repository's planner fixtures parse", "[csv]") {
  for (const char* name : {"planner/minimalloc-challenging-A.csv", "planner/somas-resnet50.csv",
                           "planner/iopddl-G_1.csv", "traces/alexnet.iter3.csv"}) {
    INFO(name);
    const std::string text = read_bytes(fixture(name));
    const Problem problem = read_problem_csv(fixture(name));
    std::size_t rows = 0;
    for (char c : text) rows += c == '\n' ? 1 : 0;
    if (!text.empty() && text.back() != '\n') ++rows;
    CHECK(problem.buffers.size() == rows - 1);  // every line but the header is a buffer
    CHECK(problem.time_horizon > 0);
  }
}

TEST_CASE("csv: every error kind, at its byte", "[csv]") {
  struct Case {
    std::string text;
    std::size_t offset;
    std::string expected;
  };
  const std::string h = "id,lower,upper,size\n";  // 20 bytes
  const Case cases[] = {
      {"", 0, "empty file"},
      {"id,lower,upper\n1,2,3\n", 0, "expected the header"},
      {"ID,LOWER,UPPER,SIZE\n", 0, "expected the header"},
      {"id,lower,upper,size,align\n", 0, "expected the header"},
      {h + "1,2,3\n", 25, "line 2: 3 fields, expected 4"},
      {h + "1,2,3,4,5\n", 27, "line 2: more than 4 fields"},
      {h + "1,,3,4\n", 22, "line 2: 'lower' is empty"},
      {h + "1,2,3,\n", 26, "'size' is empty"},
      {h + "1,2,x3,4\n", 24, "'upper' is 'x3'"},
      {h + "1,-2,3,4\n", 22, "'lower' is '-2'"},
      {h + "1,+2,3,4\n", 22, "'lower' is '+2'"},
      {h + "1,2 ,3,4\n", 23, "'lower' is '2 '"},
      {h + "1,2,3,4\r\r\n", 27, "'size' is '4\\x0d'"},
      {h + "1,2,3,18446744073709551616\n", 26, "does not fit in 64 bits"},
      {h + "1,3,3,4\n", 22, "lower 3 must be less than upper 3"},
      {h + "1,4,3,4\n", 22, "lower 4 must be less than upper 3"},
      {h + "1,2,3,0\n", 26, "size must be positive"},
      {h + "0,0,1,1\n5,2,3,4\n5,2,3,4\n", 36, "line 4: duplicate id 5 (first on line 3)"},
      {h + "1,2,3,4\n\n2,2,3,4\n", 28, "line 3: blank line inside the table"},
      {"id,lower,upper,size,alignment\n1,2,3,4,3\n", 38, "alignment 3 is not a power of two"},
      {"id,lower,upper,size,alignment\n1,2,3,4,0\n", 38, "alignment 0 is not a power of two"},
      {"id,lower,upper,size,alignment\n1,2,3,4\n", 37, "4 fields, expected 5"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const InputError error = csv_error(c.text);
    CHECK(error.offset() == c.offset);
    CHECK_THAT(error.message(), Catch::Contains(c.expected));
  }
}

TEST_CASE("csv: a missing file is an InputError", "[csv]") {
  CHECK_THROWS_AS(read_problem_csv(fixture("planner/no-such-problem.csv")), InputError);
}
