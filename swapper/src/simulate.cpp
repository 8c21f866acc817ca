// The simulator (simulate.hpp): ops in order on one compute timeline, copies on the link's two
// engines, then one sweep over the measured iteration's memory events.
#include "memtool/swapper/simulate.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "budget_holder.hpp"
#include "link_engines.hpp"

namespace memtool::swapper {

struct Simulator::Scratch {
  // Per op i (positions modulo n): the swaps triggered, consumed or waited on there (CSR lists).
  std::vector<std::uint32_t> out_begin, out_items;
  std::vector<std::uint32_t> in_begin, in_items;
  std::vector<std::uint32_t> use_begin, use_items;
  std::vector<std::uint32_t> wait_begin, wait_items;
  std::vector<std::uint32_t> fill;
  // Static memory: bytes allocated before each op starts and freed after it ends.
  std::vector<std::uint64_t> alloc_at_start, free_at_end;
  // Holding the budget: the static level at each op's start (its allocations made), the
  // schedule instances whose swap-ins an op issues, and the executor's bookkeeping.
  std::vector<std::uint64_t> static_at_start;
  std::vector<std::uint32_t> ins_here;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> late_outs;  // (buffer, op) of copy-outs after a later op
  detail::BudgetHolder holder;
  std::vector<double> start, end;               // per unrolled op of all simulated iterations
  std::vector<double> boundary;                 // per iteration: where it ends (host and GPU past it)
  std::vector<double> issue;                    // host-timed: per unrolled op, when the host issued it
  std::vector<std::int32_t> out_copy, in_copy;  // [swap * iterations + instance], -1: not issued
  std::vector<std::pair<double, std::int64_t>> swap_events;
  detail::LinkEngines link;
};

void Simulator::ScratchDeleter::operator()(Scratch* scratch) const { delete scratch; }

namespace {

// CSR lists of swap indices keyed by a position modulo n.
template <typename Key>
void bucket(std::size_t n, std::size_t swaps, Key key, std::vector<std::uint32_t>& begin,
            std::vector<std::uint32_t>& items, std::vector<std::uint32_t>& fill) {
  begin.assign(n + 1, 0);
  for (std::uint32_t s = 0; s < swaps; ++s) {
    const std::uint64_t k = key(s);
    if (k != kNoWait) ++begin[k % n + 1];
  }
  for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  items.resize(begin[n]);
  fill.assign(begin.begin(), begin.end() - 1);
  for (std::uint32_t s = 0; s < swaps; ++s) {
    const std::uint64_t k = key(s);
    if (k != kNoWait) items[fill[k % n]++] = s;
  }
}

}  // namespace

const Simulation& Simulator::run(const Iteration& iteration, const Schedule& schedule, const Link& link,
                                 const SimulateOptions& options) {
  if (std::string e = validate(iteration); !e.empty()) throw std::invalid_argument("swapper: " + e);
  if (std::string e = validate(link); !e.empty()) throw std::invalid_argument("swapper: " + e);
  if (std::string e = validate(iteration, schedule); !e.empty()) throw std::invalid_argument("swapper: " + e);
  return run_trusted(iteration, schedule, link, options);
}

const Simulation& Simulator::run_trusted(const Iteration& iteration, const Schedule& schedule, const Link& link,
                                         const SimulateOptions& options) {
  if (!scratch_) scratch_.reset(new Scratch);
  Scratch& w = *scratch_;
  Simulation& out = result_;
  const std::size_t n = iteration.ops.size();
  const std::size_t swaps = schedule.swaps.size();
  // Learnt leads (SimulateOptions::learn_rule_leads): iterations before the measured one to learn them in.
  const bool learn_leads = options.learn_rule_leads && options.hold_budget_bytes != 0;
  const std::uint32_t rounds = std::max<std::uint32_t>(options.iterations, 2) +
                               (learn_leads ? EvictionRule::lead_learning_iterations(options.rule_lookahead_ops) : 0);
  const std::vector<Swap>& plan = schedule.swaps;

  // The host's time back from a wait for the GPU (HostCosts::per_sync_ns), as the base time takes it.
  const std::uint64_t whole_sync_ns = options.host.whole_sync_ns();
  const auto sync_ns = static_cast<double>(whole_sync_ns);
  out.base_time_ns = static_cast<double>(base_time_ns(iteration, whole_sync_ns));
  out.plain_peak_bytes = plain_peak_bytes(iteration);
  out.op_stall_ns.assign(n, 0.0);
  out.swaps.assign(swaps, SwapTiming{});
  out.curve.clear();
  out.bytes_out = out.bytes_in = 0;
  for (const Swap& swap : plan) {
    out.bytes_out += iteration.buffers[swap.gap.buffer].size;
    out.bytes_in += iteration.buffers[swap.gap.buffer].size;
  }
  if (n == 0) {
    out.time_ns = out.stall_ns = out.slowdown = out.peak_time_ns = 0;
    out.d2h_busy_ns = out.h2d_busy_ns = 0;
    out.copies_issued = 0;
    out.peak_bytes = out.plain_peak_bytes;
    return out;
  }

  bucket(
      n, swaps, [&](std::uint32_t s) { return plan[s].out_after_op; }, w.out_begin, w.out_items, w.fill);
  bucket(
      n, swaps, [&](std::uint32_t s) { return plan[s].in_at_op; }, w.in_begin, w.in_items, w.fill);
  bucket(
      n, swaps, [&](std::uint32_t s) { return plan[s].gap.to_op; }, w.use_begin, w.use_items, w.fill);
  bucket(
      n, swaps, [&](std::uint32_t s) { return plan[s].out_wait_op; }, w.wait_begin, w.wait_items, w.fill);

  // Static memory per op; `initial` is what is live before op 0 of any iteration.
  w.alloc_at_start.assign(n, 0);
  w.free_at_end.assign(n, 0);
  std::uint64_t initial = 0;
  for (const Buffer& buffer : iteration.buffers) {
    if (buffer.persistent) {
      initial += buffer.size;
      continue;
    }
    w.alloc_at_start[buffer.alloc_before_op] += buffer.size;
    w.free_at_end[buffer.free_after_op] += buffer.size;
    if (buffer.crosses_iteration()) initial += buffer.size;
  }

  const std::uint64_t hold = options.hold_budget_bytes;
  if (hold != 0) {
    w.static_at_start.resize(n);
    for (std::size_t i = 0, level = initial; i < n; ++i) {
      level += w.alloc_at_start[i];
      w.static_at_start[i] = level;
      level -= w.free_at_end[i];
    }
  }
  const auto size_of = [&](std::uint32_t s) { return iteration.buffers[plan[s].gap.buffer].size; };
  // What its copies move (the link's time), less than its size where the footprint is rounded up.
  const auto moved_of = [&](std::uint32_t s) { return iteration.buffers[plan[s].gap.buffer].moved_bytes(); };
  const std::size_t total = n * rounds;
  w.start.assign(total, 0.0);
  w.end.assign(total, 0.0);
  w.issue.assign(iteration.host_timed ? total : 0, 0.0);
  w.out_copy.assign(swaps * rounds, -1);
  w.in_copy.assign(swaps * rounds, -1);
  w.link.reset(link.d2h_bytes_per_ns, link.h2d_bytes_per_ns, static_cast<double>(link.d2h_latency_ns),
               static_cast<double>(link.h2d_latency_ns), link.duplex_factor);
  if (hold != 0) {
    w.late_outs.clear();
    for (const Swap& swap : plan) {
      if (swap.out_after_op != swap.gap.from_op) {
        w.late_outs.emplace_back(swap.gap.buffer, static_cast<std::uint32_t>(swap.out_after_op % n));
      }
    }
    w.holder.reset(
        iteration, link, hold, swaps * rounds, w.late_outs, w.alloc_at_start,
        static_cast<std::uint32_t>(EvictionRule::leave_early_horizon(swaps != 0, options.rule_lookahead_ops)), w.link,
        learn_leads ? std::max<std::uint32_t>(1, options.rule_lookahead_ops) : 0, options.rule_lookahead_ops);
  }

  // The instance of swap s whose position `pos` (unrolled in its gap) falls on op r*n + i.
  const auto instance = [&](std::uint64_t pos, std::uint32_t r) -> std::int64_t {
    return static_cast<std::int64_t>(r) - static_cast<std::int64_t>(pos / n);
  };

  // The executor's host costs (HostCosts): the copies issued since the last op started, each
  // paid before the next op starts.
  const HostCosts& host = options.host;
  std::size_t copies_paid = 0;
  const auto pay_copies = [&] {
    const std::size_t issued = w.link.copies().size();
    const double cost = host.per_copy_ns * static_cast<double>(issued - copies_paid);
    copies_paid = issued;
    return cost;
  };
  std::size_t copies_before_measured = 0;
  // Host-timed (Iteration::host_timed): the host's own clock, ahead of the GPU where the
  // program's host is; each iteration ends where both the host and the GPU are past its last op
  // (w.boundary). Otherwise the host issues each op as the one before ends.
  const bool host_timed = iteration.host_timed;
  double host_clock = 0;
  double previous_issue = 0;  // when the host issued the op before
  w.boundary.assign(rounds, 0.0);
  for (std::uint32_t r = 0; r < rounds; ++r) {
    if (r + 1 == rounds) copies_before_measured = w.link.copies().size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t u = r * n + i;
      const double gpu_free = u == 0 ? 0.0 : w.end[u - 1];
      double previous_end = host_timed ? host_clock : gpu_free;
      // Not host-timed: the host comes back from the program's synchronisation after the op before.
      if (!host_timed && u != 0 && iteration.ops[(i + n - 1) % n].syncs) previous_end += sync_ns;
      if (!host.none()) previous_end += host.per_op_ns + pay_copies();
      // The swap-ins triggered here (swap * iterations + instance); not those whose copy-out lies
      // before the first simulated iteration.
      const auto for_each_in = [&](auto&& f) {
        for (std::uint32_t k = w.in_begin[i]; k < w.in_begin[i + 1]; ++k) {
          const std::uint32_t s = w.in_items[k];
          const std::int64_t inst = instance(plan[s].in_at_op, r);
          if (inst < 0) continue;
          const auto key = static_cast<std::uint32_t>(s * rounds + inst);
          // Not one whose copy-out was called off (hold: an op reaching every buffer).
          if (w.out_copy[key] >= 0 && (hold == 0 || !w.holder.called_off(key))) f(s, key);
        }
      };
      double issue = previous_end;  // when the host issues this op (and its swap-ins)
      if (hold != 0) {
        w.ins_here.clear();
        for_each_in([&](std::uint32_t, std::uint32_t key) { w.ins_here.push_back(key); });
        // Not host-timed: the host decides this op once it has issued the one before, while the
        // GPU still runs that, unless the program waited for it (SimulateOptions::host_ahead).
        const bool ahead = !host_timed && options.host_ahead && u != 0 && !iteration.ops[(i + n - 1) % n].syncs;
        const double decide = ahead ? previous_issue : previous_end;
        issue = w.holder.before_op(u, i, w.static_at_start[i], w.ins_here, previous_end, gpu_free, ahead, decide);
        if (w.holder.waited()) issue += sync_ns;  // the executor waited for room: it comes back
      }
      previous_issue = issue;
      // Swap-ins triggered here are ordered after the ops before this one.
      for_each_in([&](std::uint32_t s, std::uint32_t key) {
        if (hold != 0) w.holder.scheduled_in(key);
        detail::Copy copy;
        copy.bytes = static_cast<double>(moved_of(s));
        copy.ready_ns = issue;
        copy.dep = w.out_copy[key];
        copy.direction = detail::h2d;
        w.in_copy[key] = w.link.enqueue(copy);
      });
      double start = issue;
      if (host_timed) {
        if (!host.none()) start += pay_copies();  // the host pays the copies issued with this op
        host_clock = start;                       // then goes on with the program
        w.issue[u] = start;
        start = std::max(start, gpu_free);
      }
      for (std::uint32_t k = w.use_begin[i]; k < w.use_begin[i + 1]; ++k) {
        const std::uint32_t s = w.use_items[k];
        const std::int64_t inst = instance(plan[s].gap.to_op, r);
        if (inst < 0) continue;
        const std::int32_t in_copy = w.in_copy[s * rounds + inst];
        if (in_copy >= 0) start = std::max(start, w.link.finish(in_copy));
      }
      for (std::uint32_t k = w.wait_begin[i]; k < w.wait_begin[i + 1] && hold == 0; ++k) {
        const std::uint32_t s = w.wait_items[k];
        const std::int64_t inst = instance(plan[s].out_wait_op, r);
        if (inst < 0) continue;
        const std::int32_t out_copy = w.out_copy[s * rounds + inst];
        if (out_copy >= 0) start = std::max(start, w.link.finish(out_copy));
      }
      if (hold != 0) start = w.holder.consume(i, start);
      if (!host.none() && !host_timed) start += pay_copies();  // the rule's and the swap-ins issued with this op
      w.start[u] = start;
      w.end[u] = start + static_cast<double>(iteration.ops[i].duration_ns);
      if (host_timed) {
        host_clock += static_cast<double>(iteration.ops[i].host_ns);
        // A synchronisation the host waited in: it comes back sync_ns after the GPU got there.
        if (iteration.ops[i].syncs && w.end[u] > host_clock) host_clock = w.end[u] + sync_ns;
      }
      // The executor skips the copy-outs due at an item reaching every buffer, unless an
      // allocation before it issued them first (then that item calls them off).
      const std::size_t due_at = (i + 1) % n;
      const bool skip_outs = hold != 0 && iteration.ops[due_at].reaches_all && w.alloc_at_start[due_at] == 0;
      for (std::uint32_t k = w.out_begin[i]; k < w.out_begin[i + 1] && !skip_outs; ++k) {
        const std::uint32_t s = w.out_items[k];
        const std::int64_t inst = instance(plan[s].out_after_op, r);
        if (inst < 0) continue;
        detail::Copy copy;
        copy.bytes = static_cast<double>(moved_of(s));
        copy.ready_ns = host_timed ? std::max(w.end[u], host_clock) : w.end[u];  // issued at the next op's hook
        copy.direction = detail::d2h;
        const auto key = static_cast<std::uint32_t>(s * rounds + inst);
        w.out_copy[key] = w.link.enqueue(copy);
        if (hold != 0) w.holder.scheduled_out(key, plan[s].gap.buffer, size_of(s), w.out_copy[key]);
      }
    }
    w.boundary[r] = host_timed ? std::max(host_clock, w.end[(r + 1) * n - 1]) : w.end[(r + 1) * n - 1];
  }
  out.copies_issued = w.link.copies().size() - copies_before_measured;
  w.link.drain();
  const std::vector<detail::Copy>& copies = w.link.copies();

