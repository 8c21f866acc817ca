// Holding a budget in the simulator as memtool's executor does (simulate.hpp,
// SimulateOptions::hold_budget_bytes): the device bytes of the schedule's swaps and of the
// executor's own rule, and the waits and evictions that keep an op's memory within the budget.
//
// Before an op is issued: the copy-outs that have ended release their bytes; if the op's memory
// (its allocations made, the swap-ins issued with it back) does not fit, the copy-outs under way
// are waited for, oldest first; if it still does not fit, the rule (safety_net.hpp) sends out
// resident buffers the op does not touch, farthest next access first, until it would, and those
// copies are waited for too. The rule's swap-ins are issued ahead of their next access, or by
// the op that touches the buffer (on demand), which waits for them; one due ahead comes back
// only if it fits then (the op's memory, it and what the ops up to its access allocate within the
// budget, its bytes counted as away even while its copy out is under way, as the executor counts
// them), and is tried again at the next op otherwise. One back while its copy out is under way
// keeps its device memory and needs no copy back (the executor drops that copy); room is made for it
// from buffers needed after its access, whose copies it does not wait for, and those due at one
// op are taken soonest needed first, the first that does not fit holding back the rest (the
// executor's prefetch). With no schedule the rule also leaves early: after each
// op is issued it makes room for what the next few ops allocate, as the executor does then.
// What ops allocate, for both, counts the allocations freed before their op too
// (Op::transient_bytes), as the executor's look ahead does. A
// swap-in's bytes count from its issue, as the executor maps them then.
//
// An op that may reach every buffer (Op::reaches_all) keeps them all still, as the executor's
// keep_still does (engine/src/swap_adaptor.cpp): once the room for its memory is made, every
// copy-out still under way is called off (its copy runs to its end and is wasted: the buffer
// stays on the device, no swap-in follows, and the budget needs other room later), the op starts
// only once every copy in motion then has ended (its stream waits for them), and while it is
// issued nothing more is sent out ahead (the executor's prefetch and leaving early find every
// buffer reached). Nor is anything sent out ahead (copies not waited for) when the next such op
// is within `copy_ops` (EvictionRule::leaves_unwaited): it would call those copies off.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "link_engines.hpp"
#include "memtool/swapper/eviction_rule.hpp"
#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/simulate.hpp"
#include "safety_net.hpp"

namespace memtool::swapper::detail {

class BudgetHolder {
 public:
  // `keys`: how many schedule instances there are (swap * iterations + instance); `late_outs`:
  // (buffer, op) for each scheduled copy-out triggered after an op that does not touch the
  // buffer (the rule must not have it out then).
  // `leave_early_ops`: with no schedule the rule also makes room at each op for what the next
  // that many ops of the iteration allocate, sending out buffers not needed within them, without
  // waiting (0: not).
  // `alloc_at_start`: the bytes allocated before each op (the simulator's static memory).
  // `lead_ops`: non-zero, the rule's swap-ins are issued that many ops ahead of the next access at
  // first, per buffer, each lead doubled when its swap-in comes late (EvictionRule::grown_lead,
  // as the executor learns them); 0: at twice the copy's uncontended time (SafetyNet::issue_for).
  // `copy_ops`: the ops a copy out not waited for (leaving early, room for a swap-in ahead) is
  // given to end before the next op reaching every buffer, or it is not started
  // (EvictionRule::leaves_unwaited; the executor's lookahead; 0: always started).
  void reset(const Iteration& iteration, const Link& link, std::uint64_t budget, std::size_t keys,
             std::span<const std::pair<std::uint32_t, std::uint32_t>> late_outs,
             std::span<const std::uint64_t> alloc_at_start, std::uint32_t leave_early_ops, LinkEngines& engines,
             std::uint32_t lead_ops = 0, std::uint32_t copy_ops = 0);

  // A schedule instance's copy-out was enqueued, or its swap-in is being issued.
  void scheduled_out(std::uint32_t key, std::uint32_t buffer, std::uint64_t bytes, std::int32_t copy);
  void scheduled_in(std::uint32_t key);
  // Its bytes are off the device (copy-out ended, swap-in not issued).
  [[nodiscard]] bool away(std::uint32_t key) const { return state_[key] == kAway; }
  // Its copy-out was called off by an op reaching every buffer: it never left, and no swap-in follows.
  [[nodiscard]] bool called_off(std::uint32_t key) const { return state_[key] == kCalledOff; }

