// Gaps between consecutive accesses and the base timeline (candidates.hpp).
#include "memtool/swapper/candidates.hpp"

#include <algorithm>

namespace memtool::swapper {

std::vector<Gap> find_gaps(const Iteration& iteration) {
  const std::uint64_t n = iteration.ops.size();
  std::vector<Gap> gaps;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> along;  // (unrolled position, access index)
  for (std::uint32_t b = 0; b < iteration.buffers.size(); ++b) {
    const Buffer& buffer = iteration.buffers[b];
    if (!buffer.swappable || buffer.accesses.empty()) continue;
    along.clear();
    for (std::uint32_t a = 0; a < buffer.accesses.size(); ++a) {
      const std::uint64_t op = buffer.accesses[a].op;
      // A crossing buffer's accesses up to its free belong to the next iteration's part of its life.
      const bool next_part = buffer.crosses_iteration() && op <= buffer.free_after_op;
      along.emplace_back(next_part ? op + n : op, a);
    }
    std::sort(along.begin(), along.end());
    for (std::size_t k = 0; k + 1 < along.size(); ++k) {
      if (along[k + 1].first >= along[k].first + 2) {
        gaps.push_back({b, along[k].second, along[k].first, along[k + 1].first});
      }
    }
    if (buffer.persistent) {  // idle from the last access to the first one of the next iteration
      const std::uint64_t last = along.back().first;
      const std::uint64_t first = along.front().first + n;
      if (first >= last + 2) gaps.push_back({b, along.back().second, last, first});
    }
  }
  return gaps;
}

BaseTimeline::BaseTimeline(const Iteration& iteration) : starts_(iteration.ops.size()) {
  double t = 0;
  for (std::size_t i = 0; i < iteration.ops.size(); ++i) {
    starts_[i] = t;
    t += static_cast<double>(iteration.ops[i].duration_ns);
  }
  period_ = t;
}

double BaseTimeline::start(std::uint64_t unrolled_op) const {
  const std::uint64_t n = starts_.size();
  return starts_[unrolled_op % n] + static_cast<double>(unrolled_op / n) * period_;
}

double BaseTimeline::end(std::uint64_t unrolled_op) const {
  const std::uint64_t n = starts_.size();
  const std::uint64_t i = unrolled_op % n;
  const double next = i + 1 < n ? starts_[i + 1] : period_;
  return next + static_cast<double>(unrolled_op / n) * period_;
}

std::uint64_t BaseTimeline::op_at(double time, std::uint64_t first, std::uint64_t last) const {
  if (last < first) return first;
  // Binary search over unrolled positions [first, last] for the last start <= time.
  std::uint64_t lo = first;
  std::uint64_t hi = last;
  if (start(lo) > time) return first;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (start(mid) <= time)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

std::uint64_t BaseTimeline::first_starting_at(double time, std::uint64_t first, std::uint64_t cap) const {
  if (first >= cap || start(first) >= time) return std::min(first, cap);
  if (start(cap) < time) return cap;  // also a time past every op (an infinite copy, a zero period)
  std::uint64_t lo = first;           // start(lo) < time
  std::uint64_t hi = cap;             // start(hi) >= time
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (start(mid) < time)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

}  // namespace memtool::swapper