  // The measured iteration: [t0, t1).
  const std::size_t first = (rounds - 1) * n;
  const double t0 = w.boundary[rounds - 2];
  const double t1 = w.boundary[rounds - 1];
  out.time_ns = t1 - t0;
  out.stall_ns = std::max(0.0, out.time_ns - out.base_time_ns);
  out.slowdown = out.base_time_ns > 0 ? out.stall_ns / out.base_time_ns : 0.0;
  for (std::size_t i = 0; i < n; ++i) out.op_stall_ns[i] = w.start[first + i] - w.end[first + i - 1];

  out.d2h_busy_ns = out.h2d_busy_ns = 0;
  for (const detail::Copy& copy : copies) {
    const double busy = std::max(0.0, std::min(copy.end_ns, t1) - std::max(copy.start_ns, t0));
    (copy.direction == detail::d2h ? out.d2h_busy_ns : out.h2d_busy_ns) += busy;
  }

  // Swap memory events, and the timings of the instances consumed in the measured iteration.
  w.swap_events.clear();
  for (std::uint32_t s = 0; s < swaps; ++s) {
    const auto size = static_cast<std::int64_t>(iteration.buffers[plan[s].gap.buffer].size);
    for (std::uint32_t inst = 0; inst < rounds; ++inst) {
      const std::int32_t o = w.out_copy[s * rounds + inst];
      if (o < 0 || (hold != 0 && w.holder.called_off(s * rounds + inst))) continue;
      w.swap_events.emplace_back(copies[o].end_ns, -size);
      const std::int32_t in = w.in_copy[s * rounds + inst];
      if (in >= 0) w.swap_events.emplace_back(copies[in].start_ns, size);
    }
    const std::int64_t measured =
        static_cast<std::int64_t>(rounds - 1) - static_cast<std::int64_t>(plan[s].gap.to_op / n);
    if (measured < 0) continue;
    const std::int32_t o = w.out_copy[s * rounds + measured];
    const std::int32_t in = w.in_copy[s * rounds + measured];
    SwapTiming& timing = out.swaps[s];
    timing.stayed = hold != 0 && (o < 0 || w.holder.called_off(s * rounds + static_cast<std::uint32_t>(measured)));
    if (o < 0 || in < 0) continue;
    const std::size_t consumer = measured * n + plan[s].gap.to_op;
    timing.out_start_ns = copies[o].start_ns - t0;
    timing.out_end_ns = copies[o].end_ns - t0;
    timing.in_start_ns = copies[in].start_ns - t0;
    timing.in_end_ns = copies[in].end_ns - t0;
    timing.lateness_ns = copies[in].end_ns - w.end[consumer - 1];
  }
  out.rule_swaps = 0;
  out.rule_bytes_out = 0;
  out.rule_evictions.clear();
  out.leaves_called_off = 0;
  if (hold != 0) {
    out.leaves_called_off = w.holder.leaves_called_off(first, total);
    w.holder.memory_events(w.swap_events);
    std::tie(out.rule_swaps, out.rule_bytes_out) = w.holder.rule_outs(t0, t1);
    w.holder.evictions(first - n, t0, out.rule_evictions);
  }
  std::sort(w.swap_events.begin(), w.swap_events.end());  // by time, releases (negative) first

