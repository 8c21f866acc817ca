// The Observer: index, accesses, ticks, boundaries and windows (see observer.hpp).
#include "memtool/engine/observer.hpp"

#include <algorithm>

#include "memtool/trace/signature.hpp"

namespace memtool::engine {

// --- BoundaryFeed -------------------------------------------------------------------------------

Boundary BoundaryFeed::latest(std::uint32_t owner) const {
  std::lock_guard lock(mutex_);
  Boundary b = latest_;
  if (owner < windows_.size()) b.window = windows_[owner];
  return b;
}

void BoundaryFeed::publish(const Boundary& boundary, std::vector<std::shared_ptr<const IterationWindow>> windows) {
  {
    std::lock_guard lock(mutex_);
    latest_ = boundary;
    windows_ = std::move(windows);
  }
  count_.fetch_add(1, std::memory_order_acq_rel);
}

// --- Observer -----------------------------------------------------------------------------------

Observer::Observer(const ObserverOptions& options)
    : options_(options),
      detection_(options.steps, options.synchronous_detection, options.keep_windows),
      wants_(new std::atomic<bool>[std::max<std::uint32_t>(options.max_owners, 1)]) {
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(options_.max_owners, 1); ++i) wants_[i].store(false);
  if (options_.keep_windows) {
    // Enough for a window one period old of the longest period found, with buffers living up to
    // WindowRecorder::kMaxSlots periods.
    const std::uint64_t retain =
        (WindowRecorder::kMaxSlots + 2) * std::max<std::uint64_t>(options_.steps.detector.max_period, 8);
    windows_ = std::make_unique<WindowRecorder>(retain, options_.keep_accesses);
  }
}

Observer::~Observer() = default;

void Observer::want_windows(std::uint32_t owner, bool want) noexcept {
  if (owner < options_.max_owners) wants_[owner].store(want, std::memory_order_relaxed);
}

void Observer::on_alloc(std::uint64_t base, std::uint64_t size, MemoryKind kind, StreamId stream, std::uint32_t owner) {
  LiveBuffer buffer{base, size, kind, owner, 0};
  if (windows_) buffer.record = windows_->on_alloc(tick_, size, kind, stream, owner);
  index_.insert(buffer);
  tick(trace::SignatureBuilder::alloc_token(size, kind), true);
}

std::optional<LiveBuffer> Observer::on_free(std::uint64_t base) {
  const auto buffer = index_.erase(base);
  if (buffer && windows_) windows_->on_free(buffer->record, tick_);
  tick(buffer ? trace::SignatureBuilder::free_token(buffer->size) : trace::SignatureBuilder::unknown_free_token(),
       false);
  return buffer;
}

std::vector<LiveBuffer> Observer::on_unmap(std::uint64_t begin, std::uint64_t end) {
  std::vector<LiveBuffer> removed = index_.erase_range(begin, end);
  for (const LiveBuffer& buffer : removed) {
    if (windows_) windows_->on_free(buffer.record, tick_);
    tick(trace::SignatureBuilder::free_token(buffer.size), false);
  }
  return removed;
}

void Observer::record_accesses(std::span<const std::uint64_t> bases, StreamId stream, AccessKind kind) {
  if (!windows_ || !windows_->keeps_accesses()) return;
  for (const std::uint64_t base : bases) {
    if (const LiveBuffer* buffer = index_.find(base)) windows_->on_access(buffer->record, tick_, stream, kind);
  }
}

void Observer::on_launch(std::span<const std::uint64_t> words, StreamId stream, std::uint64_t token,
                         std::vector<std::uint64_t>& touched) {
  touched.clear();
  index_.scan(words, touched);
  record_accesses(touched, stream, AccessKind::launch);
  tick(token, false);
}

void Observer::on_graph_launch(std::span<const std::uint64_t> words, bool opaque, StreamId stream, std::uint64_t token,
                               std::vector<std::uint64_t>& touched) {
  touched.clear();
  if (opaque) {
    index_.append_all_device(touched);
  } else {
    index_.scan(words, touched);
  }
  record_accesses(touched, stream, AccessKind::launch);
  tick(token, false, true);
}

void Observer::on_transfer(std::uint64_t dst, std::uint64_t src, StreamId stream, AccessKind kind, std::uint64_t token,
                           std::vector<std::uint64_t>& touched) {
  touched.clear();
  const std::uint64_t words[2] = {dst, src};
  index_.scan(std::span<const std::uint64_t>(words, src != 0 ? 2 : 1), touched);
  record_accesses(touched, stream, kind);
  tick(token, false);
}

void Observer::on_mark() {
  detection_.mark();
  mark_ticks_.push_back(tick_);
  if (mark_ticks_.size() > 4) mark_ticks_.erase(mark_ticks_.begin());
  if (detection_.step_generation() != step_generation_) refresh_step();
  if (step_ && step_->from_marks) fire_boundary(true);
}

void Observer::tick(std::uint64_t token, bool allocation, bool graph_launch) {
  detection_.push(token, index_.live_bytes(), allocation, graph_launch);
  ++tick_;
  if (detection_.step_generation() != step_generation_) refresh_step();
  if (tick_ == next_boundary_) fire_boundary(false);
}

void Observer::refresh_step() {
  step_generation_ = detection_.step_generation();
  step_ = detection_.published_step();
  next_boundary_ = ~std::uint64_t{0};
  if (!step_ || step_->from_marks || step_->period == 0) return;
  const std::uint64_t p = step_->period;
  // The first boundary phase + k * p at or after now.
  const std::uint64_t phase = step_->phase % p;
  const std::uint64_t base = tick_ - tick_ % p + phase;
  next_boundary_ = base >= tick_ ? base : base + p;
}

void Observer::fire_boundary(bool from_marks) {
  if (!step_) return;
  Boundary boundary;
  boundary.tick = tick_;
  boundary.from_marks = from_marks;
  std::uint64_t window_begin = 0;
  bool have_window = false;
  if (from_marks) {
    // [mark k-2, mark k-1): complete, with its frees in the iteration after it.
    if (mark_ticks_.size() >= 3) {
      const std::uint64_t m2 = mark_ticks_[mark_ticks_.size() - 3];
      const std::uint64_t m1 = mark_ticks_[mark_ticks_.size() - 2];
      boundary.period = m1 - m2;
      window_begin = m2;
      have_window = m1 > m2;
    }
  } else {
    boundary.period = step_->period;
    next_boundary_ = tick_ + step_->period;
    // The iteration before the last one: its buffers freed in the last iteration are known.
    if (tick_ >= 2 * step_->period) {
      window_begin = tick_ - 2 * step_->period;
      have_window = true;
    }
  }
  std::vector<std::shared_ptr<const IterationWindow>> cut;
  if (windows_ && have_window) {
    for (std::uint32_t owner = 0; owner < options_.max_owners; ++owner) {
      if (!wants_[owner].load(std::memory_order_relaxed)) continue;
      if (cut.size() <= owner) cut.resize(owner + 1);
      auto w = windows_->window(window_begin, boundary.period, owner, options_.alignment);
      // Only a window the iteration after it repeats exactly is worth a plan.
      const auto next = windows_->window(window_begin + boundary.period, boundary.period, owner, options_.alignment);
      if (w && next && windows_agree(*w, *next)) cut[owner] = std::make_shared<const IterationWindow>(std::move(*w));
    }
  }
  feed_.publish(boundary, std::move(cut));
}

}  // namespace memtool::engine
