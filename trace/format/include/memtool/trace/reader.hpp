// Reading a trace file (format v1, docs/trace-format.md): one reader, visitor callbacks.
//
// The text and spans handed to the visitor (strings, metadata, stack frames, touched
// addresses) point into the reader's buffers and are valid only during the callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "memtool/trace/event.hpp"

namespace memtool::trace {

struct TraceReadResult {
  std::uint32_t version = 0;
  std::uint64_t records = 0;     // complete records delivered (the end record not counted)
  std::uint64_t events = 0;      // of which events (alloc, free, launch, ...)
  std::uint64_t bytes_read = 0;  // offset just past the last complete record
  bool clean_end = false;        // the writer closed the file (end record present)
  // The file stops before the end record: the writer died (or is still writing). Always
  // !clean_end. The bytes after bytes_read, if any, are a partial record (torn_bytes).
  bool truncated = false;
  std::uint64_t torn_bytes = 0;  // size of the partial record at the end (0: cut between records)
};

struct TraceReadOptions {
  // Called now and then with (bytes read, total bytes) for progress messages.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// True when the file starts with the trace magic.
[[nodiscard]] bool is_trace_file(const std::string& path);
[[nodiscard]] bool is_trace_bytes(std::span<const std::byte> bytes);

// Delivers every complete record of `path` to `visitor`, in file order. A file that ends
// inside a record is not an error (result.truncated); a corrupt record throws InputError with
// the file and byte offset.
TraceReadResult read_trace(const std::string& path, EventVisitor& visitor, const TraceReadOptions& options = {});

// The same for a trace held in memory; `display_name` names it in InputError messages.
TraceReadResult read_trace_bytes(std::span<const std::byte> bytes, std::string display_name, EventVisitor& visitor,
                                 const TraceReadOptions& options = {});

}  // namespace memtool::trace
