/* fakecuda's control API: what a test asks the emulated driver directly.
 *
 * Counters describe what the program did to the emulated device since the library was loaded (or
 * since the last fakecuda_stats_reset). bytes_in_use is device memory as cuMemGetInfo sees it,
 * summed over the devices: cuMemAlloc/async allocations (rounded to the 512-byte allocation
 * granule), what the stream-ordered pools keep reserved, VMM physical allocations, and managed
 * memory currently resident on a device. FAKECUDA_STATS=FILE writes the same figures as one JSON
 * object when the process exits, with each device's in a "devices" array.
 */
#ifndef FAKECUDA_CONTROL_H
#define FAKECUDA_CONTROL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fakecuda_stats {
  unsigned long long capacity_bytes;
  unsigned long long bytes_in_use;
  unsigned long long peak_bytes_in_use;
  unsigned long long allocations;       /* cuMemAlloc, pitch, async, pool and managed */
  unsigned long long frees;             /* cuMemFree and cuMemFreeAsync (when issued) */
  unsigned long long async_allocations; /* cuMemAllocAsync / cuMemAllocFromPoolAsync */
  unsigned long long async_frees;       /* cuMemFreeAsync */
  unsigned long long managed_allocations;
  unsigned long long managed_bytes;        /* managed memory allocated */
  unsigned long long managed_device_bytes; /* of which resident on the device */
  unsigned long long oom_errors;           /* CUDA_ERROR_OUT_OF_MEMORY returned */
  unsigned long long host_allocations;     /* cuMemAllocHost / cuMemHostAlloc */
  unsigned long long vmm_creates;
  unsigned long long vmm_releases;
  unsigned long long vmm_maps;
  unsigned long long vmm_unmaps;
  unsigned long long vmm_physical_bytes;
  unsigned long long bytes_h2d;
  unsigned long long bytes_d2h;
  unsigned long long bytes_d2d;
  unsigned long long bytes_h2h;
  unsigned long long copies;
  unsigned long long memsets;
  unsigned long long launches;
  unsigned long long host_functions; /* cuLaunchHostFunc / cuStreamAddCallback */
  unsigned long long prefetches;
  unsigned long long bytes_migrated_to_device;
  unsigned long long bytes_migrated_to_host;
  unsigned long long stream_creates;
  unsigned long long event_records;
  unsigned long long synchronizations; /* stream, event and context synchronise calls */
  /* The link model (fakecuda_link_config): zero while the link is unlimited with no latency. */
  unsigned long long link_bytes_h2d;                /* copies and managed migrations to the device */
  unsigned long long link_bytes_d2h;                /* copies and managed migrations (evictions too) to the host */
  unsigned long long link_busy_ns_h2d;              /* wall time the H2D engine was held */
  unsigned long long link_busy_ns_d2h;              /* wall time the D2H engine was held */
  unsigned long long link_queued_ns;                /* time transfers waited for their engine, busy with another */
  unsigned long long link_transfers;                /* transfers through an engine */
  unsigned long long link_pageable_transfers;       /* of which from or to pageable host memory */
  unsigned long long link_transfers_beside_kernels; /* of which a kernel ran during */
  /* Stream capture and graphs. */
  unsigned long long graph_captures;             /* capture sequences begun */
  unsigned long long graph_captures_invalidated; /* of which invalidated by an error */
  unsigned long long graph_captured_nodes;       /* nodes stream capture recorded */
  unsigned long long graph_instantiations;       /* executable graphs created */
  unsigned long long graph_launches;             /* cuGraphLaunch calls that were issued */
  unsigned long long graph_uploads;
  unsigned long long graph_mem_allocs;         /* alloc nodes that ran */
  unsigned long long graph_mem_frees;          /* graph allocations freed (in or outside a graph) */
  unsigned long long graph_mem_used_bytes;     /* gauge: graph allocations usable now */
  unsigned long long graph_mem_reserved_bytes; /* gauge: physical memory the graph pool holds (in bytes_in_use) */
} fakecuda_stats;

/* Copies the counters into *out (at most size bytes, so older callers keep working). Returns the
 * number of bytes written. */
size_t fakecuda_stats_snapshot(fakecuda_stats* out, size_t size);

/* Zeroes the event counters; bytes_in_use stays and peak_bytes_in_use restarts from it. */
void fakecuda_stats_reset(void);

