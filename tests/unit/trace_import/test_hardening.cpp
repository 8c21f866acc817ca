// Importer hardening (issue 13): inputs read once (a FIFO works), sums of live bytes that
// would pass 2^62 refused at the event with its position, the planner's limits checked by the
// CSV reader with the line, and error lines kept to one short line whatever the file quotes.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "memtool/trace/input.hpp"
#include "memtool/trace/input_error.hpp"
#include "memtool/trace/iterations.hpp"
#include "memtool/trace/lifetimes.hpp"
#include "memtool/trace/limits.hpp"
#include "memtool/trace/model.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "memtool/trace/snapshot_import.hpp"
#include "memtool/trace/writer.hpp"
#include "test_support.hpp"

using namespace memtool::trace;
using memtool::trace::testing::fixture;
using memtool::trace::testing::read_bytes;
using memtool::trace::testing::RecordingVisitor;
using memtool::trace::testing::TempFile;

namespace {

InputError error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& error) {
    return error;
  }
  FAIL("accepted");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("hardening: load_events reads a FIFO once", "[hardening]") {
  TempFile fifo("input.fifo");
  REQUIRE(mkfifo(fifo.path().c_str(), 0600) == 0);
  const std::string bytes = read_bytes(fixture("traces/conv_train.mtrace"));
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {  // one writer, one pass: a second open of the FIFO would wait forever
    ::alarm(20);
    std::FILE* out = std::fopen(fifo.path().c_str(), "wb");
    if (out == nullptr) ::_exit(1);
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
    ::_exit(0);
  }
  ::alarm(30);  // a regression blocks: SIGALRM then fails the test instead of hanging it
  TraceModel model;
  const LoadSummary summary = load_events(fifo.path(), model);
  ::alarm(0);
  int status = 0;
  ::waitpid(writer, &status, 0);
  CHECK(summary.kind == InputKind::trace);
  CHECK(summary.trace->clean_end);
  CHECK(model.stats().allocs == 109);
}

TEST_CASE("hardening: live bytes over 2^62 are refused at the event that takes them there", "[hardening]") {
  TempFile file("huge.trace");
  std::string error;
  {
    auto w = TraceWriter::open(file.path(), &error);
    REQUIRE(w);
    for (std::uint64_t i = 0; i < 4; ++i) {  // 2^61 each: the fourth passes 2^62 (and 2^64 with one more)
      w->write(AllocEvent{
          {i, i, ThreadId{1}}, 0x1000 * (i + 1), kMaxAccountedBytes / 2, MemoryKind::device, StreamHandle{0}, {}});
    }
    REQUIRE(w->close());
  }
  TraceModel model;
  const InputError e = error_of([&] { (void)load_events(file.path(), model); });
  CHECK(e.offset() > 16);
  CHECK_THAT(e.message(), Catch::Contains("event seq 2") && Catch::Contains("over 2^62"));

  // The same in a snapshot: named by its entry.
  const std::string json = fmt::format(
      R"({{"device_traces": [[{{"action": "alloc", "addr": 1, "size": {0}}}, {{"action": "alloc", "addr": 2, "size": {0}}}, )"
      R"({{"action": "alloc", "addr": 3, "size": {0}}}]]}})",
      kMaxAccountedBytes / 2);
  TraceModel snapshot_model;
  const InputError s = error_of([&] { (void)import_snapshot_json(json, "huge.json", snapshot_model); });
  CHECK_THAT(s.message(), Catch::Contains("device_traces[0][2]") && Catch::Contains("over 2^62"));
  CHECK(s.offset() == json.rfind('{'));
  // One allocation of 2^64 - 1 bytes: refused by the importer itself.
  const InputError one = error_of([&] {
    (void)import_snapshot_json(R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 18446744073709551615}]]})",
                               "max.json", snapshot_model);
  });
  CHECK_THAT(one.message(), Catch::Contains("'size' 18446744073709551615 is over 2^62"));
}

TEST_CASE("hardening: the planner's limits are checked with the CSV line", "[hardening]") {
  const InputError size =
      error_of([] { (void)parse_problem_csv("id,lower,upper,size\n1,0,2,8\n2,0,2,4611686018427387905\n", "p.csv"); });
  CHECK(size.offset() == 34);
  CHECK_THAT(size.message(), Catch::Contains("line 3: size 4611686018427387905 is over 2^62"));
  const InputError sum =
      error_of([] { (void)parse_problem_csv("id,lower,upper,size\n1,0,2,4611686018427387904\n2,5,6,1\n", "p.csv"); });
  CHECK_THAT(sum.message(), Catch::Contains("line 3: the sizes add up to more than 2^62"));
  const InputError alignment = error_of(
      [] { (void)parse_problem_csv("id,lower,upper,size,alignment\n1,0,2,8,9223372036854775808\n", "p.csv"); });
  CHECK_THAT(alignment.message(), Catch::Contains("alignment 9223372036854775808 is over 2^62"));
}

TEST_CASE("hardening: error lines stay one short line", "[hardening]") {
  // A JSON number of 5 MB: nlohmann quotes all of it; we keep its first bytes.
  const std::string json = "{\"a\": " + std::string(5'000'000, '9') + "}";
  RecordingVisitor visitor;
  const InputError number = error_of([&] { (void)import_snapshot_json(json, "big.json", visitor); });
  CHECK_THAT(number.message(), Catch::Contains("number overflow") && Catch::Contains("(5000000 bytes)"));
  CHECK(std::string(number.what()).size() < 200);
  // Text a file quotes in a message cannot start a second line.
  const InputError forged("nl.json", 3, "unknown action 'alloc\nmemtool: error: forged'");
  CHECK(std::string(forged.what()).find('\n') == std::string::npos);
  CHECK_THAT(forged.message(), Catch::Contains("alloc\\x0amemtool"));
  const InputError long_message(std::string(1000, 'f'), 0, std::string(100000, 'm'));
  CHECK(std::string(long_message.what()).size() < 1000);
}

TEST_CASE("hardening: an iteration too large to plan names the allocation that makes it so", "[hardening]") {
  TraceModel model;
  for (std::uint64_t i = 0; i < 2; ++i) {  // one buffer of 2^62 at a time: live bytes fine, their sum not
    model.on_alloc(
        AllocEvent{{2 * i, 0, ThreadId{1}}, 0x1000, kMaxAccountedBytes, MemoryKind::device, StreamHandle{0}, {}});
    model.on_free(FreeEvent{{2 * i + 1, 0, ThreadId{1}}, 0x1000, MemoryKind::device, StreamHandle{0}});
  }
  Iterations iterations;
  iterations.source = IterationSource::marks;
  iterations.spans.push_back(IterationSpan{0, 4});
  try {
    (void)to_problem(model, iterations, 0, 512);
    FAIL("planned");
  } catch (const EventRejected& rejected) {
    CHECK(rejected.event() == 2);
    CHECK_THAT(rejected.what(), Catch::Contains("over 2^62 bytes in all"));
  }
}
