// A check of a swap pool that does not go through the planner's validator: any two residencies
// resident at a common time (in the cyclic view, pieces of positive length overlapping by more
// than `slack_ns`) have disjoint address ranges, under (a) and under (b).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memtool/swapper/swap_pool.hpp"

namespace memtool::test {

// Empty when valid; else the first clash.
inline std::string pool_clash(const swapper::Iteration& it, const swapper::SwapPool& pool, bool same_address,
                              double slack_ns = 1e-3) {
  const double period = pool.period_ns;
  const auto pieces = [&](const swapper::Residency& r) {
    std::vector<std::pair<double, double>> out;
    if (r.wraps(period)) {
      out.emplace_back(r.begin_ns, period);
      out.emplace_back(0.0, r.end_ns - period);
    } else {
      out.emplace_back(r.begin_ns, r.end_ns);
    }
    return out;
  };
  const std::size_t count = pool.residencies.size();
  for (std::size_t i = 0; i < count; ++i) {
    const swapper::Residency& x = pool.residencies[i];
    const std::uint64_t xo = same_address ? x.offset_same_address : x.offset;
    const std::uint64_t xs = it.buffers[x.buffer].size;
    const std::uint64_t limit = same_address ? pool.pool_bytes_same_address : pool.pool_bytes;
    if (xo + xs > limit) return fmt::format("residency {} ends at {} past the pool's {}", i, xo + xs, limit);
    for (std::size_t j = i + 1; j < count; ++j) {
      const swapper::Residency& y = pool.residencies[j];
      const std::uint64_t yo = same_address ? y.offset_same_address : y.offset;
      const std::uint64_t ys = it.buffers[y.buffer].size;
      if (xo + xs <= yo || yo + ys <= xo) continue;
      for (const auto& [xb, xe] : pieces(x)) {
        for (const auto& [yb, ye] : pieces(y)) {
          if (std::min(xe, ye) - std::max(xb, yb) > slack_ns) {
            return fmt::format("residencies {} (buffer {}) and {} (buffer {}) overlap in time and address", i, x.buffer,
                               j, y.buffer);
          }
        }
      }
    }
  }
  return {};
}

}  // namespace memtool::test
