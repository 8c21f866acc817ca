// A schedule's triggers carried out (swap_schedule.hpp): at each work item, the copies out due
// once the item before it was issued (at the first call after it, so that an allocation between
// two items finds the room the plan made for it; once an item), then the copies in due at it.
// A trigger names a buffer as the iteration it fires in knows it (buffer_names.hpp); one that
// names no live buffer, or a buffer that cannot move now (pinned, out already or back already,
// used by a work item still being issued, past the host limit), is skipped. Room for a copy in is
// the policy's (`room_for`: made, then whether the budget holds it); which schedule applies, and
// when it is dropped, is the policy's too. Not thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>
#include <limits>
#include <map>

#include "swap/buffer_names.hpp"
#include "swap/in_flight.hpp"
#include "swap/swap_in.hpp"
#include "swap/swap_out.hpp"
#include "swap_schedule.hpp"

namespace memtool::engine::detail {

class ScheduleApplier {
 public:
  // `on_program_stream`: save-on-cpu, whose copies run in the program's own stream order.
  // `host_limit`: host bytes no copy out may pass.
  ScheduleApplier(SwapOut& out, SwapIn& in, const BufferNames& names, std::map<DevicePtr, SwapBuffer>& buffers,
                  const InFlightItems& in_flight, SwapCounters& counters, bool on_program_stream,
                  std::uint64_t host_limit)
      : out_(out),
        in_(in),
        names_(names),
        buffers_(buffers),
        in_flight_(in_flight),
        counters_(counters),
        on_program_stream_(on_program_stream),
        host_limit_(host_limit) {}
  ScheduleApplier(const ScheduleApplier&) = delete;
  ScheduleApplier& operator=(const ScheduleApplier&) = delete;

  // A new iteration: its items' copies out are all still due.
  void new_iteration() { outs_done_ = kNone; }

  // The copies out due once the item before `item` was issued, once.
  void outs(const SwapSchedule& schedule, std::uint64_t item) {
    if (item >= schedule.items() || outs_done_ == item) return;
    outs_done_ = item;
    for (const SwapSchedule::Trigger& t : schedule.outs_at(static_cast<std::uint32_t>(item))) {
      const DevicePtr ptr = names_.resolve(t.name, buffers_);
      if (ptr == 0) continue;
      SwapBuffer& b = buffers_.at(ptr);
      if (!b.resident || b.pinned || in_flight_.issuing(ptr) != InFlightItems::Issuing::no ||
          counters_.host_bytes_now + b.size > host_limit_) {
        continue;
      }
      if (out_.send(ptr, b, on_program_stream_ && !b.streams.empty() ? b.streams.back() : 0)) {
        b.held_out = true;
        ++counters_.swap_outs_scheduled;
      }
    }
  }

  // The copies issued at work item `item` (below the schedule's length), about to be queued on
  // `stream`: out first, then in. `room_for(b, lead)` makes room for b, needed `lead` items on,
  // and says whether the budget holds it.
  template <class RoomFor>
  void apply(const SwapSchedule& schedule, std::uint64_t item, StreamId stream, RoomFor&& room_for) {
    const auto at = static_cast<std::uint32_t>(item);
    outs(schedule, item);
    for (const SwapSchedule::Trigger& t : schedule.ins_at(at)) {
      const DevicePtr ptr = names_.resolve(t.name, buffers_);
      if (ptr == 0) continue;
      SwapBuffer& b = buffers_.at(ptr);
      if (b.resident || b.pinned) continue;
      b.held_out = false;  // from here the rule may bring it back too
      // The plan has room for it here; what still holds that room (a copy out, a free the GPU
      // has not reached) is waited for, as the consumer would wait for the buffer.
      if (!room_for(b, schedule.lead(t.swap))) continue;
      (void)in_.scheduled(ptr, b, stream, on_program_stream_, t.swap);
    }
  }

 private:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

  SwapOut& out_;
  SwapIn& in_;
  const BufferNames& names_;
  std::map<DevicePtr, SwapBuffer>& buffers_;
  const InFlightItems& in_flight_;
  SwapCounters& counters_;
  const bool on_program_stream_;
  const std::uint64_t host_limit_;
  std::uint64_t outs_done_ = kNone;  // the item whose copies out were issued
};

}  // namespace memtool::engine::detail
