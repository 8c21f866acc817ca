// Reading a trace file (format v1): one reader, visitor callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "memtool/trace/event.hpp"

namespace memtool::trace {

struct TraceReadResult {
  std::uint32_t version = 0;
  std::uint64_t records = 0;     // complete records delivered
  std::uint64_t bytes_read = 0;  // offset just past the last complete record
  bool clean_end = false;        // the writer closed the file (end record present)
  bool truncated = false;        // the file ends inside a record (writer died mid-write)
};

struct TraceReadOptions {
  // Called now and then with (bytes read, total bytes) for progress messages.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// True when the file starts with the trace magic.
[[nodiscard]] bool is_trace_file(const std::string& path);

// Delivers every complete record of `path` to `visitor`, in file order. A file that ends
// inside a record is not an error (result.truncated); a corrupt record throws InputError with
// the file and byte offset.
TraceReadResult read_trace(const std::string& path, EventVisitor& visitor,
                           const TraceReadOptions& options = {});

}  // namespace memtool::trace
