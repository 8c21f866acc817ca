// DetectionWorker: a token ring in front of the StepFinder (see detection_worker.hpp).
#include "memtool/engine/detection_worker.hpp"

#include <signal.h>
#include <time.h>

#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "memtool/engine/log.hpp"

namespace memtool::engine {

namespace {
constexpr std::uint64_t kPublishEvery = 1024;  // the worker frees ring space in chunks
// Record mode only reports what it found at exit: a lazy worker costs nothing. A strategy that
// plans needs the step while the program runs (a short one is over in a fraction of a second).
constexpr auto kBusyPoll = std::chrono::milliseconds(20);
constexpr auto kIdlePoll = std::chrono::milliseconds(200);
constexpr auto kEagerBusyPoll = std::chrono::milliseconds(2);
constexpr auto kEagerIdlePoll = std::chrono::milliseconds(10);
}  // namespace

DetectionWorker::DetectionWorker(const StepFinderOptions& options, bool synchronous, bool eager)
    : ring_(new Entry[kCapacity]),
      start_failed_(synchronous),
      synchronous_(synchronous),
      eager_(eager),
      finder_(options) {}

DetectionWorker::~DetectionWorker() { stop(); }

void DetectionWorker::put(const Entry& entry) noexcept {
  if (!started_ && !start_failed_) start();
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_seen_ >= kCapacity) {
    tail_seen_ = tail_.load(std::memory_order_acquire);
    if (head - tail_seen_ >= kCapacity) {  // no worker, or it is a whole ring behind: catch up here
      std::lock_guard lock(finder_mutex_);
      drain_locked();
      tail_seen_ = tail_.load(std::memory_order_relaxed);
    }
  }
  ring_[head & (kCapacity - 1)] = entry;
  head_.store(head + 1, std::memory_order_release);
  // A strategy waiting for its step takes it at the first boundary whose window is complete,
  // which the finder accepts only a few tokens before: found one poll late, the boundary has
  // passed and the plan serves a whole step later. Until a step is accepted the producer runs
  // the finder itself (the cost MEMTOOL_POOL_SYNC_PLANNING pays throughout, here only while
  // there is no step); from then on the worker does.
  if (synchronous_ || (eager_ && !has_step_.load(std::memory_order_acquire))) {
    std::lock_guard lock(finder_mutex_);
    drain_locked();
    tail_seen_ = head + 1;
    return;
  }
  // Half full (as far as we know): make sure the worker is draining rather than sleeping.
  if (head + 1 - tail_seen_ >= kCapacity / 2) {
    tail_seen_ = tail_.load(std::memory_order_acquire);
    if (head + 1 - tail_seen_ < kCapacity / 2) {
      woken_ = false;
    } else if (!woken_ && started_) {
      woken_ = true;
      wake();
    }
  }
}

void DetectionWorker::start() noexcept {
  // The worker must never receive the program's signals: block them all while it is made.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_attr_t attr;
  bool ok = pthread_attr_init(&attr) == 0;
  if (ok) {
    (void)pthread_attr_setstacksize(&attr, 1u << 20);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    ok = pthread_create(&thread_, &attr, &DetectionWorker::thread_main, this) == 0;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_attr_destroy(&attr);
  }
  if (ok) {
    (void)pthread_setname_np(thread_, "memtool-detect");
    started_ = true;
  } else {
    start_failed_ = true;
    log(LogLevel::warn, "cannot start the detection thread: iterations are detected on the calling threads");
  }
}

void* DetectionWorker::thread_main(void* self) noexcept {
  static_cast<DetectionWorker*>(self)->run();
  return nullptr;
}

void DetectionWorker::wake() noexcept { sleep_.notify_one(); }

