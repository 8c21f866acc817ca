// The simulator: what a schedule does to device memory and to the iteration's time.
//
// Ops run one after another on one compute timeline; an op starts when the one before it has
// ended and every swap-in it consumes (and every copy-out it waits for) has finished. Copies run
// on two engines, device-to-host and host-to-device, one copy at a time each, in issue order
// (FIFO); a copy starts when its engine is free, its trigger has passed and (swap-in) its own
// copy-out has finished; it takes the link's latency and then its bytes at the link's bandwidth,
// divided by the duplex factor while the other engine is moving data too (an exact event
// simulation of the two rates). A copy moves the buffer's own bytes (Buffer::moved_bytes: the
// executor copies the allocation, not the footprint it maps); memory counts its size.
//
// Memory: a buffer occupies its bytes from the start of the op it is allocated before to the end
// of the op it is freed after; a swapped buffer's bytes are released when its copy-out finishes
// and occupied again from its copy-in's start. At equal times releases come first. The peak is
// the highest occupancy (the live bytes a pool re-planned for the schedule has to hold).
//
// As the executor runs it (SimulateOptions::hold_budget_bytes): memtool's swapper in the process
// does not run a schedule's planned waits; it holds the budget where the memory is needed. An op
// whose allocations, with the swap-ins issued at it, would take the occupancy past the budget
// waits (the host waits before issuing it) for the copy-outs under way, in their order, until
// they fit; if none is left and it still does not fit, the executor's rule sends out resident
// buffers the op does not touch, farthest next access first, until it would, and waits for
// those copies too. The rule brings each back ahead of its next access (issued where its copy,
// uncontended with a margin, would end in time at the iteration's base op times) or, at the
// latest, with the op that touches it, which waits for it (one due ahead comes back only if it
// fits then). With no schedule at all the rule also leaves early, as the executor does then:
// after each op it makes room for what the next rule_lookahead_ops ops allocate, without
// waiting. An op that may reach every buffer (Op::reaches_all) keeps them still, as the executor
// does: copy-outs still under way when it is issued are called off (their link time spent, the
// buffer stays on the device, no swap-in follows), it starts once every copy in motion then has
// ended, and nothing is sent out ahead while it is issued. Swap-ins issue at the end of the op's
// wait. The occupancy counted there takes a swap-in's bytes from its issue, as the executor maps
// them then. The peak is still the sweep's (copy start).
//
// Host-timed (Iteration::host_timed): the host has its own clock. It issues op i+1 the program's
// host time (Op::host_ns) after op i, waits for the GPU where the program synchronised
// (Op::syncs) and where the executor waits for room; an op starts once issued and once the op
// before it has ended; host costs go on the host's clock; copies out are ordered after the work
// issued before them; the peak counts allocations at issue and frees at the next op's issue (the
// budget's view). Otherwise the host issues each op as the one before ends.
//
// Steady state: the iteration runs `iterations` times back to back with the same schedule
// (swaps of the gaps that wrap around the iteration end move data from one iteration into the
// next) and the last one is measured: its time, peak, link busy time and every consumer's stall.
//
// No I/O, no trace types; a Simulator keeps its scratch space between runs, so simulating the
// same iteration again allocates nothing once the buffers have grown.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "memtool/swapper/iteration.hpp"
#include "memtool/swapper/schedule.hpp"

