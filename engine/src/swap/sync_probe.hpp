// The host's time to come back from a wait for the GPU (swapper::HostCosts::per_sync_ns),
// measured in the process: on a private stream, a timing event, a one-byte copy on the device, a
// timing event, and the host waits for the last. What the host waited beyond the GPU's time
// between the two events (the wait from the end of issuing to the wait's return, less the
// events' elapsed time) is what a synchronisation costs on top of the GPU's work: the GPU
// starting work queued on an idle stream and the waiting thread waking up. The median of a few
// rounds, the first (a cold stream) left out. Device-independent: a stream, timing events, a
// stream-ordered allocation and copy, and an event wait, each through Device. Not while a host
// wait may block (Device::host_wait_may_block): then none is measured.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "memtool/engine/device.hpp"
#include "swap/host_costs.hpp"

namespace memtool::engine::detail {

inline constexpr std::uint32_t kSyncProbeRounds = 7;  // counted rounds (odd: the median is one of them)

// One round: the host clock once the work was issued and once the wait returned, and the GPU's
// time between the two events.
struct SyncSample {
  std::uint64_t issued_ns = 0;
  std::uint64_t back_ns = 0;
  double gpu_ns = 0;
};

// The median over the samples of back - issued - gpu (0 at least); nullopt without samples.
[[nodiscard]] std::optional<double> sync_cost_ns(std::span<const SyncSample> samples);

// Runs the probe (warm-up round, then `rounds`); nullopt when the device cannot (no stream, no
// timing events, an event that will not time) or a host wait may block now.
[[nodiscard]] std::optional<double> probe_sync_cost(Device& device,
                                                    HostCostMeter::Clock clock = &HostCostMeter::steady_ns,
                                                    std::uint32_t rounds = kSyncProbeRounds);

}  // namespace memtool::engine::detail