void DetectionWorker::run() noexcept {
  try {
    std::unique_lock sleep_lock(sleep_mutex_);
    while (!stopping_) {
      sleep_lock.unlock();
      bool busy = false;
      {
        std::lock_guard lock(finder_mutex_);
        busy = drain_locked();
      }
      timespec cpu{};
      if (busy && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
        worker_cpu_ns_.store(
            static_cast<std::uint64_t>(cpu.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(cpu.tv_nsec),
            std::memory_order_relaxed);
      }
      sleep_lock.lock();
      if (stopping_) break;
      // A missed wake-up costs at most one poll: the producer never waits for us.
      if (eager_) {
        sleep_.wait_for(sleep_lock, busy ? kEagerBusyPoll : kEagerIdlePoll);
      } else {
        sleep_.wait_for(sleep_lock, busy ? kBusyPoll : kIdlePoll);
      }
    }
  } catch (...) {
    // Only the locks can throw (system errors): the producer drains by itself from now on.
  }
}

bool DetectionWorker::drain_locked() noexcept {
  std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  if (tail == head) return false;
  try {
    while (tail != head) {
      const Entry entry = ring_[tail & (kCapacity - 1)];
      const bool changed = (entry.info & kMarkBit) != 0
                               ? finder_.mark()
                               : finder_.push(entry.token, entry.info & kBytesMask, (entry.info & kAllocationBit) != 0,
                                              (entry.info & kGraphBit) != 0);
      if (changed) publish_locked();
      if (++tail % kPublishEvery == 0) tail_.store(tail, std::memory_order_release);
    }
  } catch (const std::exception& e) {
    // Out of memory growing the detector's tables: skip the rest of this batch, keep going.
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) log(LogLevel::warn, fmt::format("iteration detection lost events: {}", e.what()));
    tail = head;
  }
  tail_.store(tail, std::memory_order_release);
  return true;
}

void DetectionWorker::publish_locked() noexcept {
  has_step_.store(finder_.step().has_value(), std::memory_order_release);
  if (const auto proposal = finder_.proposal()) period_ = proposal->period;
  generation_.fetch_add(1, std::memory_order_acq_rel);
  // Said once per step found, not each time a break withdraws it and it comes back.
  const auto& step = finder_.found();
  if (!step || (step->period == logged_period_ && step->from_marks == logged_marks_)) return;
  logged_period_ = step->period;
  logged_marks_ = step->from_marks;
  if (step->from_marks) {
    log(LogLevel::info, fmt::format("iteration found: {} events between explicit marks", step->period));
  } else {
    log(LogLevel::info, fmt::format("iteration found: {} events ({} allocations, peak {} bytes live), "
                                    "boundaries where the fewest bytes are live",
                                    step->period, step->allocations, step->peak_bytes));
  }
}

std::optional<Step> DetectionWorker::step_now() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    drain_locked();
    return finder_.found();
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<trace::DetectedPeriod> DetectionWorker::proposal_now() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    drain_locked();
    return finder_.proposal();
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<Step> DetectionWorker::published_step() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    return finder_.step();
  } catch (...) {
    return std::nullopt;
  }
}

void DetectionWorker::reject(std::uint64_t period) noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    if (finder_.reject(period)) publish_locked();
  } catch (...) {}
}

void DetectionWorker::restart() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    drain_locked();
    if (finder_.restart()) publish_locked();
    period_.reset();
  } catch (...) {}
}

std::uint64_t DetectionWorker::rejected() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    return finder_.rejected();
  } catch (...) {
    return 0;
  }
}

std::optional<std::uint64_t> DetectionWorker::period_now() noexcept {
  try {
    std::lock_guard lock(finder_mutex_);
    drain_locked();
    if (const auto proposal = finder_.proposal()) period_ = proposal->period;
    return period_;
  } catch (...) {
    return std::nullopt;  // a lock failure (system error): no answer rather than a wrong one
  }
}

void DetectionWorker::stop() noexcept {
  if (!started_) return;
  try {
    {
      std::lock_guard lock(sleep_mutex_);
      stopping_ = true;
    }
  } catch (...) {}
  sleep_.notify_one();
  pthread_join(thread_, nullptr);
  started_ = false;
  start_failed_ = true;  // later tokens (none are expected) are processed by the producer
}

void DetectionWorker::after_fork_in_child() noexcept {
  // Only the forking thread exists: no worker to stop or join, and its locks may be held by
  // a thread that is gone, so the child never touches them again.
  started_ = false;
  start_failed_ = true;
  finder_mutex_.unlock();
}

}  // namespace memtool::engine
