// The Observer: everything memtool learns about the program, in one place, for every
// strategy — the index of live buffers (which buffer an address is in), the buffers each
// launch, copy and memset touches, the step of the training loop (detection_worker.hpp,
// step_finder.hpp: found off the calling thread) and, when a strategy plans, the recent
// allocations and accesses it cuts iteration windows from (window_recorder.hpp).
//
// Time is counted in ticks, one per signature event (allocation, free, launch, copy, memset),
// the axis the step finder and the windows share. Once a step is known the observer knows
// where every boundary falls (phase + k * period, or the explicit marks); when the event before
// one has been observed it publishes the boundary — and, for runtimes that asked, the window
// of the last complete iteration — through boundaries() (thread-safe), which runtimes poll.
//
// Not thread-safe, except boundaries(), feedback and wanting windows: the caller (libmemtool's
// recorder, or a test) serialises the event calls under one lock, the same lock under which it
// writes the trace, so the index and the trace agree.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "memtool/engine/buffer_index.hpp"
#include "memtool/engine/detection_worker.hpp"
#include "memtool/engine/resource.hpp"
#include "memtool/engine/window_recorder.hpp"

namespace memtool::engine {

struct ObserverOptions {
  StepFinderOptions steps;
  bool keep_windows = false;           // a strategy plans: remember allocations for windows
  bool keep_accesses = false;          // ... and the accesses to them (swapping)
  std::uint64_t alignment = 512;       // of the planner problems in windows
  std::uint32_t max_owners = 8;        // runtimes (CUDA contexts) that can ask for windows
  bool synchronous_detection = false;  // find the step on the calling thread (deterministic)
};

// The boundaries published so far. Runtimes compare count() with the last they saw.
class BoundaryFeed {
 public:
  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_acquire); }
  // The latest boundary, with `owner`'s window if one was cut for it.
  [[nodiscard]] Boundary latest(std::uint32_t owner) const;
  void publish(const Boundary& boundary, std::vector<std::shared_ptr<const IterationWindow>> windows);

 private:
  std::atomic<std::uint64_t> count_{0};
  mutable std::mutex mutex_;
  Boundary latest_;
  std::vector<std::shared_ptr<const IterationWindow>> windows_;  // by owner
};

class Observer final : public PeriodFeedback {
 public:
  explicit Observer(const ObserverOptions& options = {});
  ~Observer() override;
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // --- events (serialised by the caller) ---
  // An allocation the program got (after the real call succeeded).
  void on_alloc(std::uint64_t base, std::uint64_t size, MemoryKind kind, StreamId stream, std::uint32_t owner);
  // A free (before the real call: the address may be reused at once). The buffer, if known.
  std::optional<LiveBuffer> on_free(std::uint64_t base);
  // cuMemUnmap: every buffer mapped in [begin, end).
  std::vector<LiveBuffer> on_unmap(std::uint64_t begin, std::uint64_t end);
  // A launch: the bases of the buffers its argument words point into go to `touched`.
  void on_launch(std::span<const std::uint64_t> words, StreamId stream, std::uint64_t token,
                 std::vector<std::uint64_t>& touched);
  // A launch of an executable graph: one work item touching what its nodes' words point into,
  // or, when memtool cannot read all its nodes (`opaque`), every live device buffer.
  void on_graph_launch(std::span<const std::uint64_t> words, bool opaque, StreamId stream, std::uint64_t token,
                       std::vector<std::uint64_t>& touched);
  // A copy or memset (src 0 for a memset): the buffers it touches go to `touched`.
  void on_transfer(std::uint64_t dst, std::uint64_t src, StreamId stream, AccessKind kind, std::uint64_t token,
                   std::vector<std::uint64_t>& touched);
  // An explicit iteration boundary (memtool_iteration_mark, MEMTOOL_ITERATION_KERNEL).
  void on_mark();

  [[nodiscard]] const BufferIndex& index() const { return index_; }
  [[nodiscard]] std::uint64_t ticks() const { return tick_; }

  // --- results ---
  [[nodiscard]] std::optional<std::uint64_t> period_now() { return detection_.period_now(); }
  [[nodiscard]] std::optional<Step> step_now() { return detection_.step_now(); }
  [[nodiscard]] std::optional<trace::DetectedPeriod> proposal_now() { return detection_.proposal_now(); }
  [[nodiscard]] std::uint64_t periods_rejected() { return detection_.rejected(); }
  [[nodiscard]] std::uint64_t detection_cpu_ns() const { return detection_.worker_cpu_ns(); }

  // --- for runtimes (thread-safe) ---
  [[nodiscard]] const BoundaryFeed& boundaries() const { return feed_; }
  // Whether `owner` wants a window cut at the next boundaries.
  void want_windows(std::uint32_t owner, bool want) noexcept;
  void period_wrong(std::uint64_t period) override { detection_.reject(period); }
  void program_changed() override { detection_.restart(); }

  // Life cycle.
  void stop() { detection_.stop(); }
  void before_fork() { detection_.before_fork(); }
  void after_fork_in_parent() { detection_.after_fork_in_parent(); }
  void after_fork_in_child() { detection_.after_fork_in_child(); }

 private:
  void tick(std::uint64_t token, bool allocation, bool graph_launch = false);  // after the event's index update
  void refresh_step();
  void fire_boundary(bool from_marks);
  void record_accesses(std::span<const std::uint64_t> bases, StreamId stream, AccessKind kind);

  ObserverOptions options_;
  BufferIndex index_;
  DetectionWorker detection_;
  std::unique_ptr<WindowRecorder> windows_;  // when a strategy plans
  std::uint64_t tick_ = 0;
  // The step as the observer last read it, and where the next boundary falls.
  std::uint64_t step_generation_ = 0;
  std::optional<Step> step_;
  std::uint64_t next_boundary_ = ~std::uint64_t{0};
  std::vector<std::uint64_t> mark_ticks_;       // the last few explicit marks
  std::unique_ptr<std::atomic<bool>[]> wants_;  // by owner
  BoundaryFeed feed_;
};

}  // namespace memtool::engine
