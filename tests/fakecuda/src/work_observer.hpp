// The optional work observer of control.h (fakecuda_set_work_observer): a profiler stand-in
// learns when each kernel, copy and memset was issued and when it ran. `observed` wraps the
// work a stream will run so that its start and end are timed on the worker thread; with no
// observer installed it hands the work back unchanged after one atomic load.
#pragma once

#include <fakecuda/control.h>

#include <time.h>

#include <atomic>
#include <functional>
#include <utility>

namespace fakecuda {

namespace detail {
extern std::atomic<const fakecuda_work_observer*> g_work_observer;

inline unsigned long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1000000000ULL + static_cast<unsigned long long>(ts.tv_nsec);
}

// When the work really began, if later than when the worker picked it up (a copy that queued
// for its copy engine); 0 otherwise. Set by the work itself on the worker thread.
inline thread_local unsigned long long tls_work_started_ns = 0;
}  // namespace detail

// Called by work that waited before it really started (see tls_work_started_ns).
inline void note_work_started() noexcept { detail::tls_work_started_ns = detail::monotonic_ns(); }

// The observer work issued now reports to, or nullptr.
inline const fakecuda_work_observer* work_observer() noexcept {
  return detail::g_work_observer.load(std::memory_order_acquire);
}

// `run` as the stream should run it: told to `observer` (on this, the issuing thread) and timed
// on the worker thread when there is one.
template <class Run>
std::function<void()> observed(const fakecuda_work_observer* observer, const fakecuda_work& work, Run run) {
  if (observer == nullptr) return std::function<void()>(std::move(run));
  const unsigned long long tag = observer->issued(&work, observer->user);
  return [observer, tag, run = std::move(run)]() mutable {
    detail::tls_work_started_ns = 0;
    const unsigned long long picked_up = detail::monotonic_ns();
    run();
    const unsigned long long start = detail::tls_work_started_ns != 0 ? detail::tls_work_started_ns : picked_up;
    observer->ran(tag, start, detail::monotonic_ns(), observer->user);
  };
}

}  // namespace fakecuda
