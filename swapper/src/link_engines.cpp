// The copy engines' event simulation (link_engines.hpp).
#include "link_engines.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace memtool::swapper::detail {
namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

void LinkEngines::reset(double d2h_bytes_per_ns, double h2d_bytes_per_ns, double d2h_latency_ns, double h2d_latency_ns,
                        double duplex_factor) {
  copies_.clear();
  for (Engine& engine : engines_) {
    engine.queue.clear();
    engine.head = 0;
    engine.active = -1;
  }
  engines_[d2h].bytes_per_ns = d2h_bytes_per_ns;
  engines_[h2d].bytes_per_ns = h2d_bytes_per_ns;
  engines_[d2h].latency_ns = d2h_latency_ns;
  engines_[h2d].latency_ns = h2d_latency_ns;
  duplex_ = duplex_factor;
  now_ = 0;
}

std::int32_t LinkEngines::enqueue(const Copy& copy) {
  const auto index = static_cast<std::int32_t>(copies_.size());
  copies_.push_back(copy);
  engines_[copy.direction].queue.push_back(index);
  return index;
}

double LinkEngines::ready_at(std::int32_t index) const {
  const Copy& copy = copies_[index];
  if (copy.dep < 0) return copy.ready_ns;
  const double dep_end = copies_[copy.dep].end_ns;
  return dep_end < 0 ? kNever : std::max(copy.ready_ns, dep_end);
}

bool LinkEngines::moving(const Engine& engine) const {
  return engine.active >= 0 && now_ >= engine.data_start && engine.remaining > 0;
}

bool LinkEngines::step(double limit) {
  for (Engine& engine : engines_) {
    if (engine.active >= 0 || engine.head >= engine.queue.size()) continue;
    const std::int32_t next = engine.queue[engine.head];
    if (ready_at(next) > now_) continue;
    ++engine.head;
    engine.active = next;
    copies_[next].start_ns = now_;
    engine.data_start = now_ + engine.latency_ns;
    engine.remaining = copies_[next].bytes;
  }
  // Rates hold until the next event: phases change only at events.
  double rate[2] = {0, 0};
  for (int d = 0; d < 2; ++d) {
    if (!moving(engines_[d])) continue;
    rate[d] = engines_[d].bytes_per_ns / (moving(engines_[1 - d]) ? duplex_ : 1.0);
  }
  double candidate[2] = {kNever, kNever};
  for (int d = 0; d < 2; ++d) {
    const Engine& engine = engines_[d];
    if (engine.active >= 0) {
      candidate[d] = now_ < engine.data_start ? engine.data_start : now_ + engine.remaining / rate[d];
    } else if (engine.head < engine.queue.size()) {
      candidate[d] = ready_at(engine.queue[engine.head]);
    }
  }
  const double next = std::min(candidate[0], candidate[1]);
  if (next == kNever || next > limit) return false;
  const double dt = next - now_;
  for (int d = 0; d < 2; ++d) {
    if (rate[d] > 0) engines_[d].remaining -= rate[d] * dt;
  }
  now_ = next;
  for (int d = 0; d < 2; ++d) {
    Engine& engine = engines_[d];
    if (engine.active < 0 || now_ < engine.data_start) continue;
    // The copy that defined this event ends exactly now, whatever rounding left over.
    if (rate[d] > 0 && candidate[d] <= next) engine.remaining = 0;
    if (engine.remaining <= 0) {
      copies_[engine.active].end_ns = now_;
      engine.active = -1;
    }
  }
  return true;
}

double LinkEngines::finish(std::int32_t index) {
  while (copies_[index].end_ns < 0) {
    if (!step(kNever)) throw std::logic_error("swapper: a copy can never run (its copy-out was never issued)");
  }
  return copies_[index].end_ns;
}

void LinkEngines::advance_to(double time) {
  while (step(time)) {}
}

void LinkEngines::drain() {
  while (step(kNever)) {}
}

}  // namespace memtool::swapper::detail
