// Whether copies back arrived in time, read off the GPU's clock: the host may be far ahead of the
// GPU, so "not arrived yet" seen from the host says little. When a copy back's consumer is issued,
// a timing event recorded there is paired with one recorded after the copy (time); once both
// have completed, a copy that landed after its consumer's turn is late (judge). One list per
// kind of copy: the schedule's copy-ins (by swap) and the rule's copies back ahead (by key). Not
// thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>
#include <vector>

#include "memtool/engine/device.hpp"
#include "spare_events.hpp"

namespace memtool::engine::detail {

class CopyLateness {
 public:
  CopyLateness(Device& device, SpareTimingEvents& events) : device_(device), events_(events) {}
  CopyLateness(const CopyLateness&) = delete;
  CopyLateness& operator=(const CopyLateness&) = delete;

  // The consumer of a copy back (`arrival`: a timing event after it) is about to be issued on
  // `stream`: `id`'s copy is judged once both events have completed, and `arrival` is taken (0
  // afterwards). False, `arrival` given back, without an event for the consumer.
  bool time(std::uint64_t id, EventId& arrival, StreamId stream) {
    const EventId consumer = events_.record(device_, stream);
    if (consumer == 0) {
      events_.give(arrival);
      return false;
    }
    pairs_.push_back(Pair{id, arrival, consumer});
    arrival = 0;
    return true;
  }

  // The copies both of whose events have completed: `late(id, ns)` for each that arrived `ns`
  // after its consumer's turn on the GPU.
  template <typename Late>
  void judge(Late&& late) {
    std::erase_if(pairs_, [&](Pair& p) {
      if (!device_.event_completed(p.arrival) || !device_.event_completed(p.consumer)) return false;
      double ns = 0;
      if (device_.elapsed_ns(p.consumer, p.arrival, &ns) == kSuccess && ns > 0) late(p.id, ns);
      events_.give(p.arrival);
      events_.give(p.consumer);
      return true;
    });
  }

  // None is judged: their events go back.
  void forget() {
    for (Pair& p : pairs_) {
      events_.give(p.arrival);
      events_.give(p.consumer);
    }
    pairs_.clear();
  }

 private:
  struct Pair {
    std::uint64_t id;  // the schedule's swap, or the rule's key of the buffer
    EventId arrival;   // after the copy back
    EventId consumer;  // where its consumer starts
  };
  Device& device_;
  SpareTimingEvents& events_;
  std::vector<Pair> pairs_;
};

}  // namespace memtool::engine::detail
