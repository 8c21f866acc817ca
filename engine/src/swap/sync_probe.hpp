// The host's time to come back from a wait for the GPU (swapper::HostCosts::per_sync_ns),
// measured in the process: on a private stream, two timing events, and the host waits for the
// second; a round counts where the second had not completed when the host came to wait. What
// the host waited beyond the GPU's time between the two (the wait from the end of
// issuing to its return, less the events' elapsed time) is what a synchronisation costs on top
// of the GPU's work: the GPU taking up work queued on an idle stream and the waiting thread
// waking up. No memory: a scratch buffer would be device memory outside the budget, and freeing
// it would wait for the whole device. The median of a few rounds, the first (a cold stream) left
// out. Device-independent: a stream, timing events and an event wait, each through Device. Not
// while a host wait may block (Device::host_wait_may_block): then none is measured.
// The cost depends on what else runs then (on fakecuda, its copy engines' and kernels' threads
// share the host's cores): WaitsProbe takes its rounds right after the program's own waits
// while an iteration is learned, the executor's copies under way as at the waits the simulator
// charges; probe_sync_cost once, idle, is the fallback for a program that never waits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memtool/engine/device.hpp"
#include "swap/host_costs.hpp"

namespace memtool::engine::detail {

inline constexpr std::uint32_t kSyncProbeRounds = 7;  // counted rounds (odd: the median is one of them)
inline constexpr std::uint32_t kSyncProbeTries = 4;   // rounds tried at most, per round counted

// One round: the host clock once the work was issued and once the wait returned, and the GPU's
// time between the two events.
struct SyncSample {
  std::uint64_t issued_ns = 0;
  std::uint64_t back_ns = 0;
  double gpu_ns = 0;
};

// What the probe read: the median over its rounds of back - issued - gpu (0 at least), and the
// least and the most of them.
struct SyncCost {
  double median_ns = 0;
  double low_ns = 0;
  double high_ns = 0;
};

// nullopt without samples.
[[nodiscard]] std::optional<SyncCost> sync_cost_ns(std::span<const SyncSample> samples);
// The same over costs already taken (back - issued - gpu per round).
[[nodiscard]] std::optional<SyncCost> median_cost(std::vector<double> costs);

// Runs the probe (warm-up round, then `rounds` counted); nullopt when the device cannot (no
// stream, no timing events, an event that will not time), no round waited, or a host wait may
// block now.
[[nodiscard]] std::optional<SyncCost> probe_sync_cost(Device& device,
                                                      HostCostMeter::Clock clock = &HostCostMeter::steady_ns,
                                                      std::uint32_t rounds = kSyncProbeRounds);

// One probe round (probe_sync_cost with one counted) after every kWaitsProbeStride-th of the
// program's waits, up to kWaitsProbeRounds rounds: spread over the learned iteration.
inline constexpr std::uint32_t kWaitsProbeStride = 16;
inline constexpr std::uint32_t kWaitsProbeRounds = 15;  // odd: the median is one of them

class WaitsProbe {
 public:
  explicit WaitsProbe(HostCostMeter::Clock clock = &HostCostMeter::steady_ns) : clock_(clock) {}
  // The program came back from a wait for the GPU: maybe a round now.
  void after_wait(Device& device) {
    if (costs_.size() >= kWaitsProbeRounds || waits_++ % kWaitsProbeStride != 0) return;
    if (const std::optional<SyncCost> round = probe_sync_cost(device, clock_, 1)) costs_.push_back(round->median_ns);
  }
  // nullopt before any round.
  [[nodiscard]] std::optional<SyncCost> cost() const { return median_cost(costs_); }
  [[nodiscard]] std::size_t rounds() const { return costs_.size(); }

 private:
  HostCostMeter::Clock clock_;
  std::uint64_t waits_ = 0;
  std::vector<double> costs_;
};

}  // namespace memtool::engine::detail
