// Test-only reader for the text logs in tests/fixtures/traces/*.log (format in that folder's
// README): feeds AllocEvent / FreeEvent / LaunchEvent / IterationMarkEvent into a visitor and
// returns the ground truth the `I n` lines give.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtool/trace/event.hpp"

namespace memtool::test {

struct LogTruth {
  // Per `I n` line: the event index the mark got (or, with marks stripped, the index of the
  // event that followed it).
  std::vector<std::uint64_t> iteration_starts;
  // Per iteration: counts of A, F and K lines.
  std::vector<std::uint64_t> allocs;
  std::vector<std::uint64_t> frees;
  std::vector<std::uint64_t> launches;
  std::uint64_t events = 0;  // events delivered
};

struct LogOptions {
  bool strip_marks = false;  // do not deliver iteration marks
};

LogTruth load_fixture_log(const std::string& path, trace::EventVisitor& visitor, const LogOptions& options = {});

std::string fixture_path(const std::string& name);  // tests/fixtures/traces/<name>

}  // namespace memtool::test
