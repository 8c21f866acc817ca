// TraceWriterSink: the recorder's events into a trace file through trace::TraceWriter.
//
// The writer takes no lock of its own (the recorder serialises its calls), but the file must
// also be flushed from the preload's timer thread and from signal handlers, so that a run that
// is killed keeps its trace up to the kill. A small spin lock held around every call into the
// writer does that: the recorder's calls never contend with each other (its own lock orders
// them), only, rarely, with a flush. A signal handler never waits long for it: the thread it
// interrupted may be the holder.
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "memtool/interpose/event_sink.hpp"
#include "memtool/interpose/log.hpp"
#include "memtool/trace/writer.hpp"

namespace memtool::interpose {
namespace {

class SinkLock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire)) {
      for (unsigned spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          sched_yield();  // a flush is writing the buffer out
        }
      }
    }
  }
  // Async-signal-safe: polls every millisecond for at most `limit_ms`.
  bool try_lock_for(unsigned limit_ms) noexcept {
    for (unsigned waited = 0;; ++waited) {
      if (!held_.exchange(true, std::memory_order_acquire)) return true;
      if (waited >= limit_ms) return false;
      const timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }
  // In a forked child only this thread exists: whoever held the lock is gone.
  void reset() noexcept { held_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> held_{false};
};

class Locked {
 public:
  explicit Locked(SinkLock& lock) noexcept : lock_(lock) { lock_.lock(); }
  ~Locked() { lock_.unlock(); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  SinkLock& lock_;
};

constexpr unsigned kSignalWaitMs = 100;

class TraceWriterSink final : public EventSink {
 public:
  explicit TraceWriterSink(std::string path) : path_(std::move(path)) {}
  void attach(std::unique_ptr<trace::TraceWriter> writer) { writer_ = std::move(writer); }
  [[nodiscard]] void* path() noexcept { return &path_; }  // the limit message's context

  trace::StringId intern(std::string_view text) override {
    const Locked locked(lock_);
    return writer_->intern(text);
  }
  trace::StackId intern_stack(std::span<const trace::StackFrame> frames) override {
    const Locked locked(lock_);
    return writer_->intern_stack(frames);
  }
  void metadata(std::string_view key, std::string_view value) override {
    const Locked locked(lock_);
    writer_->write_metadata(key, value);
  }
  void module(const trace::ModuleMapping& module) override {
    const Locked locked(lock_);
    writer_->write_module(module);
  }

  void write(const trace::AllocEvent& event) override { locked_write(event); }
  void write(const trace::FreeEvent& event) override { locked_write(event); }
  void write(const trace::LaunchEvent& event) override { locked_write(event); }
  void write(const trace::GraphLaunchEvent& event) override { locked_write(event); }
  void write(const trace::CopyEvent& event) override { locked_write(event); }
  void write(const trace::MemsetEvent& event) override { locked_write(event); }
  void write(const trace::SyncEvent& event) override { locked_write(event); }
  void write(const trace::IterationMarkEvent& event) override { locked_write(event); }
  void write(const trace::StreamCreateEvent& event) override { locked_write(event); }
  void write(const trace::FailedFreeEvent& event) override { locked_write(event); }

  void flush() override {
    then_report([this] { writer_->flush(); });
  }
  void flush_from_signal() noexcept override {
    if (!lock_.try_lock_for(kSignalWaitMs)) return;  // the timer flushed at most a second ago
    writer_->flush();
    lock_.unlock();
  }

  void close() override {
    then_report([this] { writer_->close(); });
  }
  void abandon_after_fork() override {
    lock_.reset();
    writer_->abandon_after_fork();
  }
  bool failed() const override {
    const Locked locked(lock_);
    return writer_->failed();
  }

 private:
  template <class Event>
  void locked_write(const Event& event) {
    const Locked locked(lock_);
    writer_->write(event);
  }

  // Runs `step` (a flush or the close) under the lock, then says once, outside it, if writing
  // failed: the trace stops there (what reached the file reads as a truncated trace).
  template <class Step>
  void then_report(const Step& step) {
    bool failed = false;
    int error = 0;
    std::uint64_t bytes = 0;
    {
      const Locked locked(lock_);
      step();
      failed = writer_->failed();
      error = writer_->error_number();
      bytes = writer_->bytes_written();
    }
    if (!failed || failure_reported_.exchange(true)) return;
    Log::write(LogLevel::error, "writing the trace {} failed ({}): it ends after {} bytes; the program runs on",
               path_, std::strerror(error), bytes);
  }

  std::string path_;
  std::unique_ptr<trace::TraceWriter> writer_;
  mutable SinkLock lock_;
  std::atomic<bool> failure_reported_{false};
};

}  // namespace

std::unique_ptr<EventSink> open_trace_sink(const std::string& path, std::uint64_t max_bytes, std::string* error) {
  trace::TraceWriter::Options options;
  options.caller_serialises = true;  // the recorder orders every call; TraceWriterSink adds the flushes
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
