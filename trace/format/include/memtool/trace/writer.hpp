// TraceWriter: streams events to a trace file (format v1, docs/trace-format.md).
//
// Safe to call from many threads (unless opened with caller_serialises). Records are encoded straight into one preallocated buffer
// under a short lock (no allocation per event) and written out when the buffer fills, so the
// file holds records in the order the writes happened. A process that dies mid-write leaves a
// file readable up to its last complete record.
//
// With Options::map_file the buffer is a MAP_SHARED window of the file itself: every record is
// in the page cache as soon as it is encoded, so a process that dies in any way (_exit, abort,
// a crash, exec, SIGKILL) keeps every record it wrote. The file then grows in windows whose
// blocks are reserved (fallocate) before they are mapped; the zeros past the last record, and
// the missing end record, read as a trace cut short (docs/trace-format.md, "A trace cut short").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "memtool/trace/event.hpp"

namespace memtool::trace {

class TraceWriter {
 public:
  struct Options {
    std::size_t buffer_bytes = std::size_t{1} << 20;  // flushed to the file when full
    // The caller makes every call under one lock of its own (the interposer's recorder): the
    // writer then takes no lock of its own, one lock round trip less per event.
    bool caller_serialises = false;
    // Stop before the file grows past this many bytes (0: no limit). The writer then ends the
    // trace properly (end record, close): it reads as a complete trace of the run so far, and
    // every later call is a no-op. `on_limit` (may be null) is told once, with the number of
    // events written, from inside the call that hit the limit.
    std::uint64_t max_bytes = 0;
    void (*on_limit)(void* context, std::uint64_t events_written) = nullptr;
    void* on_limit_context = nullptr;
    // Set to true when another open file holds the trace's lock (flock: another process writes
    // this trace): open then fails without truncating it.
    bool* in_use = nullptr;
    // Records go into a shared mapping of the file (buffer_bytes per window) instead of a
    // buffer written out by write(2); falls back to the buffer where the file system cannot
    // reserve blocks (fallocate) or map the file.
    bool map_file = false;
  };

  // Opens (truncates) `path`. Returns nullptr and sets *error on failure; never throws, so
  // the preload library can use it. Never blocks: the file is opened with O_NONBLOCK, and a
  // path that is not a regular file (a FIFO, a device, a directory) is refused.
  static std::unique_ptr<TraceWriter> open(const std::string& path, std::string* error);
  static std::unique_ptr<TraceWriter> open(const std::string& path, const Options& options, std::string* error);

  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();  // flushes and closes

  // Interns a string; the first call for a text writes its definition record. Ids are dense,
  // in first-use order. Returns an invalid id when out of memory or after close/failure (for
  // a text not interned before). Texts are cut to 1 MiB, stacks to 65536 frames.
  StringId intern(std::string_view text);
  // Interns a call stack (by its frames); the first call writes its definition record.
  StackId intern_stack(std::span<const StackFrame> frames);

  void write_metadata(std::string_view key, std::string_view value);
  void write_module(const ModuleMapping& module);

  // One per kind of events.def. A note (FailedFreeEvent) is a diagnostic record, not an event:
  // it leaves the delta state and the end record's event count alone, so readers that predate
  // it skip it whole (docs/trace-format.md, "Versioning").
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) void write(const Type& event);
#include "memtool/trace/events.def"
  void write(const GpuTimeRecord& record);  // not an event: counted as a record only

  // Pushes buffered records to the file (write(2)); false on an I/O error. With a mapped file
  // every record is in the file already: nothing to do.
  bool flush();
  // Writes the end-of-trace record, flushes and closes. Idempotent.
  bool close();

  // After fork(): the child must not write into the parent's file. Drops the buffer and the
  // file descriptor without writing anything; every later call is a no-op that never takes the
  // lock (another parent thread may have held it at the fork). Call it from a pthread_atfork
  // child handler: the writer registers none itself.
  void abandon_after_fork();

  // Records encoded so far (definitions and events; not the end record), and bytes handed to
  // write(2) so far (the header line included; records still in the buffer not; with a mapped
  // file, every record encoded).
  [[nodiscard]] std::uint64_t records_written() const;
  [[nodiscard]] std::uint64_t bytes_written() const;
  [[nodiscard]] bool failed() const;         // an I/O error happened; later writes are dropped
  [[nodiscard]] int error_number() const;    // the errno of that error (0: none)
  [[nodiscard]] bool limit_reached() const;  // Options::max_bytes ended the trace
  [[nodiscard]] bool mapped() const;         // records go into a mapping of the file (map_file)

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtool::trace
