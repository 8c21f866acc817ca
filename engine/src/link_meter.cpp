// LinkMeter: the host link's bandwidth and latency from timed copies (see link_meter.hpp).
#include "link_meter.hpp"

#include <algorithm>

namespace memtool::engine::detail {

std::optional<LinkFit> fit_link(const std::vector<CopySample>& samples) {
  if (samples.size() < LinkMeter::kMinSamples) return std::nullopt;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::uint64_t bytes = 0;
  for (const CopySample& s : samples) {
    if (s.bytes == 0 || !(s.ns > 0)) continue;
    const double x = static_cast<double>(s.bytes);
    n += 1;
    sx += x;
    sy += s.ns;
    sxx += x * x;
    sxy += x * s.ns;
    bytes += s.bytes;
  }
  if (n < static_cast<double>(LinkMeter::kMinSamples) || bytes < LinkMeter::kMinBytes) return std::nullopt;
  const double spread = n * sxx - sx * sx;
  // Sizes within a few per cent of each other cannot tell latency from bandwidth.
  if (spread > 1e-3 * n * sxx) {
    const double ns_per_byte = (n * sxy - sx * sy) / spread;
    const double latency = (sy - ns_per_byte * sx) / n;
    if (ns_per_byte > 0 && latency >= 0) return LinkFit{1.0 / ns_per_byte, latency};
    // A negative intercept (noise around a pure bandwidth): the line through the origin.
    if (ns_per_byte > 0) return LinkFit{sxx / sxy, 0.0};
  }
  return LinkFit{sx / sy, 0.0};
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

void LinkMeter::poll() {
  std::erase_if(pending_, [this](Pending& p) {
    if (!device_.event_completed(p.end)) return false;
    double ns = 0;
    if (device_.elapsed_ns(p.start, p.end, &ns) == kSuccess && ns > 0) {
      samples_[index(p.direction)].push_back(CopySample{p.bytes, ns});
    }
    events_.give(p.start);
    events_.give(p.end);
    return true;
  });
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
