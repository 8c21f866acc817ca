// OpTimer: per-item GPU times of one iteration (see op_timer.hpp).
#include "op_timer.hpp"

#include <algorithm>

namespace memtool::engine::detail {

void OpTimer::begin() {
  release();
  host_.clear();
  ended_ = false;
  open_ = false;
}

void OpTimer::release() {
  for (EventId& e : marks_) events_.give(e);
  for (EventId& e : starts_) events_.give(e);
  marks_.clear();
  starts_.clear();
}

void OpTimer::mark(StreamId stream) {
  if (!timing_) return;
  const EventId e = events_.record(device_, stream);
  if (e == 0) {
    timing_ = false;  // host gaps from now on
    release();
    return;
  }
  marks_.push_back(e);
}

void OpTimer::item(StreamId stream) {
  if (ended_) return;
  // Before the first item: the start, on its stream; later ones: after the item before.
  if (host_.empty())
    mark(stream);
  else
    close();
  host_.push_back(std::chrono::steady_clock::now());
  starts_.push_back(0);
  last_stream_ = stream;
  open_ = true;
}

void OpTimer::close() {
  if (ended_ || !open_) return;
  mark(last_stream_);
  open_ = false;
}

void OpTimer::waited(StreamId stream) {
  if (ended_ || !timing_ || starts_.empty() || starts_.back() != 0) return;
  starts_.back() = events_.record(device_, stream);  // 0: timed from the mark, as without waits
}

void OpTimer::end() {
  if (ended_ || host_.empty()) return;
  close();
  host_.push_back(std::chrono::steady_clock::now());
  ended_ = true;
}

std::optional<std::vector<double>> OpTimer::poll() {
  if (!ended_) return std::nullopt;
  const std::size_t items = host_.size() - 1;
  std::vector<double> times(items, 0.0);
  if (timing_ && marks_.size() == items + 1 && starts_.size() == items) {
    if (!device_.event_completed(marks_.back())) return std::nullopt;
    bool all = true;
    for (std::size_t i = 0; i < items && all; ++i) {
      double ns = 0;
      all = device_.elapsed_ns(starts_[i] != 0 ? starts_[i] : marks_[i], marks_[i + 1], &ns) == kSuccess;
      times[i] = std::max(0.0, ns);
    }
    if (all) {
      ended_ = false;
      return times;
    }
    timing_ = false;  // the driver cannot tell: host gaps from now on
  }
  for (std::size_t i = 0; i < items; ++i) {
    times[i] = std::chrono::duration<double, std::nano>(host_[i + 1] - host_[i]).count();
  }
  ended_ = false;
  return times;
}

}  // namespace memtool::engine::detail
