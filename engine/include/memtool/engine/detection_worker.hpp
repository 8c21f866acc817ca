// Step finding off the calling thread.
//
// The detector costs a few hundred instructions per token, more than everything else memtool
// does for a launch; training's launch thread is the one that must not wait. So the observer
// only stores each token (with the live bytes after its event) in a ring, one store under the
// lock it already holds, and a worker thread feeds the ring to the StepFinder
// (step_finder.hpp), the way CUPTI hands activity buffers to a client thread. The finder sees
// exactly the same sequence of tokens and marks, only later; `period_now()` and `step_now()`
// catch up on the caller's thread when an exact answer is needed (stats, exit). A step the
// worker accepts is published: `step_generation()` changes (one relaxed load for the producer
// to notice) and `published_step()` reads it.
//
// Fail-open and bounded: if the worker cannot be started, or falls a whole ring behind, the
// producer runs the finder itself — nothing is dropped. A strategy that waits for the step
// (`eager`) has the producer run it until a step is accepted: the finder accepts a step a few
// tokens before the boundary a plan starts at, and a worker a poll behind would miss it.
// Threading contract: push()/mark()/period_now() are called by one producer at a time (the
// observer's owner's lock); the worker only ever takes `finder_mutex_`.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "memtool/engine/step_finder.hpp"

namespace memtool::engine {

class DetectionWorker {
 public:
  // `synchronous`: no worker thread; the producer runs the finder at every token (deterministic
  // tests, MEMTOOL_POOL_SYNC_PLANNING). `eager`: a strategy waits for the step: until one is
  // accepted the producer runs the finder at every token (the step is taken at the boundary
  // where it is found, not a poll later), and then the worker looks every few milliseconds
  // rather than every 20-200.
  explicit DetectionWorker(const StepFinderOptions& options = {}, bool synchronous = false, bool eager = false);
  ~DetectionWorker();  // stop()
  DetectionWorker(const DetectionWorker&) = delete;
  DetectionWorker& operator=(const DetectionWorker&) = delete;

  // Producer side (serialised by the caller).
  void push(std::uint64_t token, std::uint64_t live_bytes, bool allocation, bool graph_launch = false) noexcept {
    put(Entry{token, (live_bytes & kBytesMask) | (allocation ? kAllocationBit : 0) | (graph_launch ? kGraphBit : 0)});
  }
  void mark() noexcept { put(Entry{0, kMarkBit}); }

  // Processes everything queued so far, on this thread, and returns the detector's period
  // (signature events per iteration). Producer side.
  std::optional<std::uint64_t> period_now() noexcept;
  // The same catch-up, then the step as found (kept while a break withdraws it).
  std::optional<Step> step_now() noexcept;
  // The same catch-up, then what the detector proposes (before the finder's checks).
  std::optional<trace::DetectedPeriod> proposal_now() noexcept;

  // Changes whenever the accepted step changes (any thread; relaxed).
  [[nodiscard]] std::uint64_t step_generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  // The step accepted as of the worker's last pass (takes the finder's lock).
  [[nodiscard]] std::optional<Step> published_step() noexcept;
  // Feedback from a plan (any thread): this period is wrong / the program changed.
  void reject(std::uint64_t period) noexcept;
  void restart() noexcept;
  [[nodiscard]] std::uint64_t rejected() noexcept;

  // CPU time the worker thread has used so far (as of its last pass over the ring).
  [[nodiscard]] std::uint64_t worker_cpu_ns() const noexcept { return worker_cpu_ns_.load(std::memory_order_relaxed); }

  // Joins the worker; what is still queued is processed by the next period_now(). Idempotent.
  void stop() noexcept;

  // fork(): the finder must not be mid-update while the child is made; the child has no
  // worker thread and processes on its own (it normally records nothing more).
  void before_fork() noexcept { finder_mutex_.lock(); }
  void after_fork_in_parent() noexcept { finder_mutex_.unlock(); }
  void after_fork_in_child() noexcept;

 private:
  static constexpr std::uint64_t kMarkBit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kAllocationBit = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kGraphBit = std::uint64_t{1} << 61;
  static constexpr std::uint64_t kBytesMask = kGraphBit - 1;
  struct Entry {
    std::uint64_t token;
    std::uint64_t info;  // live bytes | kGraphBit | kAllocationBit | kMarkBit
  };
  static constexpr std::uint64_t kCapacity = 1u << 13;  // entries; 128 KiB

  void put(const Entry& entry) noexcept;
  void start() noexcept;
  void wake() noexcept;
  void run() noexcept;
  bool drain_locked() noexcept;  // holding finder_mutex_; true if anything was processed
  void publish_locked() noexcept;
  static void* thread_main(void* self) noexcept;

  // The producer's fields share one cache line. head_: written by the producer only; tail_:
  // by whoever holds finder_mutex_.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::unique_ptr<Entry[]> ring_;
  std::uint64_t tail_seen_ = 0;  // the producer's last look at tail_ (saves a shared read per push)
  bool woken_ = false;           // the producer asked the worker to drain since tail_seen_
  bool started_ = false;
  bool start_failed_ = false;
  const bool synchronous_ = false;
  const bool eager_ = false;
  alignas(64) std::atomic<std::uint64_t> tail_{0};

  std::mutex finder_mutex_;
  StepFinder finder_;
  std::optional<std::uint64_t> period_;  // guarded by finder_mutex_
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> has_step_{false};  // the finder has an accepted step (as of the last publish)
  std::uint64_t logged_period_ = 0;    // guarded by finder_mutex_
  bool logged_marks_ = false;

  std::atomic<std::uint64_t> worker_cpu_ns_{0};

  std::mutex sleep_mutex_;
  std::condition_variable sleep_;
  bool stopping_ = false;  // guarded by sleep_mutex_
  pthread_t thread_{};
};

}  // namespace memtool::engine
