// Keeping the trace of a run that is killed. The trace goes out through a 1 MiB buffer, so a
// run stopped by SIGTERM (`timeout`, a batch scheduler), SIGINT (Ctrl-C) or SIGHUP used to lose
// everything since the last full buffer — a short run, all of it. Now:
//   - a thread of ours flushes the buffer about once a second (Recorder::flush_trace, under the
//     recorder's own lock, so recording pays nothing for it): SIGKILL loses at most a second;
//   - handlers for those three signals ask that thread for a flush at once and wait for it (a
//     bounded wait), then hand the signal on: to the handler the program had installed
//     (chained), or to the default action, which ends the process as it would have without
//     us. A signal ignored when tracing starts (nohup, or the program's SIG_IGN) gets no handler
//     at all: the program and the programs it execs keep ignoring it.
// The handlers are async-signal-safe: a write(2) to a pipe, atomics and nanosleep. They take no
// lock: if the thread they interrupted holds the recorder's, the flush thread waits for it and
// the handler gives up after kSignalWaitMs, keeping what the timer flushed.
// Since the trace file is mapped (TraceWriter::Options::map_file, trace_sink.cpp), every record
// is in the file as it is written and these flushes find nothing to do; they keep the trace
// where the file system cannot be mapped and the writer falls back to its buffer.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <iterator>

#include "memtool/interpose/log.hpp"
#include "preload.hpp"

namespace memtool::interpose::preload {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr int kFlushPeriodMs = 1000;
constexpr unsigned kSignalWaitMs = 200;

Recorder* g_flushed = nullptr;  // set before the thread and the handlers start; never deleted
int g_wake[2] = {-1, -1};       // a pipe: a handler's byte wakes the flush thread at once
// Tickets: a handler takes one, the thread marks the highest it served once its flush is done.
std::atomic<unsigned> g_requested{0};
std::atomic<unsigned> g_served{0};
std::atomic<bool> g_thread_running{false};  // false in a forked child: nobody would answer
struct sigaction g_previous[std::size(kStopSignals)];

void hand_on(int signal, siginfo_t* info, void* context) {
  std::size_t slot = 0;
  while (kStopSignals[slot] != signal) ++slot;
  const struct sigaction& previous = g_previous[slot];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler == SIG_DFL) {
    // The default action (the process ends): restored and raised again. The signal is blocked
    // while this handler runs, so it lands the moment we return.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(signal, &default_action, nullptr);
    raise(signal);
    return;
  }
  previous.sa_handler(signal);
}

void on_stop_signal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (g_thread_running.load(std::memory_order_acquire)) {
    const unsigned ticket = g_requested.fetch_add(1, std::memory_order_acq_rel) + 1;
    const char wake = 1;
    (void)!write(g_wake[1], &wake, 1);  // full pipe (EAGAIN): a wake-up is pending anyway
    for (unsigned waited = 0; waited < kSignalWaitMs; ++waited) {
      if (static_cast<int>(g_served.load(std::memory_order_acquire) - ticket) >= 0) break;
      const timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }
  errno = saved_errno;
  hand_on(signal, info, context);
}

void* flush_periodically(void* /*unused*/) {
  for (;;) {
    pollfd wake{g_wake[0], POLLIN, 0};
    if (poll(&wake, 1, kFlushPeriodMs) > 0) {
      char drained[64];
      while (read(g_wake[0], drained, sizeof drained) > 0) {}
    }
    const unsigned asked = g_requested.load(std::memory_order_acquire);
    g_flushed->flush_trace();  // after the trace is closed: nothing to do
    g_served.store(asked, std::memory_order_release);
  }
  return nullptr;
}

}  // namespace

void start_trace_flushing(Recorder* recorder) noexcept {
  g_flushed = recorder;
  if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    Log::write(LogLevel::warn,
               "cannot start the trace flush thread (pipe): the trace is written when its buffer fills");
    return;
  }
  // The thread takes no signal of the program's: they go to the program's own threads.
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  pthread_t thread;
  const int created = pthread_create(&thread, &attributes, flush_periodically, nullptr);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (created != 0) {
    Log::write(LogLevel::warn, "cannot start the trace flush thread: the trace is written when its buffer fills");
    return;
  }
  (void)pthread_setname_np(thread, "memtool-flush");
  g_thread_running.store(true, std::memory_order_release);

  for (std::size_t slot = 0; slot < std::size(kStopSignals); ++slot) {
    // An ignored signal stays ignored, and is left alone: under nohup (or after the program's
    // own SIG_IGN) a handler of ours would be what the program's sigaction reports, and exec
    // resets a handler to the default action, so its children would die of the signal.
    struct sigaction current {};
    if (sigaction(kStopSignals[slot], nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
        current.sa_handler == SIG_IGN) {
      continue;
    }
    struct sigaction ours {};
    ours.sa_sigaction = on_stop_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (sigaction(kStopSignals[slot], &ours, &g_previous[slot]) != 0) {
      Log::write(LogLevel::warn, "cannot install a handler for signal {}: its trace is flushed by the timer only",
                 kStopSignals[slot]);
    }
  }
}

void trace_flushing_after_fork_in_child() noexcept {
  // The thread did not come along; the handlers stay (they chain) but wait for nobody.
  g_thread_running.store(false, std::memory_order_release);
}

}  // namespace memtool::interpose::preload
