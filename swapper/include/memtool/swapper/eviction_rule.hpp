// The swap rule, once: its choices shared by memtool's executor (engine/src/swap_adaptor.cpp) and
// the simulator that predicts it (swapper/src/budget_holder.cpp, `memtool simulate` and the
// planner). Which resident buffers leave to make room and in which order (farthest next use first;
// unknown futures first of all, then by least recent use; those that must leave at once last),
// which are left out (needed within the horizon), when it stops (as soon as the incoming bytes fit)
// and what the host limit keeps on the device; in which order the swap-ins due come back (soonest
// needed first, the first that finds no room holding back the rest); whether the rule leaves
// early (no schedule, a lookahead); and when copies out not waited for are not started (a step
// reaching every buffer comes before they could end). Device-free: each side describes its
// buffers as candidates and carries out what the rule picks (tests/unit/swapper/
// test_eviction_rule.cpp; the executor and the simulator on one script:
// tests/unit/engine/test_swap_rule_agreement.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
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

// A candidate keyed by its next use alone: none leaves at once, none is ordered by recency and
// none counts against a host limit (the simulator's, budget_holder.cpp, pushed to a heap kept
// across ops at every access, so kept small: 16 bytes against RuleCandidate's 48). The rule orders
// it as the RuleCandidate with the same next_use and tie and the rest at their defaults.
struct NextUseCandidate {
  std::uint64_t next_use = kUnknownUse;
  std::uint32_t tie = 0;
  std::uint32_t handle = 0;
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
  // The rule's order: true when `a` leaves before `b` (a RuleCandidate or a NextUseCandidate).
  template <class Candidate>
  [[nodiscard]] static bool leaves_before(const Candidate& a, const Candidate& b) {
    if (at_once(a) != at_once(b)) return at_once(b);
    if (a.next_use != b.next_use) return a.next_use > b.next_use;
    if (last_use(a) != last_use(b)) return last_use(a) < last_use(b);
    return a.tie < b.tie;
  }

  // Needed within `horizon` (its next use known and no later): it stays.
  [[nodiscard]] static bool needed_within(std::uint64_t next_use, std::uint64_t horizon) {
    return next_use != kUnknownUse && next_use <= horizon;
  }

  // A swap-in's lead, in steps (work items, ops) before the next use: a buffer's starts at the
  // lookahead and doubles each time its swap-in came late (its consumer waited for it), up to
  // kMaxLead. The executor keeps one per buffer name; the simulator learns them the same way
  // (SimulateOptions::learn_rule_leads).
  static constexpr std::uint64_t kMaxLead = 1024;
  [[nodiscard]] static std::uint64_t grown_lead(std::uint64_t lead) {
    return std::min(kMaxLead, std::max<std::uint64_t>(1, lead * 2));
  }
  // Iterations enough for a lead that starts at `lookahead` to reach kMaxLead by doubling once an
  // iteration, and one more to run with the leads as learnt.
  [[nodiscard]] static std::uint32_t lead_learning_iterations(std::uint64_t lookahead) {
    std::uint32_t k = 1;
    for (std::uint64_t lead = std::max<std::uint64_t>(1, lookahead); lead < kMaxLead; lead = grown_lead(lead)) ++k;
    return k;
  }

  // With no schedule the rule leaves early: it makes room for what the next `lookahead` steps
  // allocate, sending out only what is not needed within them. The horizon; 0: it does not.
  [[nodiscard]] static std::uint64_t leave_early_horizon(bool scheduled, std::uint64_t lookahead) {
    return scheduled ? 0 : lookahead;
  }

  // A copy out that no one waits for (leaving early, room made for a swap-in ahead) is called off
  // if a step that may reach every buffer is issued before it has ended: its link time is spent,
  // the buffer stays and the room is wanted again. Such copies start only when the next such step
  // is more than `copy_steps` away (the steps they are given to end: the lookahead, a swap-in's
  // first lead); `reaching_all`: steps from now to it (kUnknownUse: none known). Room needed now
  // is waited for and never held back: its copies end before the step that needs it.
  [[nodiscard]] static bool leaves_unwaited(std::uint64_t reaching_all, std::uint64_t copy_steps) {
    return reaching_all == kUnknownUse || reaching_all > copy_steps;
  }

  // A heap of candidates whose front is the next to leave (a caller may keep one across passes).
  template <class Candidate>
  static void make_heap(std::vector<Candidate>& heap) {
    std::make_heap(heap.begin(), heap.end(), later<Candidate>);
  }
  template <class Candidate>
  static void push(std::vector<Candidate>& heap, const Candidate& c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), later<Candidate>);
  }

  struct Pass {
    std::uint32_t sent = 0;
    bool host_full = false;  // one stayed because the host limit would pass
  };

  // One pass of the rule over `heap`: offers the candidates in its order until `fits()` or the
  // next is needed within `horizon` (all after it are then too, among those that do not leave at
  // once: a caller with at-once candidates leaves out those needed within the horizon itself).
  // One whose bytes pass `host_room()` stays (kept; a NextUseCandidate carries no bytes and is not
  // checked). `offer(c)` carries it out. Kept ones are put back in the heap at the end; until then
  // they wait past its end in the same vector (no allocation: the simulator runs a pass per op).
  template <class Candidate, class Fits, class HostRoom, class Offers>
  static Pass send_out(std::vector<Candidate>& heap, std::uint64_t horizon, Fits&& fits, HostRoom&& host_room,
                       Offers&& offer) {
    Pass pass;
    std::size_t end = heap.size();  // the heap is [0, end), those kept this pass [end, size)
    while (end != 0 && !needed_within(heap.front().next_use, horizon) && !fits()) {
      std::pop_heap(heap.begin(), heap.begin() + static_cast<std::ptrdiff_t>(end), later<Candidate>);
      --end;
      const Candidate c = heap[end];
      bool keep = false;
      if (passes_host_room(c, host_room)) {
        pass.host_full = true;
        keep = true;
      } else {
        const Offer taken = offer(c);
        if (taken == Offer::sent) ++pass.sent;
        keep = taken == Offer::kept;
      }
      if (!keep) {
        heap[end] = heap.back();
        heap.pop_back();
      }
    }
    for (std::size_t k = end; k < heap.size(); ++k) {
      std::push_heap(heap.begin(), heap.begin() + static_cast<std::ptrdiff_t>(k + 1), later<Candidate>);
    }
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
  // The order's keys a NextUseCandidate leaves at their defaults.
  static bool at_once(const RuleCandidate& c) { return c.at_once; }
  static bool at_once(const NextUseCandidate& /*c*/) { return false; }
  static std::uint64_t last_use(const RuleCandidate& c) { return c.last_use; }
  static std::uint64_t last_use(const NextUseCandidate& /*c*/) { return 0; }
  template <class HostRoom>
  static bool passes_host_room(const RuleCandidate& c, HostRoom& host_room) {
    return c.bytes > host_room();
  }
  template <class HostRoom>
  static bool passes_host_room(const NextUseCandidate& /*c*/, HostRoom& /*host_room*/) {
    return false;
  }

  // Heap order: the front is the candidate that leaves first.
  template <class Candidate>
  static bool later(const Candidate& a, const Candidate& b) {
    return leaves_before(b, a);
  }
};

}  // namespace memtool::swapper
