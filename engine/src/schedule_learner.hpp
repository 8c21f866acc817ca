// How the swap policy (swap_adaptor.cpp) comes by its schedule: it logs iterations from their
// start (swap_observation.hpp) with a timing event after each work item (op_timer.hpp) and the
// copies it makes timed (link_meter.hpp); once two iterations in a row have the same
// allocations and length, their GPU times are awaited (each item's the shorter of the two's:
// op_timer.hpp), the swapper plans on its own thread (swap_schedule.hpp: plan_async) for the
// budget and link of that moment, and the schedule is handed over with the runners-up and the
// steps the simulator predicts for them. The adaptor applies it; this class only learns. Not
// thread-safe: the swap policy's lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "link_meter.hpp"
#include "op_timer.hpp"
#include "spare_events.hpp"
#include "swap/sync_probe.hpp"
#include "swap_observation.hpp"
#include "swap_schedule.hpp"

namespace memtool::engine::detail {

class ScheduleLearner {
 public:
  // `policy`: the swapper strategy; `link_bytes_per_second`: MEMTOOL_SWAP_LINK (0: measured);
  // `problem_path`: MEMTOOL_SWAP_DUMP (empty: none).
  ScheduleLearner(Device& device, SpareTimingEvents& events, std::string policy, std::uint64_t link_bytes_per_second,
                  std::string problem_path);
  ~ScheduleLearner();
  ScheduleLearner(const ScheduleLearner&) = delete;
  ScheduleLearner& operator=(const ScheduleLearner&) = delete;

  // The executor's rule looks this many work items ahead (the plan's predictions simulate it so).
  void set_rule_lookahead(std::uint64_t ops) {
    rule_lookahead_ops_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(ops, UINT32_MAX));
  }

  // MEMTOOL_SWAP_HOST_TIMES: plans with the program's host times (swapper Iteration::host_timed);
  // off, the problem written (MEMTOOL_SWAP_DUMP) still carries them.
  void set_plan_with_host_times(bool on) { host_times_ = on; }

  // --- one logged iteration ---
  // Whether this iteration is logged from its start (the adaptor reports into log()).
  [[nodiscard]] bool logging() const { return logging_; }
  // Starts logging at a boundary; the caller lists the live buffers into the returned log (alive).
  IterationLog& start();
  IterationLog& log() { return log_; }
  // The next work item is about to be issued on `stream` (logging only); `reaches_all`: it may
  // reach every buffer (WorkItem::reaches_all), which the problem records.
  void item(StreamId stream, bool reaches_all = false);
  // That item's stream waited for copies back: its GPU time starts here.
  void waited(StreamId stream) { timer_.waited(stream); }
  // The last item has been issued (the thread that issued it called in again).
  void issued() {
    if (logging_) timer_.close();
  }
  // The program waited `waited_ns` for the GPU in a synchronisation call (OpTimer::synced); until
  // the first plan takes the sync cost (advance()), the sync probe may take a round now
  // (WaitsProbe: the waits' own conditions), as memtool's time.
  void synced(std::uint64_t waited_ns) {
    if (!logging_) return;
    timer_.synced(waited_ns);
    if (sync_probed_) return;  // its rounds would change nothing: the cost is taken once
    const HostCostMeter::Scope probing = meter_.host_costs().other();
    waits_probe_.after_wait(device_);
  }
  LinkMeter& meter() { return meter_; }

  // --- learning ---
  // At a boundary while learning: the logged iteration (if any) ends. True when another must be
  // logged (the caller calls start()); false when this one matched the one before, or one did
  // already, and the plan is made from it (advance()).
  [[nodiscard]] bool end_iteration();
  // Logging stops (the schedule was dropped or replaced); with `forget`, what was learned too.
  void stop(bool forget);

  enum class Progress : std::uint8_t { learning, planning, ready, failed };
  // Moves the plan along: the GPU times awaited, then planned on its own thread for
  // `budget_bytes`. At `ready`, `out` holds the plan's reply: the schedule, ours' runners-up (if
  // any), and each one's step and the rule alone's as the executor runs them (predicted with the
  // plan's link and host costs); at `failed`, `why` says why.
  Progress advance(std::uint64_t budget_bytes, PlanReply& out, std::string& why);

  // The link the last plan was made with and where its figures came from (empty: no plan yet).
  [[nodiscard]] const swapper::Link& link() const { return link_; }
  [[nodiscard]] const std::string& link_source() const { return link_source_; }

  // Every event back to the spares (before they are destroyed).
  void release();

 private:
  swapper::Link planning_link();
  static void say_times(const ItemTimes& times);

  Device& device_;
  const std::string policy_;
  const std::string problem_path_;
  std::uint32_t rule_lookahead_ops_ = swapper::SimulateOptions{}.rule_lookahead_ops;
  bool host_times_ = false;
  const std::uint64_t link_bytes_per_second_;
  IterationLog log_;
  OpTimer timer_;
  LinkMeter meter_;
  bool logging_ = false;  // log_ holds this iteration from its start
  bool matched_ = false;  // two iterations agreed: planning from log_
  std::uint32_t learned_items_ = 0;
  std::vector<std::uint64_t> learned_signature_;
  std::future<PlanReply> planning_;
  swapper::Link link_;
  std::string link_source_;
  // The host's time back from a wait for the GPU (sync_probe.hpp): after the program's waits
  // while learning, else probed once, idle, before the first plan.
  std::optional<SyncCost> sync_cost_;
  bool sync_probed_ = false;
  WaitsProbe waits_probe_;
};

}  // namespace memtool::engine::detail
