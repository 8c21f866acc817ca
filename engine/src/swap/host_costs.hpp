// The swap policy's own host costs, measured in the process for the simulator
// (swapper::HostCosts, the problem file's `host` record): the host time the policy spends in its
// hook per work item (its bookkeeping, not the driver's call it precedes) and per swap copy it
// issues (the mover's work for it: the copy and its event, the mappings explicit mode changes,
// also when they are settled later). Host waits for the GPU (HostWaits) are the GPU's time, which
// the simulator models itself, so they are taken out of both. Scopes nest: a copy issued inside
// an op's hook counts as a copy, not as the op's, and a copy scope inside another counts its copy
// once, its time in the outer one. Each iteration's figures are kept at its end (end_iteration),
// so the planner gets the learned iteration's, not the first swapped iteration's (host slots
// allocated). Its other scopes (the policy's work for allocations and frees) count toward no
// cost, only toward spent_ns: memtool's cumulative host time, which the op timer takes out of the
// program's own host time between two work items (op_timer.hpp). Not thread-safe: the swap
// policy's lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "memtool/swapper/simulate.hpp"

namespace memtool::engine::detail {

class HostCostMeter {
 public:
  using Clock = std::uint64_t (*)();  // ns, monotonic
  static std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }

  explicit HostCostMeter(Clock clock = &steady_ns) : clock_(clock) {}
  HostCostMeter(const HostCostMeter&) = delete;
  HostCostMeter& operator=(const HostCostMeter&) = delete;

  // The host's waits for the GPU so far, in ns (HostWaits::stall_ns): not counted as cost.
  void set_stalls(std::function<std::uint64_t()> stalls) { stalls_ = std::move(stalls); }

  enum class Kind : std::uint8_t { op, copy, other };
  // Around one scope of the policy's work: `op`, one work item's hook; `copy`, a swap copy's
  // (counted `copies` times, 0: work for copies already counted, as settling them); `other`, work
  // that is neither (an allocation's or a free's), counted in spent_ns only.
  class Scope {
   public:
    Scope(HostCostMeter& meter, Kind kind, std::uint32_t copies)
        : meter_(meter),
          kind_(kind),
          outer_(kind != Kind::copy || meter.copy_depth_++ == 0),
          outermost_(meter.depth_++ == 0) {
      meter_.copies_ += copies;
      if (!outer_) return;  // timed by the copy scope around it
      start_ = meter_.clock_();
      stalls_ = meter_.stalls_now();
      copy_ns_ = meter_.copy_ns_;
      if (outermost_) {
        meter_.open_start_ = start_;
        meter_.open_stalls_ = stalls_;
      }
    }
    ~Scope() {
      --meter_.depth_;
      if (kind_ == Kind::copy) --meter_.copy_depth_;
      if (!outer_) return;
      const std::uint64_t spent = meter_.clock_() - start_;
      const std::uint64_t stalled = meter_.stalls_now() - stalls_;
      const std::uint64_t own = spent > stalled ? spent - stalled : 0;
      if (outermost_) meter_.own_total_ns_ += own;
      if (kind_ == Kind::copy) {
        meter_.copy_ns_ += own;
        return;
      }
      if (kind_ == Kind::other) return;
      const std::uint64_t in_copies = meter_.copy_ns_ - copy_ns_;
      meter_.op_ns_ += own > in_copies ? own - in_copies : 0;
      ++meter_.ops_;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    HostCostMeter& meter_;
    Kind kind_;
    bool outer_;      // not a copy scope inside another
    bool outermost_;  // inside no scope: its time goes to spent_ns
    std::uint64_t start_ = 0;
    std::uint64_t stalls_ = 0;
    std::uint64_t copy_ns_ = 0;
  };

  [[nodiscard]] Scope op() { return Scope(*this, Kind::op, 0); }
  [[nodiscard]] Scope copy(bool counts = true) { return Scope(*this, Kind::copy, counts ? 1 : 0); }
  [[nodiscard]] Scope other() { return Scope(*this, Kind::other, 0); }
  // `work` in a copy scope (`counts`: it issues one copy; false: work for copies counted already).
  template <class Work>
  void copying(bool counts, Work&& work) {
    const Scope scope = copy(counts);
    work();
  }

  // An iteration ended: its figures become the measured ones (kept when it had no work item; the cost per copy kept when it issued none).
  void end_iteration() {
    if (ops_ != 0) {
      last_.per_op_ns = static_cast<double>(op_ns_) / static_cast<double>(ops_);
      if (copies_ != 0) last_.per_copy_ns = static_cast<double>(copy_ns_) / static_cast<double>(copies_);
    }
    op_ns_ = copy_ns_ = 0;
    ops_ = copies_ = 0;
  }

  // The last complete iteration's costs (none before one ended).
  [[nodiscard]] const swapper::HostCosts& costs() const { return last_; }

  // The host time memtool has spent so far, in ns on this meter's clock: its scopes' own time (a
  // scope still open up to now) and every wait for the GPU (in a scope or not). Monotonic.
  [[nodiscard]] std::uint64_t spent_ns() const {
    if (depth_ == 0) return own_total_ns_ + stalls_now();
    // Open: its time so far, its stalls included, and the stalls before it.
    const std::uint64_t now = clock_();
    return own_total_ns_ + (now > open_start_ ? now - open_start_ : 0) + open_stalls_;
  }

 private:
  std::uint64_t stalls_now() const { return stalls_ ? stalls_() : 0; }

  Clock clock_;
  std::function<std::uint64_t()> stalls_;
  std::uint32_t depth_ = 0;         // scopes open
  std::uint64_t own_total_ns_ = 0;  // outermost scopes' own time, ever
  std::uint64_t open_start_ = 0;    // the outermost scope open: its start and the stalls then
  std::uint64_t open_stalls_ = 0;
  std::uint32_t copy_depth_ = 0;
  std::uint64_t op_ns_ = 0;
  std::uint64_t ops_ = 0;
  std::uint64_t copy_ns_ = 0;  // copy scopes' own time this iteration, settling included
  std::uint64_t copies_ = 0;
  swapper::HostCosts last_;
};

}  // namespace memtool::engine::detail