  // Level at t0: the static level between iterations plus every swap event before t0.
  std::int64_t level = static_cast<std::int64_t>(initial);
  std::size_t e = 0;
  while (e < w.swap_events.size() &&
         (w.swap_events[e].first < t0 || (w.swap_events[e].first == t0 && w.swap_events[e].second < 0))) {
    level += w.swap_events[e++].second;
  }
  std::uint64_t peak = static_cast<std::uint64_t>(std::max<std::int64_t>(level, 0));
  double peak_time = 0;
  const auto note = [&](double time) {
    const auto bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(level, 0));
    if (bytes > peak) {
      peak = bytes;
      peak_time = time - t0;
    }
    if (options.record_curve) {
      if (!out.curve.empty() && out.curve.back().time_ns == time - t0)
        out.curve.back().bytes = bytes;
      else
        out.curve.push_back({time - t0, bytes});
    }
  };
  if (options.record_curve) out.curve.push_back({0.0, peak});
  // Merge the static events (already in time order) with the sorted swap events.
  const auto drain_swaps_before = [&](double time, bool including_releases_at) {
    while (e < w.swap_events.size()) {
      const auto& [t, delta] = w.swap_events[e];
      if (t >= t1) return;
      if (t < time || (including_releases_at && t == time && delta < 0)) {
        level += delta;
        note(t);
        ++e;
      } else {
        return;
      }
    }
  };
  if (host_timed) {
    // The budget's view: the program allocates and frees on the host, an op's allocations when
    // the host issues it, a buffer freed after op u when it issues the next, which may be ops
    // ahead of the GPU: the static events join the swap events in one time order. One before
    // t0 counts from t0.
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t u = first + i;
      if (w.alloc_at_start[i] != 0)
        w.swap_events.emplace_back(std::max(w.issue[u], t0), static_cast<std::int64_t>(w.alloc_at_start[i]));
      if (u + 1 < total && w.free_at_end[i] != 0)
        w.swap_events.emplace_back(std::max(w.issue[u + 1], t0), -static_cast<std::int64_t>(w.free_at_end[i]));
    }
    std::sort(w.swap_events.begin() + static_cast<std::ptrdiff_t>(e), w.swap_events.end());
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t u = first + i;
      drain_swaps_before(w.start[u], true);
      level += static_cast<std::int64_t>(w.alloc_at_start[i]);
      note(w.start[u]);
      drain_swaps_before(w.end[u], true);
      if (u + 1 < total) {
        level -= static_cast<std::int64_t>(w.free_at_end[i]);
        note(w.end[u]);
      }
    }
  }
  drain_swaps_before(t1, false);
  out.peak_bytes = peak;
  out.peak_time_ns = peak_time;
  return out;
}

Simulation simulate(const Iteration& iteration, const Schedule& schedule, const Link& link,
                    const SimulateOptions& options) {
  Simulator simulator;
  return simulator.run(iteration, schedule, link, options);
}

}  // namespace memtool::swapper
