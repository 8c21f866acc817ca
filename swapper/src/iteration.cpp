// Checks and plain-iteration numbers of the swapper's input (iteration.hpp).
#include "memtool/swapper/iteration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace memtool::swapper {

bool Buffer::live_at(std::uint32_t op) const {
  if (persistent) return true;
  if (alloc_before_op <= free_after_op) return alloc_before_op <= op && op <= free_after_op;
  return op >= alloc_before_op || op <= free_after_op;  // crosses the iteration boundary
}

double Link::d2h_ns(std::uint64_t bytes) const {
  return static_cast<double>(d2h_latency_ns) + static_cast<double>(bytes) / d2h_bytes_per_ns;
}

double Link::h2d_ns(std::uint64_t bytes) const {
  return static_cast<double>(h2d_latency_ns) + static_cast<double>(bytes) / h2d_bytes_per_ns;
}

std::string validate(const Iteration& iteration) {
  const std::size_t n = iteration.ops.size();
  // Unrolled positions (two iterations) and the simulator's op counters stay far from overflow.
  if (n > (std::size_t{1} << 30)) return fmt::format("{} ops: at most 2^30 per iteration", n);
  for (std::size_t b = 0; b < iteration.buffers.size(); ++b) {
    const Buffer& buffer = iteration.buffers[b];
    if (buffer.size == 0) return fmt::format("buffer {} (id {}): size 0", b, buffer.id);
    if (!buffer.persistent && (buffer.alloc_before_op >= n || buffer.free_after_op >= n)) {
      return fmt::format(
          "buffer {} (id {}): allocated before op {} and freed after op {}, but the iteration has {} ops", b, buffer.id,
          buffer.alloc_before_op, buffer.free_after_op, n);
    }
    for (std::size_t a = 0; a < buffer.accesses.size(); ++a) {
      const Access& access = buffer.accesses[a];
      if (access.op >= n) return fmt::format("buffer {} (id {}): access of op {} of {}", b, buffer.id, access.op, n);
      if (a > 0 && access.op <= buffer.accesses[a - 1].op) {
        return fmt::format("buffer {} (id {}): accesses not sorted by op at access {}", b, buffer.id, a);
      }
      if (!buffer.live_at(access.op)) {
        return fmt::format("buffer {} (id {}): accessed by op {} while not live", b, buffer.id, access.op);
      }
    }
  }
  return {};
}

std::string validate(const Link& link) {
  const auto bad_rate = [](double r) { return !(r >= Link::kMinBytesPerNs) || !std::isfinite(r); };
  if (bad_rate(link.d2h_bytes_per_ns) || bad_rate(link.h2d_bytes_per_ns)) {
    return "link bandwidth must be at least 1 byte per second (1e-9 bytes/ns) and finite";
  }
  if (!(link.duplex_factor >= 1.0) || !std::isfinite(link.duplex_factor)) return "duplex factor must be at least 1";
  return {};
}

std::uint64_t base_time_ns(const Iteration& iteration, std::uint64_t sync_ns) {
  std::uint64_t gpu = 0;
  if (!iteration.host_timed) {
    for (const Op& op : iteration.ops) gpu += op.duration_ns + (op.syncs ? sync_ns : 0);
    return gpu;
  }
  // The host issues each op its host time after the one before; the GPU runs them in order, each
  // no earlier than its issue; a synchronisation holds the host until the GPU is there, and a
  // wait there costs the host sync_ns to come back.
  std::uint64_t host = 0;
  for (const Op& op : iteration.ops) {
    gpu = std::max(gpu, host) + op.duration_ns;
    host += op.host_ns;
    if (op.syncs && gpu > host) host = gpu + sync_ns;
  }
  return std::max(host, gpu);
}

std::vector<std::uint64_t> live_bytes_per_op(const Iteration& iteration) {
  const std::size_t n = iteration.ops.size();
  // Difference array over ops: +size where a live stretch starts, -size after it ends.
  std::vector<std::int64_t> delta(n + 1, 0);
  std::uint64_t always = 0;
  for (const Buffer& buffer : iteration.buffers) {
    const auto size = static_cast<std::int64_t>(buffer.size);
    if (buffer.persistent) {
      always += buffer.size;
    } else if (!buffer.crosses_iteration()) {
      delta[buffer.alloc_before_op] += size;
      delta[buffer.free_after_op + 1] -= size;
    } else {
      delta[0] += size;
      delta[buffer.free_after_op + 1] -= size;
      delta[buffer.alloc_before_op] += size;
    }
  }
  std::vector<std::uint64_t> live(n, 0);
  std::int64_t running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    running += delta[i];
    live[i] = always + static_cast<std::uint64_t>(running);
  }
  return live;
}

std::uint64_t plain_peak_bytes(const Iteration& iteration) {
  const auto live = live_bytes_per_op(iteration);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

}  // namespace memtool::swapper
