// TraceWriterSink: the recorder's events into a trace file through trace::TraceWriter.
//
// Deferred (open_deferred_trace_sink): the file is created at the first record that is not
// metadata — the first allocation, launch or kernel name — so a process that loads the driver
// and does no work on the GPU (a launcher such as torchrun's agent asking for the device count)
// leaves no file, and cannot truncate the one a rank of the same name writes.
//
// The writer takes no lock of its own: the recorder makes every call under its emit lock,
// flushes included (Recorder::flush_trace, from the preload's flush thread), so recording pays
// nothing for the flushes that keep a killed run's trace. A write that fails is said once, with
// its reason.
//
// The file is a shared mapping (TraceWriter::Options::map_file): whatever ends the process, the
// records it wrote stay. Exec keeps the pid, and the fd is closed on exec (its lock with it), so
// a program that execs another under LD_PRELOAD would truncate its own trace: the file names
// its writer ("process": pid and start time, which exec keeps too), and a process that finds
// its own name in the file records to `<path>.exec<N>` instead.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memtool/interpose/event_sink.hpp"
#include "memtool/interpose/log.hpp"
#include "memtool/trace/reader.hpp"
#include "memtool/trace/writer.hpp"

namespace memtool::interpose {
namespace {

// The head of an existing trace read for its writer's name (metadata comes first).
constexpr std::size_t kWriterNameScanBytes = 64 * 1024;
// `<path>.exec1` ... : a chain of execs, each its own file.
constexpr int kMaxExecFiles = 64;

// "<pid>.<start time in clock ticks after boot>" (/proc/self/stat, field 22): one process over
// its whole life, exec included. "" when /proc cannot be read.
std::string process_name() {
  char text[1024];
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return {};
  const std::string_view stat(text, static_cast<std::size_t>(n));
  std::size_t at = stat.rfind(')');  // the command may hold spaces and parentheses
  if (at == std::string_view::npos) return {};
  for (int field = 2; field < 22; ++field) {  // from field 2 (the command) to field 22
    at = stat.find(' ', at + 1);
    if (at == std::string_view::npos) return {};
  }
  const std::size_t end = stat.find(' ', at + 1);
  if (end == std::string_view::npos) return {};
  return std::to_string(::getpid()) + "." + std::string(stat.substr(at + 1, end - at - 1));
}

// Whether the trace at `path` was written by the process named `name` (this one, before exec).
bool written_by(const std::string& path, const std::string& name) {
  if (name.empty()) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  std::vector<std::byte> head;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    head.resize(std::min<std::size_t>(kWriterNameScanBytes, static_cast<std::size_t>(st.st_size)));
    const ssize_t n = ::read(fd, head.data(), head.size());
    head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  if (!trace::is_trace_bytes(head)) return false;
  struct WriterName final : trace::EventVisitor {
    std::string value;
    void on_metadata(std::string_view key, std::string_view v) override {
      if (key == "process") value = v;
    }
  } writer;
  try {
    (void)trace::read_trace_bytes(head, path, writer);
  } catch (...) {  // not readable as a trace: not ours
    return false;
  }
  return writer.value == name;
}

class TraceWriterSink final : public EventSink {
 public:
  TraceWriterSink(std::string path, const trace::TraceWriter::Options& options)
      : path_(std::move(path)), options_(options) {
    options_.on_limit_context = &path_;  // the limit message names the file
  }
  // Opens the file now (open_trace_sink); false with *error when it cannot.
  bool open_now(std::string* error) { return open_file(error); }

  trace::StringId intern(std::string_view text) override {
    if (!ensure_open()) return fallback_intern(text);
    return writer_->intern(text);
  }
  trace::StackId intern_stack(std::span<const trace::StackFrame> frames) override {
    if (!ensure_open()) return trace::StackId{};
    return writer_->intern_stack(frames);
  }
  void metadata(std::string_view key, std::string_view value) override {
    if (writer_) {
      writer_->write_metadata(key, value);
    } else if (!open_failed_) {
      pending_metadata_.emplace_back(key, value);
    }
  }
  void module(const trace::ModuleMapping& module) override {
    if (ensure_open()) writer_->write_module(module);
  }

#define MEMTOOL_EVENT(name, Type, kind, tag, role, fields) \
  void write(const trace::Type& event) override {          \
    if (ensure_open()) writer_->write(event);              \
  }
#include "memtool/trace/events.def"
  void write_gpu_time(const trace::GpuTimeRecord& record) override {
    if (ensure_open()) writer_->write(record);
  }

  void flush() override {
    if (!writer_) return;
    writer_->flush();
    report_failure();
  }
  void close() override {
    if (!writer_) return;  // nothing recorded: no file
    writer_->close();
    report_failure();
  }
  void abandon_after_fork() override {
    if (writer_) writer_->abandon_after_fork();
    open_failed_ = true;  // a forked child never creates the parent's file either
  }
  bool failed() const override { return open_failed_ || (writer_ && writer_->failed()); }