  // Before unrolled op u (index i) is issued, no earlier than `ready` (host time): `level` is
  // the static level at its start, `ins` the schedule instances whose swap-ins are issued with
  // it, `gpu_ready` when the GPU has run the ops before it (the rule's copies out start no
  // earlier: they are ordered after them). Returns when the host issues it (after any wait);
  // the rule's swap-ins due then are issued at that time (the caller issues the schedule's, but
  // none called off: called_off).
  // `host_ahead`: the host decides it at `decide` (<= ready), before the GPU has run the op before
  // (SimulateOptions::host_ahead): the buffers freed since the host last waited still hold their
  // device bytes, so they are no room for swap-ins ahead, and an op that needs them waits for
  // the copies out under way, then for the GPU to reach them (gpu_ready); the rule sends nothing
  // out for them (they come back with a wait, not a copy).
  double before_op(std::uint64_t u, std::size_t i, std::uint64_t level, std::span<const std::uint32_t> ins,
                   double ready, double gpu_ready, bool host_ahead, double decide);
  // Whether the host waited for room (copies out or frees) before the op just issued (before_op).
  [[nodiscard]] bool waited() const { return waited_; }
  // The op's start once the rule's swap-ins of what it touches are in (and, reaching every
  // buffer, the copies in motion when it was issued have ended).
  double consume(std::size_t i, double start);
  // Copy-outs called off at unrolled ops [first, last) (the executor's swap_leaves_called_off).
  [[nodiscard]] std::uint32_t leaves_called_off(std::uint64_t first, std::uint64_t last) const;

  // The rule's memory events (copy-out end: -bytes, swap-in start: +bytes), for the sweep.
  void memory_events(std::vector<std::pair<double, std::int64_t>>& events) const;
  // The rule's copy-outs that started in [t0, t1): how many, and their bytes.
  [[nodiscard]] std::pair<std::uint32_t, std::uint64_t> rule_outs(double t0, double t1) const;
  // The rule's swaps sent out in unrolled ops [first, first + n) and back in by the end, with
  // positions from `first` and times from `t0` (Simulation::rule_evictions).
  void evictions(std::uint64_t first, double t0, std::vector<RuleEviction>& out) const;

 private:
  // kGone: freed by the program while out, never to come back. kCalledOff: its copy-out was
  // called off by an op reaching every buffer (it never left). kKept: a rule swap brought back
  // while its copy out was under way: the executor keeps its device memory and drops the copy,
  // with no copy back (it never left).
  enum State : std::uint8_t { kNone, kOut, kAway, kBack, kGone, kCalledOff, kKept };
  struct RuleSwap {
    std::uint32_t buffer = 0;
    std::int32_t out = -1;
    std::int32_t in = -1;       // its copy back, or -1 (kKept: none)
    std::int32_t arrival = -1;  // the copy its consumer waits for (`in`; kKept ahead: the swap-in engine's last), or -1
    bool back = false;          // its swap-in issued (with or without a copy)
    State state = kOut;
    std::uint64_t out_before = 0;  // unrolled op before which it was sent out
    std::uint64_t in_at = 0;       // unrolled op its swap-in was issued with
    double freed_ns = 0;           // kGone: when its buffer was freed, and before which op (unrolled)
    std::uint64_t freed_before = 0;
    bool kept_out = false;  // due ahead, found no room: brought back on demand, its lead stays (the executor's)
  };
  static constexpr std::uint32_t kRule = std::uint32_t{1} << 31;  // pending code of a rule swap

  void collect();  // the copy-outs that have ended, in engine order
  void on_in(State& state, std::uint64_t bytes);
  // Its swap-in, issued with unrolled op u at `when`, on demand (by the op that touches it) or
  // ahead (on the swap-in stream).
  void issue_rule_in(std::uint32_t index, std::uint64_t u, double when, bool on_demand);
  // The op's resident bytes once its allocations are made and its swap-ins issued.
  [[nodiscard]] std::uint64_t resident() const;
  // What ops (i, i + ops] of this iteration allocate, those freed before their op included (the
  // executor looks no further than its end).
  [[nodiscard]] std::uint64_t upcoming(std::size_t i, std::uint64_t ops) const;
  // Waits for copy-outs under way, oldest first, then for the frees not reached, until the op
  // fits; returns when it may issue.
  double wait_for_room(double issue);
  // Op u reaches every buffer and is issued at `issue`: the copy-outs under way are called off,
  // and the copies in motion are those its start waits for (consume).
  void keep_still(std::uint64_t u, double issue);
  // Buffer b is resident again without a copy: a candidate of the rule's once more.
  void resume(std::uint32_t b);
  // Sends out buffers by the rule, farthest next access first and none needed by `needed_by`
  // (unrolled), until the op and `extra` more bytes would fit once their copies are done.
  void evict(std::uint64_t u, std::size_t i, double when, std::uint64_t needed_by, std::uint64_t extra);
  // Brings the live candidates and their next accesses up to unrolled op u (index i), issued no
  // earlier than `ready`: ops are visited in order. A buffer the rule has out when the program
  // frees it is gone (its bytes with it).
  void advance_live(std::uint64_t u, std::size_t i, double ready);
  // Buffer b's next access after u, and its entry in farthest_ if that changed. One with no
  // access left before its free is keyed as the executor sees it, by its name's next access (the
  // next instance's): sending it out costs one copy and frees its bytes until the free.
  void rekey(std::uint32_t b, std::uint64_t u);
  // Buffer b as the rule's candidate with next access `next`.
  [[nodiscard]] static NextUseCandidate candidate(std::uint32_t b, std::uint64_t next);
  [[nodiscard]] bool late_out_before(std::uint32_t buffer, std::uint64_t u, std::uint64_t next) const;

