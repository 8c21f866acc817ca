// The swap rule, once: its choices shared by memtool's executor (engine/src/swap_adaptor.cpp) and
// the simulator that predicts it (swapper/src/budget_holder.cpp, `memtool simulate` and the
// planner). Which resident buffers leave to make room and in which order (farthest next use first;
// unknown futures first of all, then by least recent use; those that must leave at once last),
// which are left out (needed within the horizon), when it stops (as soon as the incoming bytes fit)
// and what the host limit keeps on the device; in which order the swap-ins due come back (soonest
// needed first, the first that finds no room holding back the rest); and whether the rule leaves
// early (no schedule, a lookahead). Device-free: each side describes its buffers as candidates and
// carries out what the rule picks (tests/unit/swapper/test_eviction_rule.cpp; the executor and the
// simulator on one script: tests/unit/engine/test_swap_rule_agreement.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace memtool::swapper {

inline constexpr std::uint64_t kUnknownUse = std::numeric_limits<std::uint64_t>::max();

// A resident buffer the rule may send out. One call uses one scale for next_use and the horizon
// (the executor: work items from now; the simulator: unrolled ops).
struct RuleCandidate {
  std::uint64_t next_use = kUnknownUse;  // when it is next used; kUnknownUse: not known
  std::uint64_t last_use = 0;            // among equal next uses, the least recently used leaves first
  std::uint64_t tie = 0;                 // the caller's last resort among equal keys: the smaller leaves first
  std::uint64_t bytes = 0;               // what it takes on the host
  std::uint64_t handle = 0;              // the caller's name for it
  bool at_once = false;  // work being issued may reach it: it leaves at once (a stall), so after all others
};

// What the caller did with the candidate the rule offered: sent out, not a victim in this pass
// (dropped from the heap), or a candidate still but not now (put back once the pass ends).
enum class Offer : std::uint8_t { sent, dropped, kept };

// A swap-in due: its next use (one scale per call) and the caller's tie and name.
struct DueIn {
  std::uint64_t next_use = kUnknownUse;
  std::uint64_t tie = 0;
  std::uint64_t handle = 0;
};

// What the caller did with the swap-in the rule offered: brought it back, skipped it (it could not
// be moved now; the next ones are still offered), found no room for it (it and every one after it
// wait), or stopped (none of the rest is offered, none is held).
enum class Arrival : std::uint8_t { back, skipped, no_room, stop };

class EvictionRule {
 public:
  // The rule's order: true when `a` leaves before `b`.
  [[nodiscard]] static bool leaves_before(const RuleCandidate& a, const RuleCandidate& b) {
    if (a.at_once != b.at_once) return b.at_once;
    if (a.next_use != b.next_use) return a.next_use > b.next_use;
    if (a.last_use != b.last_use) return a.last_use < b.last_use;
    return a.tie < b.tie;
  }

  // Needed within `horizon` (its next use known and no later): it stays.
  [[nodiscard]] static bool needed_within(std::uint64_t next_use, std::uint64_t horizon) {
    return next_use != kUnknownUse && next_use <= horizon;
  }

  // With no schedule the rule leaves early: it makes room for what the next `lookahead` steps
  // allocate, sending out only what is not needed within them. The horizon; 0: it does not.
  [[nodiscard]] static std::uint64_t leave_early_horizon(bool scheduled, std::uint64_t lookahead) {
    return scheduled ? 0 : lookahead;
  }

  // A heap of candidates whose front is the next to leave (a caller may keep one across passes).
  static void make_heap(std::vector<RuleCandidate>& heap) { std::make_heap(heap.begin(), heap.end(), later); }
  static void push(std::vector<RuleCandidate>& heap, const RuleCandidate& c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), later);
  }

  struct Pass {
    std::uint32_t sent = 0;
    bool host_full = false;  // one stayed because the host limit would pass
  };

  // One pass of the rule over `heap`: offers the candidates in its order until `fits()` or the
  // next is needed within `horizon` (all after it are then too, among those that do not leave at
  // once: a caller with at-once candidates leaves out those needed within the horizon itself).
  // One whose bytes pass `host_room()` stays (kept). `offer(c)` carries it out. Kept ones are put
  // back in the heap at the end.
  template <class Fits, class HostRoom, class Offers>
  static Pass send_out(std::vector<RuleCandidate>& heap, std::uint64_t horizon, Fits&& fits, HostRoom&& host_room,
                       Offers&& offer) {
    Pass pass;
    std::vector<RuleCandidate> kept;
    while (!heap.empty() && !needed_within(heap.front().next_use, horizon) && !fits()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const RuleCandidate c = heap.back();
      heap.pop_back();
      if (c.bytes > host_room()) {
        pass.host_full = true;
        kept.push_back(c);
        continue;
      }
      const Offer taken = offer(c);
      if (taken == Offer::sent) ++pass.sent;
      if (taken == Offer::kept) kept.push_back(c);
    }
    for (const RuleCandidate& c : kept) push(heap, c);
    return pass;
  }

  // The swap-ins due come back soonest needed first (ties by `tie`): `arrive(d)` tries each; the
  // first without room holds back itself and every one after it (`hold(d)`): one needed later
  // would take what it needs and be sent out again for it.
  template <class Arrive, class Hold>
  static void bring_back(std::vector<DueIn>& due, Arrive&& arrive, Hold&& hold) {
    std::sort(due.begin(), due.end(), [](const DueIn& a, const DueIn& b) {
      return a.next_use != b.next_use ? a.next_use < b.next_use : a.tie < b.tie;
    });
    for (std::size_t k = 0; k < due.size(); ++k) {
      const Arrival arrival = arrive(due[k]);
      if (arrival == Arrival::stop) return;
      if (arrival == Arrival::no_room) {
        for (; k < due.size(); ++k) hold(due[k]);
        return;
      }
    }
  }

 private:
  // Heap order: the front is the candidate that leaves first.
  static bool later(const RuleCandidate& a, const RuleCandidate& b) { return leaves_before(b, a); }
};

}  // namespace memtool::swapper
