// Replays every input the trace fuzzer ever crashed on (tests/fuzz/regressions/trace_reader):
// each must load or throw InputError — never crash, hang or throw anything else.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "memtool/trace/input_error.hpp"
#include "trace_builder.hpp"

using namespace memtool::trace;
using namespace memtool::trace::test;

TEST_CASE("fuzzer regression inputs load or fail cleanly", "[trace_format][fuzz]") {
  const std::filesystem::path dir = std::filesystem::path(MEMTOOL_SOURCE_DIR) / "tests/fuzz/regressions/trace_reader";
  REQUIRE(std::filesystem::is_directory(dir));
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
    ++files;
    INFO(entry.path().string());
    RecordingVisitor v;
    const bool valid = entry.path().filename().string().starts_with("valid-");
    try {
      const TraceReadResult r = read_trace(entry.path().string(), v);
      CHECK(r.records >= v.lines.size());
    } catch (const InputError& e) {
      CHECK_FALSE(valid);
      CHECK(e.file() == entry.path().string());
      CHECK(e.offset() <= std::filesystem::file_size(entry.path()));
    }
  }
  CHECK(files > 0);
}

// Not run by default: writes the fuzzer's seed corpus (small valid traces) into
// $MEMTOOL_FUZZ_SEED_DIR. `test_trace_format "[fuzz_seeds]"`, then run fuzz_trace_reader on it.
TEST_CASE("write the trace fuzzer's seed corpus", "[.][fuzz_seeds]") {
  const char* dir = std::getenv("MEMTOOL_FUZZ_SEED_DIR");
  if (dir == nullptr) {
    WARN("set MEMTOOL_FUZZ_SEED_DIR to write the seed corpus");
    return;
  }
  std::filesystem::create_directories(dir);
  const std::string base = std::string(dir) + "/seed-";
  {
    std::string error;
    auto w = TraceWriter::open(base + "sample.trace", &error);
    REQUIRE(w != nullptr);
    write_sample_trace(*w);
    REQUIRE(w->close());
  }
  {
    std::string error;
    auto w = TraceWriter::open(base + "unclosed.trace", &error);
    REQUIRE(w != nullptr);
    write_sample_trace(*w);
    REQUIRE(w->flush());
    w->abandon_after_fork();  // leaves the file without its end record
  }
  {
    std::string error;
    auto w = TraceWriter::open(base + "loop.trace", &error);
    REQUIRE(w != nullptr);
    const StringId k = w->intern("kernel");
    for (std::uint64_t i = 0; i < 20; ++i) {
      const std::uint64_t a = 0x7f0000000000 + (i % 4) * 0x1000;
      const std::uint64_t touched[] = {a};
      w->write(AllocEvent{{3 * i, 100 * i, ThreadId{5}}, a, 256, MemoryKind::async, StreamHandle{7}, {}});
      w->write(LaunchEvent{{3 * i + 1, 100 * i + 10, ThreadId{5}}, k, StreamHandle{7}, touched});
      w->write(FreeEvent{{3 * i + 2, 100 * i + 20, ThreadId{5}}, a, MemoryKind::async, StreamHandle{7}});
      if (i % 5 == 4) w->write(IterationMarkEvent{{3 * i + 2, 100 * i + 30, ThreadId{5}}, i / 5});
    }
    REQUIRE(w->close());
  }
  write_bytes(base + "empty.trace", ByteBuilder().header().bytes);
}
