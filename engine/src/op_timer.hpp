// How long each work item of one iteration kept the GPU busy, for the swap planner. With timing
// events (cuEventCreate without DISABLE_TIMING), one is recorded on each item's stream after the
// item was issued (at the first call into memtool after it: close()), and an item's time is the
// GPU time from the previous event's completion to its own: its run time plus the idle time
// before it, which is time a copy can use too. Items on concurrent streams can overlap: a
// negative gap counts 0.
// An item whose stream was made to wait for a copy back, or issued after the host waited for
// swapped memory (the swapping of the iteration being learned, not the program's), is timed
// from an event recorded after those waits: under another schedule that wait, and the GPU's
// idle while the host waited, are not there, and they are no time a copy could use.
// Each item's time is the shorter of the ended iteration's and, when it had as many items, the
// one ended before it (the learner's two matching iterations): a wait not seen here, or the
// machine running the GPU's work late in one iteration (a busy host delays fakecuda's kernels),
// only ever lengthens an item, and one iteration's delays decided the plan (docs/swapping.md).
// Without timing events (SimDevice, old drivers), the host-time gap from an item to the next is
// used: the time the program took to issue it, right only for a GPU-bound program that waits for
// the GPU often (documented in docs/swapping.md).
// Each item's host time is the program's own, from its hook to the next item's (to the end for
// the last): the host clock's gap less memtool's host time in it (HostCostMeter::spent_ns: its
// hooks' work and its waits for the GPU) and less the program's own waits in synchronisation
// calls (synced), which flag the item; also the shorter of the two iterations'.
// Not thread-safe: the swap policy's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "item_times.hpp"
#include "memtool/engine/device.hpp"
#include "spare_events.hpp"
#include "swap/host_costs.hpp"

namespace memtool::engine::detail {

class OpTimer {
 public:
  using Clock = HostCostMeter::Clock;  // ns, monotonic
  OpTimer(Device& device, SpareTimingEvents& events, Clock clock = &HostCostMeter::steady_ns)
      : device_(device), events_(events), clock_(clock) {}
  ~OpTimer() = default;
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // A new iteration starts (at a boundary: what the host does from here to the first item is the
  // last item's host time). One that ended unread is kept as the one before (its times are
  // compared with the next one's); an unfinished one, and any older, are dropped.
  void begin();
  // The iteration's next work item is about to be issued on `stream`: the one before it has been.
  void item(StreamId stream);
  // The item issued last has been issued: its end is marked now, if not yet (item() does it
  // otherwise), so that what the host does before the next item is not taken for its run time.
  void close();
  // The item being issued had its stream wait for copies (queued by now), or the host waited
  // before it: its time starts here.
  void waited(StreamId stream);
  // The program waited `waited_ns` in a synchronisation call (the call's time) after the item
  // issued last: that item syncs, and the wait is not its host time. One before the iteration's
  // first item counts for its last (the iteration repeats: the wait is between the two).
  void synced(std::uint64_t waited_ns);
  // memtool's host time so far on this timer's clock (HostCostMeter::spent_ns); unset, the host
  // times are the clock's gaps less the synchronisations only, and not host_timed.
  void set_memtool_time(std::function<std::uint64_t()> spent_ns) { memtool_ns_ = std::move(spent_ns); }
  // The iteration ended after its last item: from now on, poll() until the times are known.
  void end();
  // The times of the ended iteration once the GPU has run it (timing events), or at once (host
  // gaps), each the shorter of its own and the iteration before's where that one had as many
  // items and its times are known (an item syncs if it did in either); nullopt while the GPU is
  // behind, or when there is no ended iteration.
  [[nodiscard]] std::optional<ItemTimes> poll();
  [[nodiscard]] bool gpu_timed() const { return timing_; }
  // Its events back to the spares (before they are destroyed).
  void release();

 private:
  // One iteration's events and host times.
  struct Timing {
    std::vector<EventId> marks;        // marks[i]: after item i-1 (marks[0]: the start)
    std::vector<EventId> starts;       // starts[i]: after item i's waits for copies (0: it had none)
    std::vector<std::uint64_t> host;   // host[i]: item i's before_work; the end (clock_)
    std::vector<std::uint64_t> spent;  // spent[i]: memtool's host time at host[i]
    std::vector<std::uint64_t> waits;  // waits[i]: the program's synchronisations after item i
    std::vector<bool> syncs;           // syncs[i]: it had one
    // From begin() to the first item (the boundary's frees and allocations before it): the
    // program's host time there, which the last item takes (the iteration repeats).
    std::uint64_t begun = 0;        // the host clock at begin()
    std::uint64_t begun_spent = 0;  // memtool's host time then
    std::uint64_t lead_waits = 0;   // the program's synchronisations before the first item
    std::uint64_t lead_ns = 0;
    bool sync_before_first = false;
  };

  void mark(StreamId stream);
  void release(Timing& t);  // its events back; its host times stay (host gaps need them)
  void drop(Timing& t);     // its events back and its host times gone: no iteration any more
  // `t`'s times (one per item, t.host.size() - 1 of them); nullopt while the GPU has not run its
  // last item. Falls back to host gaps (timing_ false) when the driver cannot time its events.
  std::optional<std::vector<double>> times_of(const Timing& t);
  // `t`'s program host times (one per item).
  static std::vector<double> host_times_of(const Timing& t);
  void stamp();  // the host clock and memtool's time now, into now_
  [[nodiscard]] std::uint64_t spent_now() const { return memtool_ns_ ? memtool_ns_() : 0; }

  Device& device_;
  SpareTimingEvents& events_;
  Clock clock_;
  std::function<std::uint64_t()> memtool_ns_;
  bool timing_ = true;  // until an event cannot be made or timed
  bool ended_ = false;
  bool open_ = false;  // the last item's end is not marked yet
  StreamId last_stream_ = 0;
  Timing now_;     // the iteration being logged, or the ended one
  Timing before_;  // the iteration ended before it, unread (no items: none)
};

}  // namespace memtool::engine::detail
