// The executor's safety net as the simulator models it (simulate.hpp, holding a budget): when an
// op's memory does not fit even once every copy-out under way has ended, memtool's rule sends out
// resident buffers the op does not touch, farthest next access first (Belady, with the iteration
// as the oracle), and brings each back ahead of that access. These are the iteration's tables the
// rule reads; the simulator keeps the state (what is out, which copies) itself.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "memtool/swapper/iteration.hpp"

namespace memtool::swapper::detail {

inline constexpr std::uint64_t kNoAccess = std::numeric_limits<std::uint64_t>::max();

class SafetyNet {
 public:
  void reset(const Iteration& iteration, const Link& link);

  // The buffers op `op` (0..n-1) accesses.
  [[nodiscard]] std::span<const std::uint32_t> accessed_by(std::size_t op) const {
    return {items_.data() + begin_[op], begin_[op + 1] - begin_[op]};
  }
  // The rule's candidates (swappable, not empty, not persistent) allocated before op `op`, and
  // those freed after it; the candidates live before op 0 (persistent, or crossing from the
  // iteration before).
  [[nodiscard]] std::span<const std::uint32_t> born_at(std::size_t op) const {
    return {born_.data() + born_begin_[op], born_begin_[op + 1] - born_begin_[op]};
  }
  [[nodiscard]] std::span<const std::uint32_t> dies_after(std::size_t op) const {
    return {dies_.data() + dies_begin_[op], dies_begin_[op + 1] - dies_begin_[op]};
  }
  [[nodiscard]] std::span<const std::uint32_t> live_at_start() const { return live_at_start_; }
  // The next access of buffer b after unrolled op u (round * n + op), unrolled; kNoAccess when
  // it has none before it is freed (or it is not live at u).
  [[nodiscard]] std::uint64_t next_access(std::uint32_t b, std::uint64_t u) const;
  // The next access of buffer b's name after unrolled op u, whichever instance it is (the
  // executor knows buffers by name: a transient one past its last access is next used, as it
  // sees it, by its twin of the next iteration); kNoAccess when it has no accesses.
  [[nodiscard]] std::uint64_t name_next_access(std::uint32_t b, std::uint64_t u) const;
  // The op at which the rule issues b's swap-in for its access at unrolled op `use`: the latest
  // after `now` from which the copy, at the link's uncontended time with a margin, ends by then
  // at the iteration's base op times (now + 1 when none is early enough).
  [[nodiscard]] std::uint64_t issue_for(std::uint32_t b, std::uint64_t now, std::uint64_t use) const;

 private:
  // Base time from the start of unrolled op a to the start of unrolled op b (a <= b).
  [[nodiscard]] double between(std::uint64_t a, std::uint64_t b) const;

  const Iteration* iteration_ = nullptr;
  std::size_t n_ = 0;
  double h2d_bytes_per_ns_ = 1;
  double h2d_latency_ns_ = 0;
  std::vector<std::uint32_t> begin_, items_;                          // per op: the buffers it accesses (CSR)
  std::vector<std::uint32_t> born_begin_, born_, dies_begin_, dies_;  // per op: candidates allocated, freed (CSR)
  std::vector<std::uint32_t> live_at_start_;                          // candidates live before op 0
  std::vector<double> prefix_;                                        // base start time of each op, and the period at n
};

}  // namespace memtool::swapper::detail
