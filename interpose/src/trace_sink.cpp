// TraceWriterSink: the recorder's events into a trace file through trace::TraceWriter.
//
// The writer takes no lock of its own: the recorder makes every call under its emit lock,
// flushes included (Recorder::flush_trace, from the preload's flush thread), so recording pays
// nothing for the flushes that keep a killed run's trace. A write that fails is said once, with
// its reason.
#include <cstring>
#include <memory>

#include "memtool/interpose/event_sink.hpp"
#include "memtool/interpose/log.hpp"
#include "memtool/trace/writer.hpp"

namespace memtool::interpose {
namespace {

class TraceWriterSink final : public EventSink {
 public:
  explicit TraceWriterSink(std::string path) : path_(std::move(path)) {}
  void attach(std::unique_ptr<trace::TraceWriter> writer) { writer_ = std::move(writer); }
  [[nodiscard]] void* path() noexcept { return &path_; }  // the limit message's context

  trace::StringId intern(std::string_view text) override { return writer_->intern(text); }
  trace::StackId intern_stack(std::span<const trace::StackFrame> frames) override {
    return writer_->intern_stack(frames);
  }
  void metadata(std::string_view key, std::string_view value) override { writer_->write_metadata(key, value); }
  void module(const trace::ModuleMapping& module) override { writer_->write_module(module); }

#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void write(const trace::Type& event) override { writer_->write(event); }
#include "memtool/trace/events.def"
  void write_gpu_time(const trace::GpuTimeRecord& record) override { writer_->write(record); }

  void flush() override {
    writer_->flush();
    report_failure();
  }
  void close() override {
    writer_->close();
    report_failure();
  }
  void abandon_after_fork() override { writer_->abandon_after_fork(); }
  bool failed() const override { return writer_->failed(); }

 private:
  // Once: the trace stops where writing failed (what reached the file reads as a truncated trace).
  void report_failure() {
    if (!writer_->failed() || failure_reported_) return;
    failure_reported_ = true;
    Log::write(LogLevel::error, "writing the trace {} failed ({}): it ends after {} bytes; the program runs on",
               path_, std::strerror(writer_->error_number()), writer_->bytes_written());
  }

  std::string path_;
  std::unique_ptr<trace::TraceWriter> writer_;
  bool failure_reported_ = false;
};

}  // namespace

std::unique_ptr<EventSink> open_trace_sink(const std::string& path, std::uint64_t max_bytes, std::string* error,
                                           bool* in_use) {
  trace::TraceWriter::Options options;
  options.in_use = in_use;
  options.caller_serialises = true;  // the recorder makes every call under its emit lock
  options.max_bytes = max_bytes;
  options.on_limit = [](void* context, std::uint64_t events) {
    Log::write(LogLevel::warn,
               "the trace {} reached MEMTOOL_TRACE_LIMIT after {} events: it ends there (a complete trace of the run "
               "so far); recording and detection go on without it",
               *static_cast<const std::string*>(context), events);
  };
  auto sink = std::make_unique<TraceWriterSink>(path);
  options.on_limit_context = sink->path();
  auto writer = trace::TraceWriter::open(path, options, error);
  if (!writer) return nullptr;
  sink->attach(std::move(writer));
  return sink;
}

}  // namespace memtool::interpose