  const Iteration* iteration_ = nullptr;
  LinkEngines* link_ = nullptr;
  double gpu_ready_ = 0;  // the op being issued: when the GPU has run the ops before it
  // The op being issued: the resident bytes of the candidates freed after the op before it; and
  // host_ahead, those freed since the host last waited for the GPU (until it waits for them).
  std::uint64_t freed_resident_ = 0;
  std::uint64_t unreached_ = 0;
  bool waited_ = false;  // the host waited for room before it
  SafetyNet net_;
  std::uint64_t budget_ = 0;
  std::uint32_t leave_early_ = 0;
  std::uint32_t copy_ops_ = 0;
  std::vector<std::uint64_t> reaching_all_in_;  // per op: ops to the next one reaching every buffer, or kNoAccess
  bool learn_leads_ = false;
  std::vector<std::uint64_t> lead_;       // learn_leads_: per buffer, its swap-ins' lead in ops
  std::vector<std::uint64_t> allocated_;  // bytes allocated before ops [0, k), k <= n
  std::vector<State> state_;              // per schedule instance
  std::vector<std::uint64_t> bytes_;      // per schedule instance
  std::vector<std::uint32_t> buffer_;     // per schedule instance
  std::vector<std::int32_t> out_copy_;    // per schedule instance
  std::vector<std::pair<std::uint32_t, std::uint32_t>> late_outs_;  // sorted
  std::vector<std::uint32_t> held_out_;  // per buffer: schedule instances out (copy-out issued, swap-in not)
  std::vector<std::int32_t> rule_of_;    // per buffer: its rule swap under way, or -1
  std::vector<RuleSwap> rule_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> due_;  // min-heap: (issue op, rule swap)
  std::vector<std::uint32_t> pending_;  // copy-outs in enqueue order: schedule keys, or kRule | index
  std::size_t next_pending_ = 0;
  std::uint64_t away_bytes_ = 0;     // off the device
  std::uint64_t leaving_bytes_ = 0;  // copy-out under way, swap-in not issued
  // The op being issued: its static level, the schedule's and the rule's swap-ins with it.
  std::uint64_t level_ = 0;
  std::span<const std::uint32_t> ins_;
  std::vector<std::uint32_t> rule_ins_;  // on demand
  std::vector<std::uint32_t> deferred_;  // scratch: due ahead, no room yet
  std::vector<std::uint8_t> live_;       // per buffer: a rule candidate live at the current op
  std::vector<std::uint64_t> next_;      // per live candidate: its next access (unrolled), or kNoAccess
  // The rule's candidates in its order (eviction_rule.hpp; 16-byte entries: one is pushed at
  // every access), a heap kept across ops. An entry is
  // current while its buffer is live with that next access and not out (by the rule or the
  // schedule; one back from the schedule's is pushed again); others are dropped when they come up.
  std::vector<NextUseCandidate> farthest_;
  std::vector<DueIn> due_now_;  // scratch: the rule's swap-ins due ahead (next access, rule swap)
  // The op being issued reaches every buffer: the last copy each way when it was (its start
  // waits for them), and whether it is being issued (nothing is sent out ahead then).
  std::int32_t still_[2] = {-1, -1};
  bool reaching_all_ = false;
  std::vector<std::uint64_t> called_off_at_;  // the unrolled op of each leave called off, in order
  std::vector<std::uint8_t> touched_;         // scratch: buffers the current op accesses
};

}  // namespace memtool::swapper::detail
