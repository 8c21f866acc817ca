// `memtool report` of a job's ranks (several traces or summaries, or a %r pattern): one row per
// rank — the step found, steady peak, persistent bytes, largest buffers, pool and lower bound,
// what swap moved — the spread between ranks (highest and lowest peak, the allocations some
// ranks make and others do not), and the rank nearest its device's limit. Each rank's figures
// are those `memtool report` of its trace alone shows (build_report), so they can be checked
// one against the other.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detail/rank_files.hpp"

namespace memtool::cli {

struct RankReportOptions {
  std::vector<std::string> inputs;   // files, or one pattern with %r
  std::string summary_pattern;       // --summary: a %r pattern or "" (summaries may also be inputs)
  std::uint64_t capacity_bytes = 0;  // --capacity: each rank's device memory (0: unknown)
  std::size_t rows = 3;              // largest buffers per rank
  bool use_marks = true;
  double plan_seconds = 0.5;  // the planner's budget per rank (pool size beside the lower bound)
};

struct RankBuffer {
  std::uint64_t size = 0;
  std::string site;
};

struct RankRow {
  std::uint32_t rank = 0;
  std::string trace;    // "" when the rank has no trace
  std::string summary;  // "" when it has no summary
  // whole: a trace with its end record; cut: a trace that stops without one (the rank was
  // killed or crashed; its figures cover the run up to there); missing: no trace and no
  // summary; unreadable: `problem` says why.
  std::string status = "whole";
  std::string problem;
  // From the trace (build_report, as `memtool report FILE` shows them).
  std::uint64_t events = 0;
  std::uint64_t step_allocations = 0;  // 0: no step found
  std::uint64_t step_events = 0;
  std::uint64_t steady_peak_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t persistent_bytes = 0;
  std::vector<RankBuffer> largest_at_peak;
  std::optional<std::uint64_t> pool_bytes;         // a plan of the first steady step (or the summary's pool)
  std::optional<std::uint64_t> lower_bound_bytes;  // its lower bound
  // The first steady step's allocations by size (the signature the ranks are compared by).
  std::map<std::uint64_t, std::uint64_t> step_sizes;
  std::map<std::uint64_t, std::uint64_t> persistent_sizes;
  // From the summary (MEMTOOL_SUMMARY), when there is one.
  std::string strategy;
  std::optional<std::uint64_t> device_peak_bytes;  // what memtool and the program held together
  std::optional<std::uint64_t> swapped_out_bytes;
  std::optional<std::uint64_t> swapped_in_bytes;
  std::optional<std::uint64_t> world_size;  // the trace's metadata
  [[nodiscard]] bool has_figures() const { return status == "whole" || status == "cut"; }
  // The peak that meets the device's limit: the device peak of the summary, else the trace's.
  [[nodiscard]] std::uint64_t limit_peak() const { return device_peak_bytes.value_or(peak_bytes); }
};

// An allocation size some ranks make more often than others.
struct RankDifference {
  std::uint64_t size = 0;
  bool persistent = false;                        // false: per step
  std::map<std::uint32_t, std::uint64_t> counts;  // per rank compared
};

struct RankReport {
  std::string pattern;  // what was read, for people
  std::vector<RankRow> rows;
  std::vector<std::uint32_t> compared;  // ranks whose whole traces are compared (whole ones)
  std::optional<std::uint32_t> highest_peak_rank;
  std::optional<std::uint32_t> lowest_peak_rank;
  std::vector<RankDifference> differences;
  std::uint64_t capacity_bytes = 0;
  std::optional<std::uint32_t> nearest_limit_rank;
};

// True when `inputs` name a job: several files, or a pattern with %r.
[[nodiscard]] bool is_rank_report(const std::vector<std::string>& inputs, const std::string& summary_pattern);

// Throws std::invalid_argument when the inputs name no rank at all.
[[nodiscard]] RankReport build_rank_report(const RankReportOptions& options);

[[nodiscard]] std::string render_rank_report_text(const RankReport& report);
[[nodiscard]] std::string render_rank_report_json(const RankReport& report);

}  // namespace memtool::cli
