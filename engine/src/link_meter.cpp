// LinkMeter: the host link's bandwidth and latency from timed copies (see link_meter.hpp).
#include "link_meter.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace memtool::engine::detail {
namespace {

constexpr double kDistinctSizes = 0.01;  // sizes closer than this share of the larger are alike

double median(std::vector<double>& values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 != 0) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace

// Theil-Sen rather than least squares: a copy that queued behind another one (an on-demand
// swap-in on the program's stream, sharing the engine with the side stream's) takes several
// times its own time, and a few of those bent the least-squares line into a latency of
// milliseconds on a link that has none.
std::optional<LinkFit> fit_link(const std::vector<CopySample>& samples) {
  if (samples.size() < LinkMeter::kMinSamples) return std::nullopt;
  std::vector<CopySample> valid;
  std::uint64_t bytes = 0;
  for (const CopySample& s : samples) {
    if (s.bytes == 0 || !(s.ns > 0)) continue;
    valid.push_back(s);
    bytes += s.bytes;
  }
  if (valid.size() < LinkMeter::kMinSamples || bytes < LinkMeter::kMinBytes) return std::nullopt;
  // Pairs whose sizes differ enough to tell latency from bandwidth: the median of their slopes.
  std::vector<double> slopes;
  for (std::size_t a = 0; a < valid.size(); ++a) {
    for (std::size_t b = a + 1; b < valid.size(); ++b) {
      const double dx = static_cast<double>(valid[b].bytes) - static_cast<double>(valid[a].bytes);
      if (std::abs(dx) <= kDistinctSizes * static_cast<double>(std::max(valid[a].bytes, valid[b].bytes))) continue;
      slopes.push_back((valid[b].ns - valid[a].ns) / dx);
    }
  }
  std::vector<double> values;
  if (slopes.size() >= LinkMeter::kMinSamples) {
    const double ns_per_byte = median(slopes);
    if (ns_per_byte > 0) {
      for (const CopySample& s : valid) values.push_back(s.ns - ns_per_byte * static_cast<double>(s.bytes));
      // A negative intercept (noise around a pure bandwidth): the slope alone.
      return LinkFit{1.0 / ns_per_byte, std::max(0.0, median(values))};
    }
  }
  // Sizes too alike (or no sense in the slopes): the median rate, latency folded in.
  for (const CopySample& s : valid) values.push_back(static_cast<double>(s.bytes) / s.ns);
  return LinkFit{median(values), 0.0};
}

EventId LinkMeter::start(Direction d, StreamId stream) {
  const std::size_t timed = samples_[index(d)].size() +
                            static_cast<std::size_t>(std::count_if(pending_.begin(), pending_.end(),
                                                                   [d](const Pending& p) { return p.direction == d; }));
  if (timed >= kEnough) return 0;
  return events_.record(device_, stream);
}

void LinkMeter::finish(EventId start, Direction d, StreamId stream, std::uint64_t bytes) {
  if (start == 0) return;
  const EventId end = events_.record(device_, stream);
  if (end == 0) {
    events_.give(start);
    return;
  }
  pending_.push_back(Pending{start, end, bytes, d});
}

// A direction's copies share one copy engine, across streams: a copy's start event fires when
// its stream reaches it, but the engine may still be serving another stream's copy, which it then
// waits for. The engine serves one copy at a time, so in order of their ends a copy's own time
// begins at the later of its start and the previous copy's end. Times are compared on the GPU's
// clock: the order by each end's time from one reference end, each copy's time from the events
// next to it (short spans, exact in cuEventElapsedTime's float).
void LinkMeter::poll() {
  std::vector<Pending> done[2];
  std::erase_if(pending_, [this, &done](Pending& p) {
    if (!device_.event_completed(p.end)) return false;
    done[index(p.direction)].push_back(p);
    return true;
  });
  for (std::size_t d = 0; d < 2; ++d) {
    if (done[d].empty()) continue;
    const EventId reference = done[d].front().end;  // given back last, if at all
    std::vector<std::pair<double, Pending>> by_end;
    for (Pending& p : done[d]) {
      double at = 0;
      if (device_.elapsed_ns(reference, p.end, &at) == kSuccess) {
        by_end.emplace_back(at, p);
      } else {
        events_.give(p.start);
        events_.give(p.end);
      }
    }
    std::stable_sort(by_end.begin(), by_end.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    EventId previous_end = 0;
    for (auto& [at, p] : by_end) {
      double ns = 0;
      double waited = 0;
      bool timed = device_.elapsed_ns(p.start, p.end, &ns) == kSuccess;
      if (timed && previous_end != 0 && device_.elapsed_ns(p.start, previous_end, &waited) == kSuccess && waited > 0) {
        timed = device_.elapsed_ns(previous_end, p.end, &ns) == kSuccess;  // its engine was busy till then
      }
      if (timed && ns > 0) samples_[d].push_back(CopySample{p.bytes, ns});
      events_.give(p.start);
      events_.give(previous_end);
      previous_end = p.end;
    }
    events_.give(previous_end);
  }
}

swapper::Link LinkMeter::link(const swapper::Link& fallback, bool* measured) const {
  swapper::Link link = fallback;
  bool any = false;
  if (const std::optional<LinkFit> out = fit_link(samples_[0])) {
    link.d2h_bytes_per_ns = out->bytes_per_ns;
    link.d2h_latency_ns = static_cast<std::uint64_t>(out->latency_ns);
    any = true;
  }
  if (const std::optional<LinkFit> in = fit_link(samples_[1])) {
    link.h2d_bytes_per_ns = in->bytes_per_ns;
    link.h2d_latency_ns = static_cast<std::uint64_t>(in->latency_ns);
    any = true;
  }
  if (measured != nullptr) *measured = any;
  return link;
}

void LinkMeter::release() {
  for (Pending& p : pending_) {
    events_.give(p.start);
    events_.give(p.end);
  }
  pending_.clear();
}

}  // namespace memtool::engine::detail