namespace memtool::swapper {

// The executor's own host costs, which a program bound by its host pays in its step: the host
// time memtool spends per op it issues (interposition, its bookkeeping) and per copy it issues
// (a swap's copy, its event, the mappings it changes), measured in the process or given
// (`memtool simulate --op-cost/--copy-cost`, the problem file's `host` record). The simulator
// takes the GPU as idle while the host pays them: an op starts no earlier than the end of the
// one before it plus per_op_ns plus per_copy_ns for every copy issued since that op started
// (the copy-outs after it, the rule's copies and the swap-ins issued with this op). 0: none,
// the simulator's model before calibration.
// per_sync_ns: the host's time to come back from a wait for the GPU (a synchronisation's
// wake-up, and the GPU's start on the next op after idling), measured in the process by a probe
// (engine/src/swap/sync_probe.hpp). The program pays it after each synchronisation it waited in
// (Op::syncs), the executor after each of its own waits for room: the host resumes that much
// after the GPU got there. Not host-timed, the GPU idles that long after such an op before the
// next starts (the host issues each op as the one before ends). It counts in the base time too
// (base_time_ns): the program pays it without swapping.
struct HostCosts {
  double per_op_ns = 0;
  double per_copy_ns = 0;
  double per_sync_ns = 0;
  [[nodiscard]] bool none() const { return per_op_ns == 0 && per_copy_ns == 0 && per_sync_ns == 0; }
  // per_sync_ns in whole ns, as base_time_ns() and the simulator take it.
  [[nodiscard]] std::uint64_t whole_sync_ns() const {
    return static_cast<std::uint64_t>(std::llround(std::max(0.0, per_sync_ns)));
  }
};

struct SimulateOptions {
  std::uint32_t iterations = 3;  // >= 2: the first ones bring the link and the wrapped swaps to steady state
  bool record_curve = false;     // fill Simulation::curve
  // Non-zero: simulate as the executor runs a schedule with this budget (above): planned waits
  // (Swap::out_wait_op) are not run, ops wait for room instead.
  std::uint64_t hold_budget_bytes = 0;
  // Holding a budget with no schedule: the executor's rule makes room this many ops ahead for
  // what they allocate (its work-item lookahead, resources.hpp; 0: only when needed).
  std::uint32_t rule_lookahead_ops = 16;
  // Holding a budget: the rule's swap-ins are issued as the executor issues them, a lead of work
  // items ahead of the next use learnt per buffer (EvictionRule::grown_lead: from
  // rule_lookahead_ops, doubled when late), over lead_learning_iterations more iterations before
  // the measured one. false: each is issued at twice its copy's uncontended time ahead at the
  // base op times (the planners' model).
  bool learn_rule_leads = false;
  // Holding a budget, not host-timed: the host decides each op (its room, the rule's swap-ins
  // ahead) once it has issued the op before, while the GPU still runs that one, unless the
  // program synchronised after it (Op::syncs): the executor's host runs ahead of the GPU and
  // waits for it only there and where it waits for room. The buffers freed since it last waited
  // still hold their device bytes then (the executor's deferred frees, not reached): a swap-in
  // ahead finds no room in them, and an op that needs them waits for the copies out under way,
  // oldest first, then for the GPU to reach them (the op before ends), and comes back
  // HostCosts::per_sync_ns later; the rule sends nothing out for them (they come back with a
  // wait, not a copy). The GPU's timeline is unchanged. false: the host decides each op once the
  // one before has ended, every free before it reached (the planners' model: an iteration with
  // no synchronisations recorded, a trace's, would have the host ahead throughout).
  bool host_ahead = false;
  HostCosts host;  // none by default

