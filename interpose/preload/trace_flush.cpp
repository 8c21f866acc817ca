// Keeping the trace of a run that is killed. The trace goes out through a 1 MiB buffer, so a
// run stopped by SIGTERM (`timeout`, a batch scheduler), SIGINT (Ctrl-C) or SIGHUP used to lose
// everything since the last full buffer — a short run, all of it. Two things keep it:
//   - a thread of ours flushes the buffer about once a second, so even SIGKILL loses at most
//     the last second;
//   - handlers for those three signals flush, then hand the signal on: to the handler the
//     program had installed (chained), or to the default action, which ends the process as it
//     would have without us. A program that ignores the signal still ignores it.
// The handlers are async-signal-safe: flush_from_signal takes no lock it could wait on for
// long and writes with write(2); errno is preserved.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <iterator>

#include "memtool/interpose/log.hpp"
#include "preload.hpp"

namespace memtool::interpose::preload {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr time_t kFlushPeriodSeconds = 1;

EventSink* g_flush_sink = nullptr;  // set before the thread and the handlers start; never deleted
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
  g_flush_sink->flush_from_signal();
  errno = saved_errno;
  hand_on(signal, info, context);
}

void* flush_periodically(void* /*unused*/) {
  for (;;) {
    timespec left{kFlushPeriodSeconds, 0};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    try {
      g_flush_sink->flush();  // after the trace is closed: nothing to do
    } catch (...) {
      MEMTOOL_LOG_ONCE(LogLevel::error, "flushing the trace failed; it is written when its buffer fills");
    }
  }
  return nullptr;
}

}  // namespace

void start_trace_flushing(EventSink* sink) noexcept {
  g_flush_sink = sink;
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
  if (created == 0) (void)pthread_setname_np(thread, "memtool-flush");
  if (created != 0) {
    Log::write(LogLevel::warn, "cannot start the trace flush thread: a killed run keeps what a signal handler flushes");
  }

  for (std::size_t slot = 0; slot < std::size(kStopSignals); ++slot) {
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

}  // namespace memtool::interpose::preload
