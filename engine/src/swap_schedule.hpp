// The offline swapper's schedule in the process: planned off the calling thread from one
// observed iteration (swap_observation.hpp), then applied as triggers at work items.
//  - A swap's copy-out is issued at the first work item after `out_after_op` (the copy waits for
//    the buffer's last use through events, so it never runs early); its copy-in is issued at
//    item `in_at_op`, before the item, on the swap-in stream, and the consumer waits for it.
//  - Positions are unrolled (swapper/candidates.hpp): one past the iteration's length fires in
//    the next iteration, where a buffer made in this one is `previous`.
//  - Learning: a copy-in that arrived later than the plan's simulation had it arrive (behind its
//    consumer's turn by more than the lateness the plan accepted, PlannedLateness) is issued
//    earlier from the next iteration on (its lead doubles, never before its copy-out). A copy-in
//    late as planned waits its turn on a busy link: issued earlier, it only holds its bytes
//    longer, and the rule sends out other buffers for them.
//  - Drift: an allocation whose footprint differs from the plan's, or an iteration of another
//    length, drops the schedule (the policy falls back to its own rule and plans again).
//  - Predictions: the plan simulates each candidate, and the rule alone, as the executor runs
//    them (holding the budget, with the executor's host costs as given), for the selector to
//    choose by (swap/selector.hpp).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memtool/swapper/plan.hpp"
#include "swap/selector.hpp"
#include "swap_observation.hpp"

namespace memtool::engine::detail {

class SwapSchedule {
 public:
  struct Trigger {
    BufferName name;     // as named in the iteration the trigger fires in
    std::uint32_t swap;  // index into the schedule's swaps
  };

  SwapSchedule(swapper::Schedule schedule, std::vector<BufferName> names, std::uint32_t items,
               std::vector<std::uint64_t> signature, std::uint64_t predicted_peak);

  [[nodiscard]] std::uint32_t items() const { return items_; }
  [[nodiscard]] const std::string& strategy() const { return schedule_.strategy; }
  [[nodiscard]] const swapper::Schedule& schedule() const { return schedule_; }
  [[nodiscard]] std::size_t size() const { return schedule_.swaps.size(); }
  [[nodiscard]] std::uint64_t predicted_peak() const { return predicted_peak_; }
  // What it is, for the log: "ours schedule", "ours runner-up 2 (paper-aoa)".
  [[nodiscard]] const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }
  // The simulator's step as the executor runs it (step_ns 0: none).
  [[nodiscard]] const StepPrediction& prediction() const { return prediction_; }
  void set_prediction(StepPrediction prediction) { prediction_ = prediction; }
  // Copy-outs and copy-ins issued at work item `item` of an iteration (0 <= item < items()).
  [[nodiscard]] std::span<const Trigger> outs_at(std::uint32_t item) const;
  [[nodiscard]] std::span<const Trigger> ins_at(std::uint32_t item) const;
  // Items from a swap's copy-in to its consumer.
  [[nodiscard]] std::uint64_t lead(std::uint32_t swap) const;
  // Does the `ordinal`-th allocation of an iteration match the plan's?
  [[nodiscard]] bool expects(std::uint64_t ordinal, std::uint64_t footprint) const;
  // The lateness (ns) the plan's simulation as the executor runs it found for each swap's
  // copy-in: what learning leaves alone (empty: none planned late).
  void set_planned_lateness(std::vector<double> lateness_ns) { planned_late_ns_ = std::move(lateness_ns); }
  // A copy-in arrived `late_ns` after its consumer's turn: if that is beyond what the plan
  // accepted (kPlannedLateSlack), it is issued earlier from the next iteration on (rebuild());
  // nothing once learning has stopped.
  void late(std::uint32_t swap, double late_ns);
  // Where each swap's copy-in is issued now (unrolled positions), to be put back later.
  [[nodiscard]] std::vector<std::uint64_t> copy_ins() const;
  // The copy-ins back where `copy_ins()` found them (rebuild()), and no more learning.
  void restore_copy_ins(const std::vector<std::uint64_t>& at);
  // At an iteration boundary: the triggers with what was learned (nothing to do if nothing was).
  void rebuild();

 private:
  // How much later than planned a copy-in may arrive and still count as on plan: the simulator's
  // times are the learned ones, the process's vary around them.
  static constexpr double kPlannedLateSlack = 0.25;

  swapper::Schedule schedule_;
  std::vector<BufferName> names_;  // per swapper buffer, as named where it was born
  std::uint32_t items_ = 0;
  std::vector<std::uint64_t> signature_;
  std::uint64_t predicted_peak_ = 0;
  std::string label_;
  StepPrediction prediction_;
  std::vector<double> planned_late_ns_;              // per swap: its copy-in's lateness in the plan's simulation
  std::vector<std::uint32_t> out_begin_, in_begin_;  // CSR offsets per item
  std::vector<Trigger> outs_, ins_;
  bool dirty_ = true;
  bool learning_ = true;
};

struct PlanRequest {
  IterationLog::Input input;
  swapper::Link link;
  swapper::HostCosts host{};  // the executor's host costs as measured (none: not measured yet)
  // The executor's rule: work items ahead it makes room and starts swap-ins (SwapOptions::lookahead).
  std::uint32_t rule_lookahead_ops = swapper::SimulateOptions{}.rule_lookahead_ops;
  std::uint64_t budget_bytes = 0;
  std::string strategy;  // a swapper strategy name
  swapper::PlanOptions options;
  std::uint32_t items = 0;
  std::vector<std::uint64_t> signature;
  std::string problem_path;  // where the problem is written first (MEMTOOL_SWAP_DUMP); empty: not
  // Planned and predicted with the program's host times (the iteration's, when it has them);
  // false: as a program whose host is never ahead of the GPU. The problem written has them.
  bool host_times = false;
};

struct PlanReply {
  std::unique_ptr<SwapSchedule> schedule;                 // null: `message` says why
  std::vector<std::unique_ptr<SwapSchedule>> runners_up;  // ours': the selector's other candidates
  // The rule alone as the executor runs it (no schedule, the budget held); each schedule's own
  // is its prediction(). step_ns 0: not predicted (the candidates are then timed in turn).
  StepPrediction rule_alone;
  std::string message;  // what the plan predicts, or why there is none
};

// The simulator's step for `schedule` (empty: the rule alone) as the executor runs it: the
// budget held (SimulateOptions::hold_budget_bytes, as `memtool simulate --as-executor`), with
// the request's link and host costs. The copies out its rule makes a step come with it: the
// selector's calibration applies a time per copy out of the rule's without simulating again.
// `lateness_ns`, when given: each swap's copy-in lateness in that simulation.
[[nodiscard]] StepPrediction predict_step(const PlanRequest& request, const swapper::Schedule& schedule,
                                          std::vector<double>* lateness_ns = nullptr);

// Plans on its own thread; the future is ready when it is done.
[[nodiscard]] std::future<PlanReply> plan_async(PlanRequest request);

}  // namespace memtool::engine::detail
