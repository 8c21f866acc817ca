// Holding a budget as the executor does (budget_holder.hpp).
#include "budget_holder.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace memtool::swapper::detail {

void BudgetHolder::reset(const Iteration& iteration, const Link& link, std::uint64_t budget, std::size_t keys,
                         std::span<const std::pair<std::uint32_t, std::uint32_t>> late_outs,
                         std::span<const std::uint64_t> alloc_at_start, std::uint32_t leave_early_ops,
                         LinkEngines& engines, std::uint32_t lead_ops, std::uint32_t copy_ops) {
  iteration_ = &iteration;
  link_ = &engines;
  budget_ = budget;
  leave_early_ = leave_early_ops;
  copy_ops_ = copy_ops;
  // Ops from each op to the next one reaching every buffer (wrapping into the next iteration).
  const std::size_t n = iteration.ops.size();
  reaching_all_in_.assign(n, kNoAccess);
  std::uint64_t next = kNoAccess;
  for (std::size_t k = 2 * n; k-- > 0;) {
    if (k < n && next != kNoAccess) reaching_all_in_[k] = next - k;
    if (iteration.ops[k % n].reaches_all) next = k;
  }
  learn_leads_ = lead_ops != 0;
  lead_.assign(learn_leads_ ? iteration.buffers.size() : 0, lead_ops);
  // Every allocation, those freed before their op too (Op::transient_bytes), as the executor's
  // look ahead counts them (IterationOracle::upcoming_allocations). Their own room is not held:
  // freed at once, they pass within what leaving early made for them.
  allocated_.assign(alloc_at_start.size() + 1, 0);
  for (std::size_t k = 0; k < alloc_at_start.size(); ++k)
    allocated_[k + 1] = allocated_[k] + alloc_at_start[k] + iteration.ops[k].transient_bytes;
  net_.reset(iteration, link);
  state_.assign(keys, kNone);
  bytes_.assign(keys, 0);
  buffer_.assign(keys, 0);
  out_copy_.assign(keys, -1);
  late_outs_.assign(late_outs.begin(), late_outs.end());
  std::sort(late_outs_.begin(), late_outs_.end());
  held_out_.assign(iteration.buffers.size(), 0);
  rule_of_.assign(iteration.buffers.size(), -1);
  touched_.assign(iteration.buffers.size(), 0);
  // Before op 0: the persistent candidates and those that cross from the iteration before.
  live_.assign(iteration.buffers.size(), 0);
  for (const std::uint32_t b : net_.live_at_start()) live_[b] = 1;
  next_.assign(iteration.buffers.size(), kNoAccess);
  farthest_.clear();
  rule_.clear();
  due_.clear();
  pending_.clear();
  next_pending_ = 0;
  away_bytes_ = leaving_bytes_ = 0;
  still_[d2h] = still_[h2d] = -1;
  reaching_all_ = false;
  called_off_at_.clear();
}

void BudgetHolder::rekey(std::uint32_t b, std::uint64_t u) {
  std::uint64_t next = net_.next_access(b, u);
  if (next == kNoAccess) next = net_.name_next_access(b, u);
  if (next == next_[b]) return;
  next_[b] = next;
  if (next == kNoAccess) return;
  EvictionRule::push(farthest_, candidate(b, next));
}

NextUseCandidate BudgetHolder::candidate(std::uint32_t b, std::uint64_t next) {
  // Keyed by next access alone (every candidate here has one): among equal ones the buffer
  // indexed later leaves first.
  NextUseCandidate c;
  c.next_use = next;
  c.tie = std::numeric_limits<std::uint32_t>::max() - b;
  c.handle = b;
  return c;
}

