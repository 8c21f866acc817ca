// The rule's copies back (Belady's rule both ways, memtool/swapper/eviction_rule.hpp). Ahead: at
// each work item, the buffers the last iteration used within the next few items (`lookahead`,
// learned per buffer: its lead) come back on the swap-in side stream if they fit (or by evicting
// only buffers needed later than they are), the soonest needed first; their consumer's stream
// waits on that copy's event. A copy not done when its consumer is issued was late: that
// buffer's lead grows for the next iteration (while the selector lets leads learn). On demand: a
// buffer touched while out comes back in the consumer's own stream order, before the work
// (counted: the plan missed); with no device memory for it, the consumer reads it where it is
// (host memory mapped at its address, or managed memory), slower but right. Not thread-safe: the
// swap policy's lock.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "memtool/swapper/eviction_rule.hpp"
#include "swap/buffer_names.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/room.hpp"
#include "swap/selector.hpp"
#include "swap/swap_in.hpp"

namespace memtool::engine::detail {

class RuleSwapIns {
 public:
  using Leads = std::unordered_map<std::uint64_t, std::uint64_t>;  // learned swap-in lead per key

  RuleSwapIns(const SwapOptions& options, MoveContext& moves, Room& room, SwapIn& in,
              std::map<DevicePtr, SwapBuffer>& buffers, const IterationOracle& oracle, const ScheduleSelector& selector)
      : options_(options),
        moves_(moves),
        room_(room),
        in_(in),
        buffers_(buffers),
        oracle_(oracle),
        selector_(selector) {}
  RuleSwapIns(const RuleSwapIns&) = delete;
  RuleSwapIns& operator=(const RuleSwapIns&) = delete;

  // The leads learned so far (the schedule driver keeps and puts back copies of them).
  [[nodiscard]] Leads& leads() { return leads_; }
  [[nodiscard]] std::uint64_t lead_of(std::uint64_t key) const {
    const auto it = leads_.find(key);
    return it == leads_.end() ? options_.lookahead : it->second;
  }
  // A copy back of `key` was late: its lead grows, unless the selector froze the leads.
  void grow_lead(std::uint64_t key) {
    if (!selector_.leads_learn()) return;
    auto [it, inserted] = leads_.emplace(key, options_.lookahead);
    (void)inserted;
    it->second = swapper::EvictionRule::grown_lead(it->second);
  }

  // The plan did not bring it back in time: in the consumer's stream order, before the work. Its
  // lead grows only where a longer one would have helped: not in the first iteration (no
  // oracle yet), nor when it was within its lead and room was what it lacked.
  // `may_stay`: it may be read where it is when bringing it back would pass the budget while
  // the host may not wait (Room::held); an export needs it on the device.
  void now(DevicePtr base, SwapBuffer& b, StreamId stream, bool may_stay = true) {
    room_.make(b.footprint, 0, Room::Mode::wait);
    if (may_stay && !b.leaving && room_.held(b.footprint)) {
      b.kept_out = false;
      ++moves_.counters.swap_ins_failed;  // read where it is
      return;
    }
    const bool kept_out = b.kept_out;
    (void)in_.now(base, b, stream);  // swap/swap_in.hpp
    if (oracle_.length() != 0 && !kept_out) grow_lead(BufferNames::key_of(base, b));
  }

  // Bring back, on the swap-in stream, what the last iteration used in the next few work items,
  // the soonest needed first: one needed later makes room only from buffers needed after it, so
  // it never takes the room of one needed sooner (which would send it straight back out, and
  // the same bytes would cross the link both ways at every item).
  void ahead(std::uint64_t now) {
    using swapper::EvictionRule;
    if (oracle_.length() == 0 || options_.lookahead == 0) return;
    due_in_.clear();
    for (const auto& [ptr, b] : buffers_) {
      if (b.resident || b.held_out || b.pinned) continue;
      const std::uint64_t key = BufferNames::key_of(ptr, b);
      const std::uint64_t distance = oracle_.next_use(key, now);
      if (EvictionRule::needed_within(distance, lead_of(key))) due_in_.push_back(swapper::DueIn{distance, ptr, ptr});
    }
    EvictionRule::bring_back(
        due_in_, [&](const swapper::DueIn& d) { return one_ahead(d.handle, d.next_use, now); },
        // No room yet for the soonest needed: none for those needed later either (they would
        // take what it needs, and be sent out again for it).
        [&](const swapper::DueIn& d) { buffers_.at(d.handle).kept_out = true; });
  }

 private:
  // One buffer due `distance` items from `now` comes back ahead on the swap-in stream.
  swapper::Arrival one_ahead(DevicePtr ptr, std::uint64_t distance, std::uint64_t now) {
    SwapBuffer& b = buffers_.at(ptr);
    // Room for it and for what is allocated before its use, from buffers needed after it only:
    // else the next item's early leaving would send it straight back (Belady, both ways).
    // Those copies are not waited for: none starts when an item reaching every buffer would call
    // it off first (EvictionRule::leaves_unwaited).
    const std::uint64_t needs = b.footprint + oracle_.upcoming_allocations(now, distance);
    if (swapper::EvictionRule::leaves_unwaited(oracle_.next_reaching_all(now), options_.lookahead)) {
      room_.make(needs, distance, Room::Mode::quiet);
    }
    if (options_.budget_bytes != 0 &&
        moves_.mover.device_bytes_with(b.footprint) + (needs - b.footprint) > room_.device_budget()) {
      return swapper::Arrival::no_room;
    }
    return in_.ahead(ptr, b);  // swap/swap_in.hpp
  }

  const SwapOptions& options_;
  MoveContext& moves_;
  Room& room_;
  SwapIn& in_;
  std::map<DevicePtr, SwapBuffer>& buffers_;
  const IterationOracle& oracle_;
  const ScheduleSelector& selector_;
  Leads leads_;
  std::vector<swapper::DueIn> due_in_;  // scratch: (distance, buffer) to bring back
};

}  // namespace memtool::engine::detail
