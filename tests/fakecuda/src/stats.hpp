// What happened to the emulated device, counted so tests can assert on it (see fakecuda/control.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

// Event counters: zeroed by fakecuda_stats_reset.
#define FAKECUDA_EVENT_COUNTERS(X) \
  X(allocations)                   \
  X(frees)                         \
  X(async_allocations)             \
  X(async_frees)                   \
  X(managed_allocations)           \
  X(oom_errors)                    \
  X(host_allocations)              \
  X(vmm_creates)                   \
  X(vmm_releases)                  \
  X(vmm_maps)                      \
  X(vmm_unmaps)                    \
  X(bytes_h2d)                     \
  X(bytes_d2h)                     \
  X(bytes_d2d)                     \
  X(bytes_h2h)                     \
  X(copies)                        \
  X(memsets)                       \
  X(launches)                      \
  X(host_functions)                \
  X(prefetches)                    \
  X(bytes_migrated_to_device)      \
  X(bytes_migrated_to_host)        \
  X(stream_creates)                \
  X(event_records)                 \
  X(synchronizations)              \
  X(link_bytes_h2d)                \
  X(link_bytes_d2h)                \
  X(link_busy_ns_h2d)              \
  X(link_busy_ns_d2h)              \
  X(link_queued_ns)                \
  X(link_transfers)                \
  X(link_pageable_transfers)       \
  X(link_transfers_beside_kernels) \
  X(graph_captures)                \
  X(graph_captures_invalidated)    \
  X(graph_captured_nodes)          \
  X(graph_instantiations)          \
  X(graph_launches)                \
  X(graph_uploads)                 \
  X(graph_mem_allocs)              \
  X(graph_mem_frees)

// Gauges: the state of the device; kept by the memory manager under its lock.
#define FAKECUDA_GAUGES(X) \
  X(bytes_in_use)          \
  X(peak_bytes_in_use)     \
  X(managed_bytes)         \
  X(managed_device_bytes)  \
  X(vmm_physical_bytes)    \
  X(graph_mem_used_bytes)  \
  X(graph_mem_reserved_bytes)

namespace fakecuda {

struct Stats {
#define FAKECUDA_DECLARE(name) std::atomic<std::uint64_t> name{0};
  FAKECUDA_EVENT_COUNTERS(FAKECUDA_DECLARE)
  FAKECUDA_GAUGES(FAKECUDA_DECLARE)
#undef FAKECUDA_DECLARE
};

Stats& stats() noexcept;

inline void count(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
  counter.fetch_add(n, std::memory_order_relaxed);
}

// The launch counter of kernel `name`, stable for the life of the process.
std::atomic<std::uint64_t>* kernel_launch_counter(const std::string& name);

}  // namespace fakecuda