void BudgetHolder::advance_live(std::uint64_t u, std::size_t i, double ready) {
  freed_resident_ = 0;
  if (u == 0) {
    for (const std::uint32_t b : net_.live_at_start()) rekey(b, u);
  } else {
    for (const std::uint32_t b : net_.dies_after(i == 0 ? iteration_->ops.size() - 1 : i - 1)) {
      live_[b] = 0;
      next_[b] = kNoAccess;
      const State state = rule_of_[b] < 0 ? kBack : rule_[static_cast<std::uint32_t>(rule_of_[b])].state;
      if (state == kBack || state == kKept) {
        freed_resident_ += iteration_->buffers[b].size;
      }
      if (rule_of_[b] >= 0) {
        RuleSwap& r = rule_[static_cast<std::uint32_t>(rule_of_[b])];
        const std::uint64_t size = iteration_->buffers[b].size;
        if (r.state == kOut) leaving_bytes_ -= size;
        if (r.state == kAway) away_bytes_ -= size;
        if (r.state != kBack) {
          r.state = kGone;
          r.freed_ns = ready;
          r.freed_before = u;
        }
        rule_of_[b] = -1;
      }
    }
  }
  for (const std::uint32_t b : net_.born_at(i)) {
    live_[b] = 1;
    rekey(b, u);
  }
  // A candidate's next access changes only where it is accessed.
  for (const std::uint32_t b : net_.accessed_by(i)) {
    if (live_[b]) rekey(b, u);
  }
}

void BudgetHolder::scheduled_out(std::uint32_t key, std::uint32_t buffer, std::uint64_t bytes, std::int32_t copy) {
  state_[key] = kOut;
  bytes_[key] = bytes;
  buffer_[key] = buffer;
  out_copy_[key] = copy;
  ++held_out_[buffer];
  leaving_bytes_ += bytes;
  pending_.push_back(key);
}

void BudgetHolder::on_in(State& state, std::uint64_t bytes) {
  if (state == kAway) away_bytes_ -= bytes;
  if (state == kOut) leaving_bytes_ -= bytes;  // its bytes never left
  state = kBack;
}

void BudgetHolder::scheduled_in(std::uint32_t key) {
  on_in(state_[key], bytes_[key]);
  const std::uint32_t b = buffer_[key];
  // A candidate of the rule's again (its entry was dropped while it was out).
  if (--held_out_[b] == 0 && live_[b] && next_[b] != kNoAccess) EvictionRule::push(farthest_, candidate(b, next_[b]));
}

void BudgetHolder::collect() {
  const std::vector<Copy>& copies = link_->copies();
  while (next_pending_ < pending_.size()) {
    const std::uint32_t code = pending_[next_pending_];
    const bool rule = (code & kRule) != 0;
    const std::uint32_t index = code & ~kRule;
    State& state = rule ? rule_[index].state : state_[index];
    // One called off frees nothing: none is waited for (those after it end later).
    if (state != kCalledOff && state != kKept && copies[rule ? rule_[index].out : out_copy_[index]].end_ns < 0) return;
    ++next_pending_;
    if (state != kOut) continue;
    const std::uint64_t bytes = rule ? iteration_->buffers[rule_[index].buffer].size : bytes_[index];
    state = kAway;
    leaving_bytes_ -= bytes;
    away_bytes_ += bytes;
  }
}

std::uint64_t BudgetHolder::resident() const {
  std::uint64_t back = 0;
  for (const std::uint32_t key : ins_) back += state_[key] == kAway ? bytes_[key] : 0;
  for (const std::uint32_t r : rule_ins_)
    back += rule_[r].state == kAway ? iteration_->buffers[rule_[r].buffer].size : 0;
  return level_ + back - away_bytes_;
}

double BudgetHolder::wait_for_room(double issue) {
  while (resident() + unreached_ > budget_) {
    if (next_pending_ < pending_.size()) {
      // A copy out is ordered after the work issued before it: once it has ended, so has the op
      // before this one, and the frees after it are reached.
      const std::uint32_t code = pending_[next_pending_];
      const std::int32_t copy = (code & kRule) != 0 ? rule_[code & ~kRule].out : out_copy_[code];
      issue = std::max(issue, link_->finish(copy));
      collect();
      if (issue >= gpu_ready_) unreached_ = 0;
    } else if (unreached_ != 0) {
      issue = std::max(issue, gpu_ready_);  // the GPU reaches the frees
      unreached_ = 0;
    } else {
      break;
    }
    waited_ = true;
  }
  return issue;
}

std::uint64_t BudgetHolder::upcoming(std::size_t i, std::uint64_t ops) const {
  const std::size_t last = static_cast<std::size_t>(std::min<std::uint64_t>(iteration_->ops.size() - 1, i + ops));
  return allocated_[last + 1] - allocated_[i + 1];
}

