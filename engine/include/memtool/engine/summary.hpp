// What a strategy reports: the counters of the run (MEMTOOL_SUMMARY=FILE gets them as one JSON
// object) and the exit line. Every resource of a strategy's stack adds what it knows
// (Resource::summarize); the runtime adds the step the observer found.
#pragma once

#include <cstdint>
#include <string>

namespace memtool::engine {

struct Summary {
  std::string strategy = "record";
  std::string state;  // the strategy's state at the time (observe, plan, apply, ...)
  // The iteration the observer found (0 while none).
  std::uint64_t period_allocations = 0;  // allocations per planned iteration
  std::uint64_t period_events = 0;       // signature events (allocations, frees, launches, copies, memsets)
  std::uint64_t period_peak_bytes = 0;   // most bytes live inside one planned iteration
  std::uint64_t periods_rejected = 0;    // candidate periods a plan proved wrong (then grown)
  // Pool.
  std::uint64_t iterations_planned = 0;  // iterations served from a plan
  std::uint64_t pool_bytes = 0;          // size of the current pool (0 if none)
  std::uint64_t lower_bound_bytes = 0;   // LB of the last plan's problem
  std::uint64_t allocs_from_pool = 0;
  std::uint64_t allocs_passed_through = 0;  // real allocator (observing, persistent, misses)
  std::uint64_t misses = 0;                 // allocations in APPLY the plan could not serve
  std::uint64_t refusals = 0;               // misses because the planned range was live (invariant 1)
  std::uint64_t replans = 0;                // plans dropped because the program changed
  std::uint64_t plans_made = 0;
  std::uint64_t plan_failures = 0;        // planner threw or produced an invalid plan
  std::uint64_t pool_alloc_failures = 0;  // the pool's own allocation failed
  std::uint64_t pool_reclaims = 0;        // pool memory given back to let a failing allocation succeed
  std::uint64_t exports_refused = 0;      // cuIpcGetMemHandle of a pooled buffer (it would share the pool)
  std::uint64_t stream_waits = 0;         // cuStreamWaitEvent issued for cross-stream reuse
  std::uint64_t events_recorded = 0;
  // Device memory.
  std::uint64_t peak_device_bytes_with_pool = 0;     // what memtool and the program held together
  std::uint64_t peak_device_bytes_without_pool = 0;  // peak of live requested bytes (observed)
  std::uint64_t budget_bytes = 0;                    // MEMTOOL_BUDGET (0: none)
  std::uint64_t budget_refusals = 0;                 // allocations refused because of it
  std::uint64_t allocation_failures = 0;             // allocations that returned an error to the program
  // Swapping.
  std::uint64_t peak_device_bytes = 0;  // device bytes memtool and the program held together
  std::uint64_t bytes_swapped_out = 0;
  std::uint64_t bytes_swapped_in = 0;
  std::uint64_t swap_ins_ahead = 0;           // brought back before their use, on a side stream
  std::uint64_t swap_ins_on_demand = 0;       // touched while out: brought back in the consumer's stream
  std::uint64_t host_bytes = 0;               // peak pinned host bytes held for swapped-out buffers
  std::string swap_mode;                      // "explicit" or "uvm" (empty: no swapping)
  std::uint64_t swap_ins_late = 0;            // brought back ahead, but the copy had not arrived at the use
  std::uint64_t swap_ins_failed = 0;          // no device memory to bring it back: used from the host
  std::uint64_t allocations_on_host = 0;      // no device memory for a new buffer: it started on the host
  std::uint64_t stall_ns = 0;                 // host time memtool waited for copies to free device memory
  std::string swap_policy;                    // "belady" or the swapper strategy whose schedule applies
  std::uint64_t swap_schedules = 0;           // schedules planned and applied
  std::uint64_t swap_schedule_drops = 0;      // dropped when the program deviated from their iteration
  std::uint64_t swap_schedules_rejected = 0;  // slower than the rule alone in their first iterations
  std::uint64_t swap_outs_scheduled = 0;      // copies out issued by the schedule (the rest: the rule)
  std::uint64_t swap_ins_scheduled = 0;       // copies in issued by the schedule
  // The host link the last schedule was planned with, per direction (0: none planned), and
  // where its figures came from: "measured" (copies timed while learning), "MEMTOOL_SWAP_LINK",
  // or "default" (too few copies to time).
  std::uint64_t swap_link_to_host_bytes_per_s = 0;
  std::uint64_t swap_link_to_device_bytes_per_s = 0;
  std::string swap_link_source;
  // What swaps when the summary is written: the schedule that applies ("ours schedule", "ours
  // runner-up 2 (paper-aoa)", "paper-doa schedule"), "rule" (the policy's rule alone), or empty
  // (no budget); and how many of ours' candidates were timed against each other.
  std::string swap_schedule;
  std::uint64_t swap_candidates_timed = 0;
  // Iterations timed from each plan to the selector's choice (the rule's baseline, the model's
  // checks, trials in turn).
  std::uint64_t swap_iterations_selecting = 0;
  // Stream capture and CUDA graphs (issue 32), as the recorder saw them.
  std::uint64_t period_graph_launches = 0;     // graph launches in the iteration found
  std::uint64_t captures = 0;                  // stream captures begun
  std::uint64_t captured_work = 0;             // launches, copies, memsets and graph launches captured, not run
  std::uint64_t graph_launches = 0;            // cuGraphLaunch outside captures (each one work item)
  std::uint64_t opaque_graph_launches = 0;     // of those, of graphs memtool could not read
  std::uint64_t graph_memory_allocations = 0;  // allocations on capturing streams (graph memory)
  std::uint64_t graph_memory_bytes = 0;        // graph memory the driver held at the end (its graph pool)
  std::uint64_t capture_detours = 0;           // memtool's calls kept off a capturing stream
  // What work reached besides its arguments (explicit mode, docs/swapping.md): copies out called
  // off because work that may reach the buffer came, buffers whose address escaped (never moved
  // again), work items that may reach any buffer.
  std::uint64_t swap_leaves_called_off = 0;
  std::uint64_t swap_pinned = 0;
  std::uint64_t swap_items_reaching_all = 0;
  // While a stream waited for a value (docs/swapping.md): host waits memtool did not make, and
  // buffers kept off the device (started on the host, or read there) to hold the budget.
  std::uint64_t swap_host_waits_refused = 0;
  std::uint64_t swap_held_for_value_waits = 0;
  // MEMTOOL_SWAP_VERIFY: checksums taken, buffers found changed behind memtool's back, and the
  // first of those said in words (the buffer and the last launch that could have changed it).
  std::uint64_t swap_verify_checks = 0;
  std::uint64_t swap_verify_mismatches = 0;
  std::string swap_verify_first_mismatch;
  // Pool: why the state is one that does not serve (empty while a plan applies), and how the
  // planned steps were served: the allocations asked for in them, and the least share of one
  // step's allocations served from the plan (0 before a planned step completed).
  std::string state_reason;
  std::uint64_t allocs_in_planned_steps = 0;
  double worst_step_served = 0;
};

// One JSON object (no trailing newline).
[[nodiscard]] std::string to_json(const Summary& summary);
// Writes to_json to `path`; false (errno set) if the file could not be written.
bool write_summary_file(const Summary& summary, const std::string& path);
// The exit line: the step found in words, the peak with and without memtool, counters.
[[nodiscard]] std::string summary_line(const Summary& summary);

}  // namespace memtool::engine
