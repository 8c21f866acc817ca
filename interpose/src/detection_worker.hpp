// Online iteration detection off the calling thread.
//
// The detector costs a few hundred instructions per token, more than everything else the
// recorder does for a launch; training's launch thread is the one that must not wait. So
// the recorder only stores each token in a ring (one store, under the emit lock it already
// holds), and a worker thread feeds the ring to the IterationDetector and logs what it finds,
// the way CUPTI hands activity buffers to a client thread. The detector sees exactly the same
// sequence of tokens and marks as before, only later; `period_now()` catches up on the
// caller's thread when an exact answer is needed (stats, exit).
//
// Fail-open and bounded: if the worker cannot be started, or falls a whole ring behind, the
// producer runs the detector itself (the old synchronous behaviour) — nothing is dropped.
// Threading contract: push()/mark()/period_now() are called by one producer at a time (the
// recorder's emit lock); the worker only ever takes `detector_mutex_`.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <memory>

#include "memtool/trace/iteration_detector.hpp"

namespace memtool::interpose {

class DetectionWorker {
 public:
  explicit DetectionWorker(const trace::IterationDetectorOptions& options = {});
  ~DetectionWorker();  // stop()
  DetectionWorker(const DetectionWorker&) = delete;
  DetectionWorker& operator=(const DetectionWorker&) = delete;

  // Producer side (serialised by the caller).
  void push(std::uint64_t token) noexcept { put(Entry{token, false}); }
  void mark() noexcept { put(Entry{0, true}); }

  // Processes everything queued so far, on this thread, and returns the period found
  // (signature events per iteration). Producer side.
  std::optional<std::uint64_t> period_now() noexcept;

  // CPU time the worker thread has used so far (as of its last pass over the ring).
  [[nodiscard]] std::uint64_t worker_cpu_ns() const noexcept { return worker_cpu_ns_.load(std::memory_order_relaxed); }

  // Joins the worker; what is still queued is processed by the next period_now(). Idempotent.
  void stop() noexcept;

  // fork(): the detector must not be mid-update while the child is made; the child has no
  // worker thread and processes on its own (it normally records nothing more).
  void before_fork() noexcept { detector_mutex_.lock(); }
  void after_fork_in_parent() noexcept { detector_mutex_.unlock(); }
  void after_fork_in_child() noexcept;

 private:
  struct Entry {
    std::uint64_t token;
    bool is_mark;
  };
  static constexpr std::uint64_t kCapacity = 1u << 13;  // entries; 128 KiB

  void put(const Entry& entry) noexcept;
  void start() noexcept;
  void wake() noexcept;
  void run() noexcept;
  bool drain_locked() noexcept;  // holding detector_mutex_; true if anything was processed
  static void* thread_main(void* self) noexcept;

  // The producer's fields share one cache line. head_: written by the producer only; tail_:
  // by whoever holds detector_mutex_.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::unique_ptr<Entry[]> ring_;
  std::uint64_t tail_seen_ = 0;  // the producer's last look at tail_ (saves a shared read per push)
  bool woken_ = false;           // the producer asked the worker to drain since tail_seen_
  bool started_ = false;
  bool start_failed_ = false;
  alignas(64) std::atomic<std::uint64_t> tail_{0};

  std::mutex detector_mutex_;
  trace::IterationDetector detector_;
  std::optional<std::uint64_t> period_;  // guarded by detector_mutex_

  std::atomic<std::uint64_t> worker_cpu_ns_{0};

  std::mutex sleep_mutex_;
  std::condition_variable sleep_;
  bool stopping_ = false;  // guarded by sleep_mutex_
  pthread_t thread_{};
};

}  // namespace memtool::interpose
