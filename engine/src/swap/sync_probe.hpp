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
#pragma once

#include <cstdint>
#include <optional>
#include <span>

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

// Runs the probe (warm-up round, then `rounds` counted); nullopt when the device cannot (no
// stream, no timing events, an event that will not time), no round waited, or a host wait may
// block now.
[[nodiscard]] std::optional<SyncCost> probe_sync_cost(Device& device,
                                                      HostCostMeter::Clock clock = &HostCostMeter::steady_ns,
                                                      std::uint32_t rounds = kSyncProbeRounds);

}  // namespace memtool::engine::detail