bool BudgetHolder::late_out_before(std::uint32_t buffer, std::uint64_t u, std::uint64_t next) const {
  const std::size_t n = iteration_->ops.size();
  auto it = std::lower_bound(late_outs_.begin(), late_outs_.end(), std::make_pair(buffer, std::uint32_t{0}));
  for (; it != late_outs_.end() && it->first == buffer; ++it) {
    // The first unrolled op from u on after which this copy-out is triggered.
    const std::uint64_t op = it->second;
    std::uint64_t at = u - u % n + op;
    if (at < u) at += n;
    if (at < next) return true;
  }
  return false;
}

void BudgetHolder::resume(std::uint32_t b) {
  if (live_[b] && next_[b] != kNoAccess && held_out_[b] == 0 && rule_of_[b] < 0) {
    EvictionRule::push(farthest_, candidate(b, next_[b]));
  }
}

void BudgetHolder::keep_still(std::uint64_t u, double issue) {
  link_->advance_to(issue);
  collect();
  // Called off: the copy runs on (its link time spent), the bytes stay, no swap-in follows.
  for (std::size_t k = next_pending_; k < pending_.size(); ++k) {
    const std::uint32_t code = pending_[k];
    const std::uint32_t index = code & ~kRule;
    if ((code & kRule) != 0) {
      RuleSwap& r = rule_[index];
      if (r.state != kOut) continue;
      r.state = kCalledOff;
      leaving_bytes_ -= iteration_->buffers[r.buffer].size;
      rule_of_[r.buffer] = -1;
      resume(r.buffer);
    } else {
      if (state_[index] != kOut) continue;
      state_[index] = kCalledOff;
      leaving_bytes_ -= bytes_[index];
      --held_out_[buffer_[index]];
      resume(buffer_[index]);
    }
    called_off_at_.push_back(u);
  }
  // Its own, called off, need no swap-in now.
  std::erase_if(rule_ins_, [&](std::uint32_t r) { return rule_[r].state == kCalledOff; });
  still_[d2h] = link_->last(d2h);
  still_[h2d] = link_->last(h2d);
}

std::uint32_t BudgetHolder::leaves_called_off(std::uint64_t first, std::uint64_t last) const {
  return static_cast<std::uint32_t>(std::count_if(called_off_at_.begin(), called_off_at_.end(),
                                                  [&](std::uint64_t u) { return u >= first && u < last; }));
}

void BudgetHolder::evict(std::uint64_t u, std::size_t i, double when, std::uint64_t needed_by, std::uint64_t extra) {
  const std::span<const std::uint32_t> touched = net_.accessed_by(i);
  for (const std::uint32_t b : touched) touched_[b] = 1;
  // Until the op fits once the copies under way are done; entries whose buffer died or was
  // accessed since are dropped (an access pushed its new one). No host limit is modelled.
  const auto fits = [&] { return resident() + extra <= budget_ + leaving_bytes_; };
  const auto host_room = [] { return kNoAccess; };
  (void)EvictionRule::send_out(farthest_, needed_by, fits, host_room, [&](const NextUseCandidate& c) {
    const std::uint32_t b = c.handle;
    const std::uint64_t next = c.next_use;
    if (!live_[b] || next_[b] != next) return Offer::dropped;
    // The op's own (one it brings back included) and one the schedule sends out before its next
    // access stay candidates; one out is pushed again when it is back.
    if (touched_[b] || late_out_before(b, u, next)) return Offer::kept;
    if (rule_of_[b] >= 0 || held_out_[b] != 0) return Offer::dropped;
    const std::uint64_t size = iteration_->buffers[b].size;
    Copy copy;
    copy.bytes = static_cast<double>(iteration_->buffers[b].moved_bytes());
    copy.ready_ns = std::max(when, gpu_ready_);  // ordered after the work issued before it
    copy.direction = d2h;
    const auto index = static_cast<std::uint32_t>(rule_.size());
    RuleSwap& sent = rule_.emplace_back();
    sent.buffer = b;
    sent.out = link_->enqueue(copy);
    sent.out_before = u;
    rule_of_[b] = static_cast<std::int32_t>(index);
    leaving_bytes_ += size;
    pending_.push_back(kRule | index);
    // Learnt leads: due when its next access is within the lead (EvictionRule::needed_within).
    const std::uint64_t due = !learn_leads_         ? net_.issue_for(b, u, next)
                              : next > u + lead_[b] ? next - lead_[b]
                                                    : u + 1;
    due_.emplace_back(due, index);
    std::push_heap(due_.begin(), due_.end(), std::greater<>());
    return Offer::sent;
  });
  for (const std::uint32_t b : touched) touched_[b] = 0;
}

