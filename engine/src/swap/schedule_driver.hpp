// Following the selector's schedule (swap/selector.hpp) for the swap policy: learning
// (schedule_learner.hpp) until a plan is made, then which of its candidates applies, or the rule
// alone, as the selector says at each iteration boundary, until drift drops the schedule
// (learning again). It installs and clears the candidate that applies, keeps what each ran with
// in its fastest iteration (its copy-ins and the rule's leads: TimedState) and puts that back
// when the selector says so, carries out the applied schedule's copies at each work item
// (schedule_applier.hpp, room made by room.hpp), and judges lateness on the GPU's clock: a
// scheduled copy-in that was late starts earlier, a rule's copy back ahead that was late grows
// its buffer's lead (rule_swap_ins.hpp). Not thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memtool/engine/resources.hpp"
#include "swap/lateness.hpp"
#include "swap/move_context.hpp"
#include "swap/oracle.hpp"
#include "swap/room.hpp"
#include "swap/rule_swap_ins.hpp"
#include "swap/schedule_applier.hpp"
#include "swap/selector.hpp"
#include "swap_schedule.hpp"

namespace memtool::engine::detail {

class ScheduleDriver {
 public:
  // `trial`: ours' candidates earn their place by timing; a baseline's schedule applies as
  // published.
  ScheduleDriver(const SwapOptions& options, bool trial, MoveContext& moves, ScheduleSelector& selector,
                 std::map<DevicePtr, SwapBuffer>& buffers, const IterationOracle& oracle, RuleSwapIns& rule_ins,
                 Room& room, ScheduleApplier& applier)
      : options_(options),
        trial_(trial),
        moves_(moves),
        selector_(selector),
        buffers_(buffers),
        oracle_(oracle),
        rule_ins_(rule_ins),
        room_(room),
        applier_(applier),
        lateness_(moves.device, moves.timing_events),
        rule_lateness_(moves.device, moves.timing_events) {}
  ScheduleDriver(const ScheduleDriver&) = delete;
  ScheduleDriver& operator=(const ScheduleDriver&) = delete;

  // The candidate applied now, or null (the rule alone).
  [[nodiscard]] const SwapSchedule* schedule() const { return schedule_; }

  // An iteration ended (`iteration_ns`: its host time, 0: none): the selector's step carried out.
  void at_boundary(double iteration_ns);
  // While learning: the plan, once two iterations agreed and their GPU times are known.
  void advance_planning();
  // The schedule goes (drift: `why`), and learning starts again.
  void drop(const std::string& why);

  // The copies out due once the item before `item` was issued: at the first call after it (an
  // allocation between two items must find the room the plan made for it), once
  // (swap/schedule_applier.hpp).
  void apply_outs(std::uint64_t item) {
    if (schedule_) applier_.outs(*schedule_, item);
  }
  // The schedule's copies issued at work item `item`: out first, then in.
  void apply(std::uint64_t item, StreamId stream);

  // A scheduled copy-in's consumer (without timing events, the schedule keeps its triggers).
  void judge_later(SwapBuffer& b, StreamId stream) {
    (void)lateness_.time(b.scheduled_in - 1, b.timed_arrival, stream);
  }
  // The rule's copy back ahead, not known to have arrived when its consumer is issued: read off
  // the GPU at the next boundary, or, without an event, taken as late (the host's view).
  void judge_rule_later(std::uint64_t key, SwapBuffer& b, StreamId stream) {
    if (rule_lateness_.time(key, b.timed_arrival, stream)) return;
    ++moves_.counters.swap_ins_late;
    rule_ins_.grow_lead(key);
  }
  void forget_lateness() {
    lateness_.forget();
    rule_lateness_.forget();
  }

 private:
  // A schedule's copy-ins and the rule's leads as an iteration ran with them.
  struct TimedState {
    std::vector<std::uint64_t> copy_ins;
    RuleSwapIns::Leads leads;
  };

  void boundary(double iteration_ns);
  void start_log();
  bool follow(const ScheduleSelector::Step& step);
  void say_model_choice(const ScheduleSelector::Step& step);
  void say_recheck(const ScheduleSelector::Step& step);
  // What a watch's figure was judged past, in percent: the noise, or the margin where larger.
  [[nodiscard]] double noise_percent(const ScheduleSelector::Step& step) const {
    return std::max(step.noise, selector_.options().margin) * 100;
  }
  void rule_from_now_on();
  // What the iteration just timed ran with (this boundary's learning is still to come).
  [[nodiscard]] TimedState timed_state() const { return TimedState{schedule_->copy_ins(), leads_at_start_}; }
  // The schedule's copy-ins and the rule's leads go back to `state`; the selector's state
  // (restored) says they learn no more.
  void restore(const TimedState& state) {
    schedule_->restore_copy_ins(state.copy_ins);
    rule_ins_.leads() = state.leads;
  }
  void install(std::size_t id, bool counts);
  void clear();
  void judge_lateness();
  void judge_rule_lateness();

  const SwapOptions& options_;
  const bool trial_;
  MoveContext& moves_;
  ScheduleSelector& selector_;
  std::map<DevicePtr, SwapBuffer>& buffers_;
  const IterationOracle& oracle_;
  RuleSwapIns& rule_ins_;
  Room& room_;
  ScheduleApplier& applier_;
  RuleSwapIns::Leads rule_leads_;          // the leads when the last plan applied
  RuleSwapIns::Leads rule_fastest_leads_;  // in the rule alone's fastest iteration
  RuleSwapIns::Leads leads_at_start_;      // when this iteration began
  bool plan_applied_ = false;              // a candidate of the last plan has applied (the counters' schedules)
  CopyLateness lateness_;                  // scheduled copy-ins, judged once the GPU got there
  CopyLateness rule_lateness_;             // the rule's copies back ahead, likewise
  // The plan's candidates with swaps, by the selector's id (ours' own first, then its runners-up).
  std::vector<std::unique_ptr<SwapSchedule>> candidates_;
  // Each candidate's copy-ins and the rule's leads in its fastest iteration (its trial's, then its watch's).
  std::vector<TimedState> candidate_states_;
  SwapSchedule* schedule_ = nullptr;  // the candidate applied now (owned by candidates_)
};

}  // namespace memtool::engine::detail
