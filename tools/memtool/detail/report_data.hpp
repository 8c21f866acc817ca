// The numbers `memtool report` shows, computed once from a loaded model and rendered as text
// (report_text.cpp) or JSON (report_json.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detail/load_model.hpp"
#include "memtool/trace/gpu_times.hpp"
#include "memtool/trace/lifetimes.hpp"

namespace memtool::cli {

struct ReportOptions {
  std::size_t rows = 10;                       // rows of the buffer tables and iteration table
  std::optional<std::size_t> first_iteration;  // iteration selection (indices into spans)
  std::optional<std::size_t> last_iteration;   // inclusive
};

struct BufferRow {
  trace::BufferId id;
  std::uint64_t size = 0;
  std::uint64_t alloc_event = 0;
  std::uint64_t free_event = trace::kNever;  // kNever: never freed
  std::optional<std::size_t> alloc_iteration;
  bool persistent = false;
  std::string site;     // allocation site (top stack frame), "" when unknown
  std::string kernels;  // kernels that touched it, "" when none recorded
};

// GPU times (traces recorded with the CUPTI tracer): the selected iterations, or the whole run.
struct GpuReport {
  bool present = false;              // the trace has GPU times
  std::uint64_t timed_launches = 0;  // whole run: launch events with a GPU time
  std::uint64_t unjoined = 0;        // whole run: GPU work that names no event
  std::uint64_t mismatched = 0;
  trace::GpuSummary window;                      // the selection
  std::vector<std::uint64_t> iteration_busy_ns;  // per iteration (all of them)
  std::vector<std::string> kernel_names;         // window.kernels' names
};

struct ReportData {
  std::string input;
  std::string input_kind;         // trace, snapshot_pickle, snapshot_json
  std::string input_description;  // for people

  std::uint64_t total_events = 0;
  std::uint64_t total_allocs = 0;
  std::uint64_t total_frees = 0;
  std::uint64_t total_launches = 0;
  trace::ModelStats anomalies;  // and the run's capture and graph figures
  // CUDA graph launches in a steady iteration (the last complete one); 0 without graphs.
  std::uint64_t period_graph_launches = 0;

  std::string iteration_source;  // none, marks, detector
  std::uint64_t period_events = 0;
  std::uint64_t period_allocs = 0;
  std::uint64_t steady_start = 0;
  std::size_t warmup_iterations = 0;
  std::size_t incomplete_iterations = 0;            // cut short by the end of the run (teardown)
  std::vector<std::string> iteration_notes;         // per iteration: "warm-up", "incomplete", ""
  std::vector<trace::IterationSummary> iterations;  // all of them
  std::size_t selected_first = 0;                   // selection, indices into `iterations`
  std::size_t selected_end = 0;                     // one past

  trace::LiveBytesPeak peak;  // whole run
  std::optional<std::size_t> peak_iteration;
  std::uint64_t steady_state_peak = 0;  // iterations after the first
  std::uint64_t live_at_end = 0;
  std::uint64_t persistent_bytes = 0;
  std::uint64_t persistent_buffers = 0;
  std::uint64_t leaked_bytes = 0;
  std::uint64_t leaked_buffers = 0;

  std::optional<std::uint64_t> reserved_peak;  // snapshots: the caching allocator's segments
  // A caching allocator seems to sit in front of memtool (caching_allocator_warning).
  std::optional<std::string> caching_allocator_warning;

  std::vector<BufferRow> largest_at_peak;
  std::vector<BufferRow> longest_lifetimes;
  std::vector<BufferRow> leaks;

  GpuReport gpu;

  std::vector<std::uint64_t> curve;          // live bytes after each event of the chart window
  std::uint64_t curve_first_event = 0;       // event index of curve[0]
  std::vector<std::uint64_t> curve_markers;  // iteration starts, relative to curve_first_event
};

// A warning when a memtool trace holds only large allocations in whole 2 MiB units (at least
// three, or one or two of 1 GiB or more): the segments a caching allocator (PyTorch's default) or
// the arena a BFC allocator (JAX, TensorFlow) takes from the driver, not the program's tensors.
// nullopt otherwise, and for snapshots.
[[nodiscard]] std::optional<std::string> caching_allocator_warning(const LoadedModel& loaded);

[[nodiscard]] ReportData build_report(const LoadedModel& loaded, const ReportOptions& options);

[[nodiscard]] std::string render_report_text(const ReportData& data);
[[nodiscard]] std::string render_report_json(const ReportData& data);

}  // namespace memtool::cli