void BudgetHolder::issue_rule_in(std::uint32_t index, std::uint64_t u, double when, bool on_demand) {
  RuleSwap& r = rule_[index];
  r.in_at = u;
  r.back = true;
  if (r.state == kOut) {
    // Its copy out still under way: the executor keeps its device memory (still mapped and true)
    // and drops that copy, so nothing comes back over the link (SwapMover::move_in of one
    // leaving). Ahead, its arrival is marked on the swap-in stream, behind the copies queued there.
    leaving_bytes_ -= iteration_->buffers[r.buffer].size;
    r.state = kKept;
    r.arrival = on_demand ? -1 : link_->last(h2d);
    return;
  }
  Copy copy;
  copy.bytes = static_cast<double>(iteration_->buffers[r.buffer].moved_bytes());
  copy.ready_ns = when;
  copy.dep = r.out;
  copy.direction = h2d;
  r.in = link_->enqueue(copy);
  r.arrival = r.in;
  on_in(r.state, iteration_->buffers[r.buffer].size);
}

double BudgetHolder::before_op(std::uint64_t u, std::size_t i, std::uint64_t level, std::span<const std::uint32_t> ins,
                               double ready, double gpu_ready, bool host_ahead, double decide) {
  gpu_ready_ = gpu_ready;
  waited_ = false;
  advance_live(u, i, ready);
  decide = std::min(decide, ready);
  link_->advance_to(decide);
  collect();
  // Decided ahead of the GPU: the buffers freed since the host last waited for it (the
  // program's synchronisation, or a wait for room that reached them) still hold their device
  // bytes, those the rule has not sent out, until the GPU has run the op before this one.
  unreached_ = host_ahead ? unreached_ + freed_resident_ : 0;
  level_ = level;
  ins_ = ins;
  // The rule's swap-ins of buffers this op touches come back with it, whatever it takes.
  rule_ins_.clear();
  for (const std::uint32_t b : net_.accessed_by(i)) {
    const std::int32_t r = rule_of_[b];
    if (r >= 0 && !rule_[r].back) rule_ins_.push_back(static_cast<std::uint32_t>(r));
  }
  double issue = wait_for_room(decide);
  if (resident() > budget_) {
    evict(u, i, std::max(issue, ready), u, 0);
    issue = wait_for_room(issue);
  }
  issue = std::max(issue, ready);
  reaching_all_ = iteration_->ops[i].reaches_all;
  if (reaching_all_) keep_still(u, issue);
  for (const std::uint32_t index : rule_ins_) issue_rule_in(index, u, issue, true);
  rule_ins_.clear();
  // Those due ahead of their access come back, the soonest needed first, each if it fits now
  // with what the ops up to that access allocate; room is made for it from buffers needed after
  // it, without waiting for those copies (Belady both ways, as the executor's prefetch). The
  // first that does not fit waits for the next op, and so do those needed after it
  // (EvictionRule::bring_back).
  // Copies out not waited for start only where the next op reaching every buffer would not call
  // them off (EvictionRule::leaves_unwaited).
  const bool unwaited = EvictionRule::leaves_unwaited(reaching_all_in_[i], copy_ops_);
  due_now_.clear();
  while (!due_.empty() && due_.front().first <= u) {
    const std::uint32_t index = due_.front().second;
    std::pop_heap(due_.begin(), due_.end(), std::greater<>());
    due_.pop_back();
    RuleSwap& r = rule_[index];
    if (r.back || r.state == kGone || r.state == kCalledOff) continue;
    // One whose copy out is under way too: it is kept without a copy, but only where it would fit
    // coming back (the executor counts its bytes as though away, SwapMover::device_bytes_with).
    due_now_.push_back({next_[r.buffer], index, index});  // its key: unchanged while out
  }
  EvictionRule::bring_back(
      due_now_,
      [&](const DueIn& d) {
        const auto index = static_cast<std::uint32_t>(d.handle);
        const std::uint64_t next = d.next_use;
        const std::uint64_t needs =
            iteration_->buffers[rule_[index].buffer].size + (next == kNoAccess ? 0 : upcoming(i, next - u));
        if (resident() + needs > budget_ + leaving_bytes_ && !reaching_all_ && unwaited) {
          evict(u, i, issue, next, needs);
        }
        if (resident() + unreached_ + needs > budget_) return Arrival::no_room;
        rule_[index].kept_out = false;
        issue_rule_in(index, u, issue, false);
        return Arrival::back;
      },
      [&](const DueIn& d) {
        rule_[static_cast<std::uint32_t>(d.handle)].kept_out = true;
        deferred_.push_back(static_cast<std::uint32_t>(d.handle));
      });
  for (const std::uint32_t index : deferred_) {
    due_.emplace_back(u + 1, index);
    std::push_heap(due_.begin(), due_.end(), std::greater<>());
  }
  deferred_.clear();
  ins_ = {};
  if (leave_early_ != 0 && !reaching_all_ && unwaited) {
    const std::uint64_t ahead = upcoming(i, leave_early_);
    if (resident() + ahead > budget_ + leaving_bytes_) evict(u, i, issue, u + leave_early_, ahead);
  }
  return issue;
}