/* Writes the stats JSON (what FAKECUDA_STATS writes at exit) to path. Returns 0 on success. */
int fakecuda_stats_write_json(const char* path);

/* How many times kernel `name` was launched (0 when unknown). */
unsigned long long fakecuda_kernel_launches(const char* name);

/* One device's memory (FAKECUDA_DEVICES): capacity, what cuMemGetInfo counts as used on it (pool
 * reserves included), its peak, and what its pools hold. The totals of fakecuda_stats are the
 * sums over devices. FAKECUDA_STATS writes these as the "devices" array. */
typedef struct fakecuda_device_stats {
  unsigned long long capacity_bytes;
  unsigned long long bytes_in_use;
  unsigned long long peak_bytes_in_use;
  unsigned long long pool_reserved_bytes; /* all its pools: reserved (used + kept for reuse) */
  unsigned long long pool_used_bytes;     /* all its pools: in live allocations */
} fakecuda_device_stats;

/* Copies device `ordinal`'s figures into *out (at most size bytes). Returns the bytes written, 0
 * for an ordinal that is not a device (or before cuInit). */
size_t fakecuda_device_stats_snapshot(int ordinal, fakecuda_device_stats* out, size_t size);

/* The host-device link: one copy engine per direction (H2D, D2H), FIFO across streams. A copy
 * between host and device memory holds its direction's engine for latency + bytes / bandwidth of
 * wall time; kernels and the other direction run meanwhile. Device-to-device and host-to-host
 * copies do not use the link. Set at cuInit from FAKECUDA_LINK_GBPS, FAKECUDA_LINK_LATENCY_US,
 * FAKECUDA_LINK_DUPLEX_FACTOR and FAKECUDA_LINK_PAGEABLE_FACTOR, or here at any time (transfers
 * already on an engine keep the model they started with). */
typedef struct fakecuda_link_config {
  double gbps;            /* per direction, in 10^9 bytes per second; 0: unlimited (the default) */
  double latency_us;      /* fixed cost of each transfer, in microseconds, 0 to 10^6 (default 0) */
  double duplex_factor;   /* bandwidth multiplier while both directions are busy, (0, 1] (default 1) */
  double pageable_factor; /* bandwidth multiplier with pageable host memory, (0, 1] (default 0.5) */
} fakecuda_link_config;

/* Replaces the link model. Returns 0, or -1 (and changes nothing) when a value is out of range. */
int fakecuda_link_configure(const fakecuda_link_config* config);

/* The link model in effect. */
void fakecuda_link_get(fakecuda_link_config* out);

/* Work observer: how a profiler stand-in (tests/fakecupti, a CPU libcupti.so) learns what CUPTI
 * learns from the real driver — when each kernel, copy and memset was issued and when it really
 * started and ended on its stream's worker thread. Optional: with no observer installed the
 * driver pays one atomic load per launch, copy or memset. */
typedef enum fakecuda_work_kind {
  FAKECUDA_WORK_KERNEL = 1,
  FAKECUDA_WORK_COPY = 2,
  FAKECUDA_WORK_MEMSET = 3
} fakecuda_work_kind;

typedef struct fakecuda_work {
  fakecuda_work_kind kind;
  int copy_kind;                 /* copies: 1 host to device, 2 device to host, 3 device to device, 4 host to host */
  unsigned long long bytes;      /* copies and memsets */
  unsigned long long stream_id;  /* the stream's number (1: the legacy default stream) */
  unsigned long long context_id; /* the context's number */
  const char* kernel_name;       /* kernels: the kernel's name (valid while its module is loaded) */
} fakecuda_work;

typedef struct fakecuda_work_observer {
  /* On the issuing thread, inside the driver call, just before the work is queued. The value it
   * returns is handed back to `ran`. */
  unsigned long long (*issued)(const fakecuda_work* work, void* user);
  /* On the stream's worker thread once the work ran: CLOCK_MONOTONIC nanoseconds. */
  void (*ran)(unsigned long long tag, unsigned long long start_ns, unsigned long long end_ns, void* user);
  void* user;
} fakecuda_work_observer;

/* Installs a copy of *observer for work issued from now on (NULL: none). Work already issued
 * reports to the observer it was issued with; an observer is never freed. */
void fakecuda_set_work_observer(const fakecuda_work_observer* observer);

#ifdef __cplusplus
}
#endif

#endif /* FAKECUDA_CONTROL_H */
