// The swap rule's oracle: the last complete iteration tells the next one what comes. Time is
// counted in work items from the iteration's start; a buffer is named by its rule key (its
// ordinal in the iteration that made it, or its address if persistent). While an iteration runs,
// its uses and allocations are noted; at the boundary they become the oracle the rule reads: when
// a buffer is next used after a given item (its next use in this iteration, or its first in the
// next one), what is allocated over the next items and when the next item that may reach every
// buffer comes. Knows nothing of devices. Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memtool::engine::detail {

class IterationOracle {
 public:
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();  // no use known

  // This iteration: `key` used by work item `when`; `bytes` allocated before item `when` is issued.
  void used(std::uint64_t key, std::uint64_t when) { uses_.emplace_back(key, when); }
  void allocated(std::uint64_t when, std::uint64_t bytes) { allocations_.emplace_back(when, bytes); }
  // This iteration: work item `when` may reach every buffer (WorkItem::reaches_all; noted in order).
  void reaches_all(std::uint64_t when) { reaching_all_.push_back(when); }

  // The iteration that just ended, `length` work items, is the oracle from now on.
  void end_iteration(std::uint64_t length) {
    last_uses_.clear();
    for (const auto& [key, when] : uses_) last_uses_[key].push_back(when);
    last_allocations_.assign(allocations_.begin(), allocations_.end());
    for (std::size_t i = 1; i < last_allocations_.size(); ++i)
      last_allocations_[i].second += last_allocations_[i - 1].second;
    last_reaching_all_.swap(reaching_all_);
    length_ = length;
  }
  // A new iteration starts: nothing of it is noted yet.
  void begin_iteration() {
    uses_.clear();
    allocations_.clear();
    reaching_all_.clear();
  }

  // Work items in the last complete iteration (0: none yet).
  [[nodiscard]] std::uint64_t length() const { return length_; }

  // When the last iteration next used `key` after work item `now`, in items from now; kNever if
  // it never did.
  [[nodiscard]] std::uint64_t next_use(std::uint64_t key, std::uint64_t now) const {
    const auto it = last_uses_.find(key);
    if (it == last_uses_.end() || it->second.empty()) return kNever;
    const auto& when = it->second;  // ascending
    const auto later = std::upper_bound(when.begin(), when.end(), now);
    if (later != when.end()) return *later - now;
    return length_ - now + when.front();  // next iteration's first use
  }

  // When the last iteration's next item that may reach every buffer came after work item `now`,
  // in items from now (wrapping into the next iteration); kNever if none did.
  [[nodiscard]] std::uint64_t next_reaching_all(std::uint64_t now) const {
    if (last_reaching_all_.empty()) return kNever;
    const auto later = std::upper_bound(last_reaching_all_.begin(), last_reaching_all_.end(), now);
    if (later != last_reaching_all_.end()) return *later - now;
    return length_ - now + last_reaching_all_.front();
  }

  // Bytes the last iteration allocated in work items (now, now + horizon].
  [[nodiscard]] std::uint64_t upcoming_allocations(std::uint64_t now, std::uint64_t horizon) const {
    if (last_allocations_.empty()) return 0;
    const auto before = [&](std::uint64_t when) {
      const auto it = std::upper_bound(last_allocations_.begin(), last_allocations_.end(), when,
                                       [](std::uint64_t w, const auto& a) { return w < a.first; });
      return it == last_allocations_.begin() ? std::uint64_t{0} : std::prev(it)->second;
    };
    return before(now + horizon) - before(now);
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> uses_;         // (key, item) this iteration
  std::vector<std::pair<std::uint64_t, std::uint64_t>> allocations_;  // (item, bytes) this iteration
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> last_uses_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> last_allocations_;  // (item, running total)
  std::vector<std::uint64_t> reaching_all_, last_reaching_all_;            // items reaching every buffer
  std::uint64_t length_ = 0;
};

}  // namespace memtool::engine::detail
