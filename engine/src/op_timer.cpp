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
  now_.begun = clock_();
  now_.begun_spent = spent_now();
}

void OpTimer::release(Timing& t) {
  for (EventId& e : t.marks) events_.give(e);
  for (EventId& e : t.starts) events_.give(e);
  t.marks.clear();
  t.starts.clear();
}

void OpTimer::drop(Timing& t) {
  release(t);
  t = Timing{};
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
  stamp();
  if (now_.host.size() == 1) {
    const std::uint64_t gap = now_.host[0] - now_.begun;
    const std::uint64_t not_own = (now_.spent[0] - now_.begun_spent) + now_.lead_waits;
    now_.lead_ns = gap > not_own ? gap - not_own : 0;
  }
  now_.waits.push_back(0);
  now_.syncs.push_back(false);
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

void OpTimer::stamp() {
  now_.host.push_back(clock_());
  now_.spent.push_back(spent_now());
}

void OpTimer::synced(std::uint64_t waited_ns) {
  if (ended_) return;
  if (now_.host.empty()) {
    now_.sync_before_first = true;
    now_.lead_waits += waited_ns;
    return;
  }
  now_.waits.back() += waited_ns;
  now_.syncs.back() = true;
}

void OpTimer::end() {
  if (ended_ || now_.host.empty()) return;
  close();
  stamp();
  if (now_.sync_before_first) now_.syncs.back() = true;
  ended_ = true;
}

std::vector<double> OpTimer::host_times_of(const Timing& t) {
  const std::size_t items = t.host.size() - 1;
  std::vector<double> times(items, 0.0);
  for (std::size_t i = 0; i < items; ++i) {
    const std::uint64_t gap = t.host[i + 1] - t.host[i];
    const std::uint64_t not_own = (t.spent[i + 1] - t.spent[i]) + t.waits[i];
    times[i] = static_cast<double>(gap > not_own ? gap - not_own : 0);
  }
  if (items != 0) times.back() += static_cast<double>(t.lead_ns);
  return times;
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
  for (std::size_t i = 0; i < items; ++i) times[i] = static_cast<double>(t.host[i + 1] - t.host[i]);
  return times;
}

std::optional<ItemTimes> OpTimer::poll() {
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
  ItemTimes out;
  out.host_ns = host_times_of(now_);
  out.syncs = now_.syncs;
  if (before) {
    const std::vector<double> host_before = host_times_of(before_);
    for (std::size_t i = 0; i < times->size(); ++i) {
      (*times)[i] = std::min((*times)[i], (*before)[i]);
      out.host_ns[i] = std::min(out.host_ns[i], host_before[i]);
      if (before_.syncs[i]) out.syncs[i] = true;
    }
  }
  out.gpu_ns = std::move(*times);
  out.wall_ns = static_cast<double>(now_.host.back() - now_.begun);
  out.memtool_ns = static_cast<double>(now_.spent.back() - now_.begun_spent);
  out.sync_wait_ns = static_cast<double>(now_.lead_waits);
  for (const std::uint64_t w : now_.waits) out.sync_wait_ns += static_cast<double>(w);
  out.host_timed = timing_ && memtool_ns_ != nullptr;
  drop(before_);
  ended_ = false;
  return out;
}

}  // namespace memtool::engine::detail