  // As the executor runs a schedule within `budget`, its costs `host` (`memtool simulate
  // --as-executor` and the process's own predictions alike): its leads learnt, its host ahead.
  static SimulateOptions as_executor(std::uint64_t budget, const HostCosts& host) {
    SimulateOptions options;
    options.hold_budget_bytes = budget;
    options.host = host;
    options.learn_rule_leads = true;
    options.host_ahead = true;
    return options;
  }
};

struct MemoryPoint {
  double time_ns = 0;       // from the measured iteration's start
  std::uint64_t bytes = 0;  // occupancy from this time on
};

// One swap of the measured iteration (the instance whose consumer runs in it). Times are from
// the measured iteration's start (a wrapped swap's copy-out may lie before it: negative).
struct SwapTiming {
  double out_start_ns = 0;
  double out_end_ns = 0;
  double in_start_ns = 0;
  double in_end_ns = 0;
  // in_end - the time the consumer would have started had this swap-in been ready: > 0 means the
  // consumer waited this long for it (the learning hook moves its trigger earlier), <= 0 is slack.
  double lateness_ns = 0;
  // Holding a budget: its copy-out freed nothing, called off or skipped at an op reaching every
  // buffer (Op::reaches_all), and no swap-in followed (the times above stay 0).
  bool stayed = false;
};

// Holding a budget: one of the executor's rule's swaps (positions in ops from the start of an
// iteration in steady state; in_at_op may lie in the next iteration, up to 2n).
struct RuleEviction {
  std::uint32_t buffer = 0;
  std::uint64_t out_before_op = 0;  // sent out before this op was issued (after the one before it)
  std::uint64_t in_at_op = 0;       // its swap-in issued with this op
  // Its bytes away: from its copy-out's end to its copy-in's start, from the measured
  // iteration's start (negative: this is the iteration before it).
  double out_end_ns = 0;
  double in_start_ns = 0;
  // Freed by the program while out, never to come back: in_at_op is the op before which it was
  // freed, in_start_ns when its bytes come off the device's count for good.
  bool freed = false;
  // Brought back while its copy out was under way: the executor keeps its device memory and
  // drops the copy, so its bytes never left (no copy back; in_start_ns == out_end_ns).
  bool kept = false;
};

struct Simulation {
  double base_time_ns = 0;             // the iteration without swapping
  double time_ns = 0;                  // the measured iteration with the schedule
  double stall_ns = 0;                 // time_ns - base_time_ns: every op's wait summed
  double slowdown = 0;                 // stall_ns / base_time_ns
  std::uint64_t plain_peak_bytes = 0;  // without swapping
  std::uint64_t peak_bytes = 0;
  double peak_time_ns = 0;
  std::uint64_t bytes_out = 0;  // per iteration, the schedule's
  std::uint64_t bytes_in = 0;
  // Holding a budget: the executor's rule's copy-outs that started in the measured iteration.
  std::uint32_t rule_swaps = 0;
  std::uint64_t rule_bytes_out = 0;
  // The rule's swaps of one steady iteration (the one before the measured one, so that those
  // coming back in the next are complete), in the order it sent them out.
  std::vector<RuleEviction> rule_evictions;
  // Holding a budget: copy-outs (the schedule's and the rule's) called off in the measured
  // iteration by ops reaching every buffer (the executor's swap_leaves_called_off).
  std::uint32_t leaves_called_off = 0;
  // The copies issued in the measured iteration (the schedule's and the rule's, both ways): each
  // costs HostCosts::per_copy_ns of host time.
  std::uint64_t copies_issued = 0;
  double d2h_busy_ns = 0;  // link occupancy per direction within the measured iteration
  double h2d_busy_ns = 0;
  std::vector<double> op_stall_ns;  // per op: how long it waited after the op before it ended
  std::vector<SwapTiming> swaps;    // per schedule entry
  std::vector<MemoryPoint> curve;   // with record_curve: every change of occupancy
};

class Simulator {
 public:
  // Throws std::invalid_argument for a malformed iteration, link or schedule (validate()).
  const Simulation& run(const Iteration& iteration, const Schedule& schedule, const Link& link,
                        const SimulateOptions& options = {});
  // The same without re-validating the iteration and schedule (the planner's inner loop, which
  // builds valid schedules only).
  const Simulation& run_trusted(const Iteration& iteration, const Schedule& schedule, const Link& link,
                                const SimulateOptions& options = {});
  [[nodiscard]] const Simulation& last() const { return result_; }

 private:
  struct Scratch;
  struct ScratchDeleter {
    void operator()(Scratch* scratch) const;
  };
  Simulation result_;
  std::unique_ptr<Scratch, ScratchDeleter> scratch_;
};

[[nodiscard]] Simulation simulate(const Iteration& iteration, const Schedule& schedule, const Link& link,
                                  const SimulateOptions& options = {});

}  // namespace memtool::swapper