double BudgetHolder::consume(std::size_t i, double start) {
  // Its stream waits for every copy in motion when it was issued (the last each way ends last).
  for (std::int32_t& copy : still_) {
    if (copy >= 0) start = std::max(start, link_->finish(copy));
    copy = -1;
  }
  for (const std::uint32_t b : net_.accessed_by(i)) {
    const std::int32_t r = rule_of_[b];
    if (r < 0) continue;
    const double in_end = rule_[r].arrival < 0 ? start : link_->finish(rule_[r].arrival);
    // Late (the op waits for it): its lead grows, as the executor's does, unless it was held back
    // for want of room (EvictionRule::bring_back) and came on demand.
    if (learn_leads_ && in_end > start && !rule_[r].kept_out) lead_[b] = EvictionRule::grown_lead(lead_[b]);
    start = std::max(start, in_end);
    rule_of_[b] = -1;
  }
  return start;
}

void BudgetHolder::memory_events(std::vector<std::pair<double, std::int64_t>>& events) const {
  const std::vector<Copy>& copies = link_->copies();
  for (const RuleSwap& r : rule_) {
    if (r.state == kCalledOff || r.state == kKept) continue;  // its bytes never left
    const auto size = static_cast<std::int64_t>(iteration_->buffers[r.buffer].size);
    events.emplace_back(copies[r.out].end_ns, -size);
    if (r.in >= 0) events.emplace_back(copies[r.in].start_ns, size);
    // Freed while out: the static free takes its bytes off from then (not before its copy ended).
    if (r.state == kGone) events.emplace_back(std::max(copies[r.out].end_ns, r.freed_ns), size);
  }
}

std::pair<std::uint32_t, std::uint64_t> BudgetHolder::rule_outs(double t0, double t1) const {
  const std::vector<Copy>& copies = link_->copies();
  std::pair<std::uint32_t, std::uint64_t> out{0, 0};
  for (const RuleSwap& r : rule_) {
    if (copies[r.out].start_ns < t0 || copies[r.out].start_ns >= t1) continue;
    ++out.first;
    out.second += iteration_->buffers[r.buffer].size;
  }
  return out;
}

void BudgetHolder::evictions(std::uint64_t first, double t0, std::vector<RuleEviction>& out) const {
  const std::uint64_t n = iteration_->ops.size();
  const std::vector<Copy>& copies = link_->copies();
  for (const RuleSwap& r : rule_) {
    if (r.out_before < first || r.out_before >= first + n) continue;
    if (r.state == kGone) {
      out.push_back({r.buffer, r.out_before - first, r.freed_before - first, copies[r.out].end_ns - t0,
                     std::max(copies[r.out].end_ns, r.freed_ns) - t0, true});
    } else if (r.state == kKept) {
      const double at = copies[r.out].start_ns - t0;  // its copy out's link time spent, its bytes never away
      out.push_back({r.buffer, r.out_before - first, r.in_at - first, at, at, false, true});
    } else if (r.in >= 0) {
      out.push_back(
          {r.buffer, r.out_before - first, r.in_at - first, copies[r.out].end_ns - t0, copies[r.in].start_ns - t0});
    }
  }
}

}  // namespace memtool::swapper::detail
