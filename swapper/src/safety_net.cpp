// The safety net's tables (safety_net.hpp).
#include "safety_net.hpp"

#include <algorithm>

namespace memtool::swapper::detail {
namespace {
constexpr double kLeadMargin = 2.0;  // the lead the rule's learning settles at, about (lstm replay)

// CSR lists keyed by op (0..n-1): `each(emit)` calls emit(op, item) for every item, the same way
// each time it is called.
template <typename Each>
void group(std::size_t n, std::vector<std::uint32_t>& begin, std::vector<std::uint32_t>& items, Each each) {
  begin.assign(n + 1, 0);
  each([&](std::uint32_t op, std::uint32_t) { ++begin[op + 1]; });
  for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  items.resize(begin[n]);
  std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
  each([&](std::uint32_t op, std::uint32_t item) { items[fill[op]++] = item; });
}
}  // namespace

void SafetyNet::reset(const Iteration& iteration, const Link& link) {
  iteration_ = &iteration;
  n_ = iteration.ops.size();
  h2d_bytes_per_ns_ = link.h2d_bytes_per_ns;
  h2d_latency_ns_ = static_cast<double>(link.h2d_latency_ns);
  group(n_, begin_, items_, [&](auto&& emit) {
    for (std::uint32_t b = 0; b < iteration.buffers.size(); ++b) {
      for (const Access& a : iteration.buffers[b].accesses) emit(a.op, b);
    }
  });
  // The rule's candidates: live before op 0 (persistent, or crossing from the iteration before),
  // and by the op that allocates them and the op after which they are freed (not persistent).
  const auto candidate = [](const Buffer& b) { return b.swappable && b.size != 0; };
  live_at_start_.clear();
  for (std::uint32_t b = 0; b < iteration.buffers.size(); ++b) {
    const Buffer& buffer = iteration.buffers[b];
    if (candidate(buffer) && (buffer.persistent || buffer.crosses_iteration())) live_at_start_.push_back(b);
  }
  const auto transient = [&](auto key) {
    return [&iteration, &candidate, key](auto&& emit) {
      for (std::uint32_t b = 0; b < iteration.buffers.size(); ++b) {
        const Buffer& buffer = iteration.buffers[b];
        if (candidate(buffer) && !buffer.persistent) emit(key(buffer), b);
      }
    };
  };
  group(n_, born_begin_, born_, transient([](const Buffer& b) { return b.alloc_before_op; }));
  group(n_, dies_begin_, dies_, transient([](const Buffer& b) { return b.free_after_op; }));
  prefix_.assign(n_ + 1, 0.0);
  for (std::size_t i = 0; i < n_; ++i) prefix_[i + 1] = prefix_[i] + static_cast<double>(iteration.ops[i].duration_ns);
}

std::uint64_t SafetyNet::next_access(std::uint32_t b, std::uint64_t u) const {
  const Buffer& buffer = iteration_->buffers[b];
  const auto op = static_cast<std::uint32_t>(u % n_);
  const std::uint64_t round = u - op;
  if (!buffer.live_at(op) || buffer.accesses.empty()) return kNoAccess;
  const auto after = std::upper_bound(buffer.accesses.begin(), buffer.accesses.end(), op,
                                      [](std::uint32_t o, const Access& a) { return o < a.op; });
  const bool head = buffer.crosses_iteration() && op <= buffer.free_after_op;  // the instance dies at free_after_op
  if (after != buffer.accesses.end() && (!head || after->op <= buffer.free_after_op)) return round + after->op;
  // Wrapping into the next iteration: a persistent buffer, or a crossing one in its tail.
  const std::uint32_t first = buffer.accesses.front().op;
  if (buffer.persistent || (buffer.crosses_iteration() && !head && first <= buffer.free_after_op)) {
    return round + n_ + first;
  }
  return kNoAccess;
}

std::uint64_t SafetyNet::name_next_access(std::uint32_t b, std::uint64_t u) const {
  const std::vector<Access>& accesses = iteration_->buffers[b].accesses;
  if (accesses.empty()) return kNoAccess;
  const auto op = static_cast<std::uint32_t>(u % n_);
  const auto after =
      std::upper_bound(accesses.begin(), accesses.end(), op, [](std::uint32_t o, const Access& a) { return o < a.op; });
  return u - op + (after != accesses.end() ? after->op : n_ + accesses.front().op);
}

double SafetyNet::between(std::uint64_t a, std::uint64_t b) const {
  const double rounds = static_cast<double>(b / n_) - static_cast<double>(a / n_);
  return rounds * prefix_[n_] + prefix_[b % n_] - prefix_[a % n_];
}

std::uint64_t SafetyNet::issue_for(std::uint32_t b, std::uint64_t now, std::uint64_t use) const {
  const double bytes = static_cast<double>(iteration_->buffers[b].moved_bytes());  // what its copy moves
  const double need = kLeadMargin * (h2d_latency_ns_ + bytes / h2d_bytes_per_ns_);
  std::uint64_t lo = now + 1;
  if (lo >= use || between(lo, use) < need) return std::min(lo, use);
  std::uint64_t hi = use;  // between(hi, use) = 0 < need: the answer lies in [lo, hi)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (between(mid, use) >= need)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace memtool::swapper::detail
