// OpTimer: per-item GPU times of one iteration (see op_timer.hpp).
#include "op_timer.hpp"

#include <algorithm>

namespace memtool::engine::detail {

void OpTimer::begin() {
  drop(before_);
  if (ended_) {
    before_ = std::move(now_);  // ended unread: compared with this one's times
    now_ = Timing{};
  } else {
    drop(now_);
  }
  ended_ = false;
  open_ = false;
}

void OpTimer::release(Timing& t) {
  for (EventId& e : t.marks) events_.give(e);
  for (EventId& e : t.starts) events_.give(e);
  t.marks.clear();
  t.starts.clear();
}

void OpTimer::drop(Timing& t) {
  release(t);
  t.host.clear();
}

void OpTimer::release() {
  release(now_);
  drop(before_);
}

void OpTimer::mark(StreamId stream) {
  if (!timing_) return;
  const EventId e = events_.record(device_, stream);
  if (e == 0) {
    timing_ = false;  // host gaps from now on
    release();
    return;
  }
  now_.marks.push_back(e);
}

void OpTimer::item(StreamId stream) {
  if (ended_) return;
  // Before the first item: the start, on its stream; later ones: after the item before.
  if (now_.host.empty())
    mark(stream);
  else
    close();
  now_.host.push_back(std::chrono::steady_clock::now());
  now_.starts.push_back(0);
  last_stream_ = stream;
  open_ = true;
}

void OpTimer::close() {
  if (ended_ || !open_) return;
  mark(last_stream_);
  open_ = false;
}

void OpTimer::waited(StreamId stream) {
  if (ended_ || !timing_ || now_.starts.empty() || now_.starts.back() != 0) return;
  now_.starts.back() = events_.record(device_, stream);  // 0: timed from the mark, as without waits
}

void OpTimer::end() {
  if (ended_ || now_.host.empty()) return;
  close();
  now_.host.push_back(std::chrono::steady_clock::now());
  ended_ = true;
}

std::optional<std::vector<double>> OpTimer::times_of(const Timing& t) {
  const std::size_t items = t.host.size() - 1;
  std::vector<double> times(items, 0.0);
  if (timing_ && t.marks.size() == items + 1 && t.starts.size() == items) {
    if (!device_.event_completed(t.marks.back())) return std::nullopt;
    bool all = true;
    for (std::size_t i = 0; i < items && all; ++i) {
      double ns = 0;
      all = device_.elapsed_ns(t.starts[i] != 0 ? t.starts[i] : t.marks[i], t.marks[i + 1], &ns) == kSuccess;
      times[i] = std::max(0.0, ns);
    }
    if (all) return times;
    timing_ = false;  // the driver cannot tell: host gaps from now on
  }
  for (std::size_t i = 0; i < items; ++i) {
    times[i] = std::chrono::duration<double, std::nano>(t.host[i + 1] - t.host[i]).count();
  }
  return times;
}

std::optional<std::vector<double>> OpTimer::poll() {
  if (!ended_) return std::nullopt;
  const bool compare = before_.host.size() == now_.host.size();
  const bool timed = timing_;
  std::optional<std::vector<double>> before;
  if (compare) {
    before = times_of(before_);
    if (!before) return std::nullopt;  // the GPU has not run it yet
  }
  std::optional<std::vector<double>> times = times_of(now_);
  if (!times) return std::nullopt;
  if (compare && timing_ != timed) before = times_of(before_);  // host gaps for both
  if (before) {
    for (std::size_t i = 0; i < times->size(); ++i) (*times)[i] = std::min((*times)[i], (*before)[i]);
  }
  drop(before_);
  ended_ = false;
  return times;
}

}  // namespace memtool::engine::detail
