// Where the recorder's events go: the trace file (TraceWriterSink, over trace::TraceWriter)
// or, in unit tests, a collector. The recorder serialises every call into its sink (flush()
// included, which the preload's flush thread makes through Recorder::flush_trace), so a sink
// need not be thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "memtool/trace/event.hpp"

namespace memtool::interpose {

class EventSink {
 public:
  EventSink() = default;
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;
  virtual ~EventSink() = default;

  virtual trace::StringId intern(std::string_view text) = 0;
  virtual trace::StackId intern_stack(std::span<const trace::StackFrame> frames) = 0;
  virtual void metadata(std::string_view key, std::string_view value) = 0;
  virtual void module(const trace::ModuleMapping& module) = 0;

  // One per kind of trace/events.def.
#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) virtual void write(const trace::Type& event) = 0;
#include "memtool/trace/events.def"
  // GPU times from the CUPTI tracer (not events). A sink that keeps none ignores them.
  virtual void write_gpu_time(const trace::GpuTimeRecord& /*record*/) {}

  // Pushes buffered records to the file, so a run killed later keeps them (about once a second,
  // and on the stop signals). Says once, with the reason, when writing failed.
  virtual void flush() {}

  // Ends the trace (end record, flush). Nothing is written afterwards.
  virtual void close() = 0;
  // In a forked child: forget the parent's file without writing to it.
  virtual void abandon_after_fork() = 0;
  // True once an I/O error made the sink drop records.
  [[nodiscard]] virtual bool failed() const = 0;
};

// The trace file sink; not thread-safe (the recorder serialises). Returns nullptr and sets
// *error when the file cannot be opened. `max_bytes` (0: none) is MEMTOOL_TRACE_LIMIT: past
// it the trace ends cleanly, with a warning. When another process writes that trace (it holds
// the file's lock), this one records to `<path>.<pid>` and says so.
std::unique_ptr<EventSink> open_trace_sink(const std::string& path, std::uint64_t max_bytes, std::string* error);
// The same sink, but the file is created at the first record that is not metadata (a process
// that does no work on the GPU leaves no file). What would stop the file being created later
// (a path that is not a regular file, a folder that is missing or read-only) is refused now,
// as open_trace_sink would.
std::unique_ptr<EventSink> open_deferred_trace_sink(const std::string& path, std::uint64_t max_bytes,
                                                    std::string* error);

}  // namespace memtool::interpose
