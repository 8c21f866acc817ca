// Swap candidates: the idle gaps between two consecutive accesses of one buffer, and the base
// timeline (op start and end times without swapping) that scores them.
//
// Op positions in a gap are "unrolled": op i of the next iteration is position n + i. A
// persistent buffer has one gap more, from its last access to its first access in the next
// iteration (optimizer state and weights idle from one step to the next); a buffer that crosses
// the iteration boundary has its accesses ordered along its lifetime (alloc, end of the
// iteration, then the next iteration up to its free).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memtool/swapper/iteration.hpp"

namespace memtool::swapper {

struct Gap {
  std::uint32_t buffer = 0;        // index into Iteration::buffers
  std::uint32_t after_access = 0;  // index in the buffer's accesses of the access before the gap
  std::uint64_t from_op = 0;       // unrolled position of that access
  std::uint64_t to_op = 0;         // unrolled position of the next access (>= from_op + 2)
  [[nodiscard]] bool wraps(std::size_t op_count) const { return to_op >= op_count; }
  friend bool operator==(const Gap&, const Gap&) = default;
};

// Every gap with at least one op between its two accesses, of swappable buffers, in buffer order
// and, within a buffer, along its lifetime.
[[nodiscard]] std::vector<Gap> find_gaps(const Iteration& iteration);

// Op start and end times of the iteration run without swapping, for unrolled positions.
class BaseTimeline {
 public:
  explicit BaseTimeline(const Iteration& iteration);
  [[nodiscard]] std::size_t op_count() const { return starts_.size(); }
  [[nodiscard]] double period_ns() const { return period_; }
  [[nodiscard]] double start(std::uint64_t unrolled_op) const;
  [[nodiscard]] double end(std::uint64_t unrolled_op) const;
  // Idle time of a gap: from the end of its first access to the start of its next one.
  [[nodiscard]] double idle_ns(const Gap& gap) const { return start(gap.to_op) - end(gap.from_op); }
  // The last unrolled op starting at or before `time` (clamped to [first, last]).
  [[nodiscard]] std::uint64_t op_at(double time, std::uint64_t first, std::uint64_t last) const;
  // The first unrolled op from `first` on that starts at or after `time`, or `cap` when none
  // before it does: a binary search, so a slow link (a time many periods away) costs no more.
  [[nodiscard]] std::uint64_t first_starting_at(double time, std::uint64_t first, std::uint64_t cap) const;

 private:
  std::vector<double> starts_;  // of op i, i < n
  double period_ = 0;
};

}  // namespace memtool::swapper