 private:
  // Opens the file on the first record that needs it (see the file's comment).
  bool ensure_open() {
    if (writer_) return true;
    if (open_failed_) return false;
    std::string error;
    if (!open_file(&error)) {
      open_failed_ = true;
      Log::write(LogLevel::error, "cannot write the trace to {}: {}; the program runs on without it", path_, error);
      return false;
    }
    for (const auto& [key, value] : pending_metadata_) writer_->write_metadata(key, value);
    pending_metadata_.clear();
    return true;
  }

  // Opens the file; when another process holds its lock (two processes on one MEMTOOL_TRACE would
  // interleave into an unreadable file), this one records to `<path>.<pid>` and says so.
  bool open_file(std::string* error) {
    const std::string name = process_name();
    if (written_by(path_, name)) {
      std::string next;
      for (int i = 1; i <= kMaxExecFiles; ++i) {
        next = path_ + ".exec" + std::to_string(i);
        if (!written_by(next, name)) break;
      }
      Log::write(LogLevel::warn,
                 "MEMTOOL_TRACE={}: this process wrote that trace before it called exec; it is kept, and the new "
                 "program records to {}",
                 path_, next);
      path_ = next;
    }
    bool in_use = false;
    options_.in_use = &in_use;
    writer_ = trace::TraceWriter::open(path_, options_, error);
    options_.in_use = nullptr;
    if (!writer_ && in_use) {
      const std::string own = path_ + "." + std::to_string(::getpid());
      Log::write(LogLevel::warn, "MEMTOOL_TRACE={}: another process is writing that trace; this one ({}) records to {}",
                 path_, ::getpid(), own);
      path_ = own;
      writer_ = trace::TraceWriter::open(path_, options_, error);
    }
    if (writer_ && !name.empty()) writer_->write_metadata("process", name);
    return writer_ != nullptr;
  }

  // Names for the detector when the file could not be created (the recorder needs one id each).
  trace::StringId fallback_intern(std::string_view text) {
    const auto [it, inserted] =
        fallback_names_.try_emplace(std::string(text), static_cast<std::uint32_t>(fallback_names_.size()));
    (void)inserted;
    return trace::StringId{it->second};
  }

  // Once: the trace stops where writing failed (what reached the file reads as a truncated trace).
  void report_failure() {
    if (!writer_->failed() || failure_reported_) return;
    failure_reported_ = true;
    Log::write(LogLevel::error, "writing the trace {} failed ({}): it ends after {} bytes; the program runs on", path_,
               std::strerror(writer_->error_number()), writer_->bytes_written());
  }

  std::string path_;
  trace::TraceWriter::Options options_;
  std::unique_ptr<trace::TraceWriter> writer_;
  std::vector<std::pair<std::string, std::string>> pending_metadata_;
  std::unordered_map<std::string, std::uint32_t> fallback_names_;
  bool open_failed_ = false;
  bool failure_reported_ = false;
};

trace::TraceWriter::Options writer_options(std::uint64_t max_bytes) {
  trace::TraceWriter::Options options;
  options.caller_serialises = true;  // the recorder makes every call under its emit lock
  options.map_file = true;           // every record survives the process, whatever ends it
  options.max_bytes = max_bytes;
  options.on_limit = [](void* context, std::uint64_t events) {
    Log::write(LogLevel::warn,
               "the trace {} reached MEMTOOL_TRACE_LIMIT after {} events: it ends there (a complete trace of the run "
               "so far); recording and detection go on without it",
               *static_cast<const std::string*>(context), events);
  };
  return options;
}

// What opening `path` later would run into, said now in TraceWriter::open's words: a path that
// is not a regular file (a FIFO would block the program), a folder that does not exist or
// cannot be written. "" when it looks writable.
std::string path_problem(const std::string& path) {
  const auto cannot_open = [&](int err) { return path + ": cannot open for writing: " + std::strerror(err); };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return path + ": not a regular file (a FIFO, device or directory): a trace must be a file";
    return ::access(path.c_str(), W_OK) == 0 ? std::string() : cannot_open(errno);
  }
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) return cannot_open(errno);
  if (!S_ISDIR(st.st_mode)) return cannot_open(ENOTDIR);
  return ::access(dir.c_str(), W_OK | X_OK) == 0 ? std::string() : cannot_open(errno);
}

}  // namespace

std::unique_ptr<EventSink> open_trace_sink(const std::string& path, std::uint64_t max_bytes, std::string* error) {
  auto sink = std::make_unique<TraceWriterSink>(path, writer_options(max_bytes));
  if (!sink->open_now(error)) return nullptr;
  return sink;
}

std::unique_ptr<EventSink> open_deferred_trace_sink(const std::string& path, std::uint64_t max_bytes,
                                                    std::string* error) {
  const std::string problem = path_problem(path);
  if (!problem.empty()) {
    if (error != nullptr) *error = problem;
    return nullptr;
  }
  return std::make_unique<TraceWriterSink>(path, writer_options(max_bytes));
}

}  // namespace memtool::interpose
