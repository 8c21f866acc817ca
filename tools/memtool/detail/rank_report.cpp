// build_rank_report (rank_report.hpp): each rank's trace read as `memtool report` reads it,
// its summary beside it, and the ranks set side by side.
#include "detail/rank_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "detail/load_model.hpp"
#include "detail/report_data.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/planner/placement.hpp"
#include "memtool/trace/lifetimes.hpp"

namespace memtool::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kLargestSummary = std::uintmax_t{1} << 20;  // a MEMTOOL_SUMMARY is a few hundred bytes
constexpr std::size_t kDifferencesShown = 12;
constexpr std::uint64_t kPlanAlignment = 512;  // as `memtool export` plans

// A MEMTOOL_SUMMARY file (a small JSON object with the engine's counters), or nullopt.
std::optional<nlohmann::json> read_summary(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error || size > kLargestSummary) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("strategy") || !j.contains("events_recorded"))
    return std::nullopt;
  return j;
}

std::optional<std::uint64_t> number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

// "…rank3…" in a file name: the rank a file was written by, when nothing else says.
std::optional<std::uint32_t> rank_in_name(const std::string& path) {
  static const std::regex pattern("rank([0-9]+)");
  const std::string name = fs::path(path).filename().string();
  std::smatch match;
  if (!std::regex_search(name, match, pattern)) return std::nullopt;
  return static_cast<std::uint32_t>(std::stoul(match[1].str()));
}

RankRow& row_of(std::map<std::uint32_t, RankRow>& rows, std::uint32_t rank) {
  RankRow& row = rows[rank];
  row.rank = rank;
  return row;
}

void read_trace(RankRow& row, const LoadedModel& loaded, const RankReportOptions& options) {
  const auto& model = loaded.model;
  const auto& iterations = loaded.iterations;
  ReportOptions report_options;
  report_options.rows = options.rows;
  const ReportData data = build_report(loaded, report_options);
  row.status = loaded.summary.trace && !loaded.summary.trace->clean_end ? "cut" : "whole";
  row.events = data.total_events;
  row.step_allocations = data.period_allocs;
  row.step_events = data.period_events;
  row.steady_peak_bytes = data.steady_state_peak;
  row.peak_bytes = data.peak.bytes;
  row.persistent_bytes = data.persistent_bytes;
  for (const BufferRow& b : data.largest_at_peak) row.largest_at_peak.push_back({b.size, b.site});
  for (const auto& [key, value] : model.metadata()) {
    if (key == "world_size") row.world_size = std::stoull(value);
  }
  for (trace::BufferId id : trace::persistent_buffers(model, iterations)) ++row.persistent_sizes[model.buffer(id).size];
  // The first steady, complete step: its allocations by size, and its plan.
  const auto steady = std::find_if(iterations.spans.begin(), iterations.spans.end(),
                                   [](const trace::IterationSpan& s) { return !s.warm_up && s.complete; });
  if (steady == iterations.spans.end()) return;
  for (const trace::BufferRecord& b : model.buffers()) {
    if (b.alloc_event >= steady->first_event && b.alloc_event < steady->end_event) ++row.step_sizes[b.size];
  }
  trace::ProblemOptions problem_options;
  problem_options.time = trace::TimeAxis::events;
  const auto index = static_cast<std::size_t>(steady - iterations.spans.begin());
  const trace::Problem problem = trace::to_problem(model, iterations, index, kPlanAlignment, problem_options);
  if (problem.buffers.empty()) return;
  const planner::Algorithm* algorithm = planner::find_algorithm(planner::default_algorithm());
  planner::PlanOptions plan_options;
  plan_options.time_limit_seconds = options.plan_seconds;
  row.pool_bytes = algorithm->plan(problem, plan_options).pool_size;
  row.lower_bound_bytes = planner::lower_bound(problem);
}

void read_summary_into(RankRow& row, const nlohmann::json& summary) {
  row.strategy = summary.value("strategy", "");
  if (row.strategy == "swap") {
    row.device_peak_bytes = number(summary, "peak_device_bytes");
    row.swapped_out_bytes = number(summary, "bytes_swapped_out");
    row.swapped_in_bytes = number(summary, "bytes_swapped_in");
  } else if (row.strategy == "pool") {
    row.device_peak_bytes = number(summary, "peak_device_bytes_with_pool");
    if (number(summary, "pool_bytes").value_or(0) != 0) {  // the pool the run used, not a plan of ours
      row.pool_bytes = number(summary, "pool_bytes");
      row.lower_bound_bytes = number(summary, "lower_bound_bytes");
    }
  } else {
    row.device_peak_bytes = number(summary, "peak_device_bytes_without_pool");
  }
  if (row.trace.empty()) {  // only the summary: its figures stand for the trace's
    row.status = "whole";
    row.step_allocations = number(summary, "period_allocations").value_or(0);
    row.step_events = number(summary, "period_events").value_or(0);
    row.steady_peak_bytes = number(summary, "period_peak_bytes").value_or(0);
    row.peak_bytes = number(summary, "peak_device_bytes_without_pool").value_or(0);
    row.events = number(summary, "events_recorded").value_or(0);
  }
}

// The files of the job: (rank, path) of every input, pattern or file.
std::vector<RankFile> input_files(const std::vector<std::string>& inputs) {
  std::vector<RankFile> files;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (has_rank_placeholder(inputs[i])) {
      const auto found = find_rank_files(inputs[i]);
      if (found.empty()) throw std::invalid_argument(fmt::format("{}: no file matches the pattern", inputs[i]));
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back({rank_in_name(inputs[i]).value_or(static_cast<std::uint32_t>(i)), inputs[i]});
    }
  }
  return files;
}

}  // namespace

bool is_rank_report(const std::vector<std::string>& inputs, const std::string& summary_pattern) {
  return inputs.size() > 1 || !summary_pattern.empty() ||
         std::any_of(inputs.begin(), inputs.end(), [](const std::string& i) { return has_rank_placeholder(i); });
}

RankReport build_rank_report(const RankReportOptions& options) {
  RankReport report;
  for (const std::string& input : options.inputs) report.pattern += (report.pattern.empty() ? "" : " ") + input;
  std::map<std::uint32_t, RankRow> rows;
  std::vector<RankFile> files = input_files(options.inputs);
  std::vector<RankFile> summaries;
  if (!options.summary_pattern.empty()) summaries = find_rank_files(options.summary_pattern);
  for (const RankFile& file : files) {
    if (read_summary(file.path)) {
      summaries.push_back(file);
      continue;
    }
    LoadModelOptions load_options;
    load_options.use_marks = options.use_marks;
    load_options.progress = false;
    try {
      const LoadedModel loaded = load_model(file.path, load_options);
      std::uint32_t rank = file.rank;
      for (const auto& [key, value] : loaded.model.metadata()) {
        if (key == "rank" && !has_rank_placeholder(file.path)) rank = static_cast<std::uint32_t>(std::stoul(value));
      }
      RankRow& row = row_of(rows, rank);
      row.trace = file.path;
      read_trace(row, loaded, options);
    } catch (const std::exception& e) {
      RankRow& row = row_of(rows, file.rank);
      row.trace = file.path;
      row.status = "unreadable";
      row.problem = e.what();
    }
  }
  for (const RankFile& file : summaries) {
    RankRow& row = row_of(rows, file.rank);
    row.summary = file.path;
    if (const auto summary = read_summary(file.path)) {
      read_summary_into(row, *summary);
    } else if (row.trace.empty()) {
      row.status = "unreadable";
      row.problem = "not a memtool summary";
    }
  }
  if (rows.empty()) throw std::invalid_argument("no rank's trace or summary was found");
  // Ranks below the highest seen, or the world size a trace recorded, that left nothing.
  std::uint64_t world = rows.rbegin()->first + 1;
  for (const auto& [rank, row] : rows) world = std::max(world, row.world_size.value_or(0));
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    if (rows.count(rank) == 0) row_of(rows, rank).status = "missing";
  }
  for (auto& [rank, row] : rows) report.rows.push_back(std::move(row));

  // Compared: the whole ones (a cut rank's last step is partial), or every rank with figures.
  for (const RankRow& row : report.rows)
    if (row.status == "whole") report.compared.push_back(row.rank);
  if (report.compared.size() < 2) {
    report.compared.clear();
    for (const RankRow& row : report.rows)
      if (row.has_figures()) report.compared.push_back(row.rank);
  }
  const auto row = [&](std::uint32_t rank) -> const RankRow& {
    return *std::find_if(report.rows.begin(), report.rows.end(), [rank](const RankRow& r) { return r.rank == rank; });
  };
  for (std::uint32_t rank : report.compared) {
    const RankRow& r = row(rank);
    if (!report.highest_peak_rank || r.steady_peak_bytes > row(*report.highest_peak_rank).steady_peak_bytes)
      report.highest_peak_rank = rank;
    if (!report.lowest_peak_rank || r.steady_peak_bytes < row(*report.lowest_peak_rank).steady_peak_bytes)
      report.lowest_peak_rank = rank;
    if (!report.nearest_limit_rank || r.limit_peak() > row(*report.nearest_limit_rank).limit_peak())
      report.nearest_limit_rank = rank;
  }
  report.capacity_bytes = options.capacity_bytes;

  // Allocation sizes the compared ranks make a different number of times (per step; persistent).
  for (const bool persistent : {false, true}) {
    std::map<std::uint64_t, RankDifference> by_size;
    for (std::uint32_t rank : report.compared) {
      const auto& sizes = persistent ? row(rank).persistent_sizes : row(rank).step_sizes;
      for (const auto& [size, count] : sizes) by_size[size].size = size;
    }
    for (auto& [size, difference] : by_size) {
      difference.persistent = persistent;
      bool differs = false;
      for (std::uint32_t rank : report.compared) {
        const auto& sizes = persistent ? row(rank).persistent_sizes : row(rank).step_sizes;
        const auto it = sizes.find(size);
        difference.counts[rank] = it == sizes.end() ? 0 : it->second;
        differs = differs || difference.counts[rank] != difference.counts.begin()->second;
      }
      if (differs) report.differences.push_back(difference);
    }
  }
  // The largest differences in bytes first.
  const auto spread_bytes = [](const RankDifference& d) {
    std::uint64_t low = UINT64_MAX, high = 0;
    for (const auto& [rank, count] : d.counts) {
      low = std::min(low, count);
      high = std::max(high, count);
    }
    return (high - low) * d.size;
  };
  std::stable_sort(report.differences.begin(), report.differences.end(),
                   [&](const RankDifference& a, const RankDifference& b) { return spread_bytes(a) > spread_bytes(b); });
  if (report.differences.size() > kDifferencesShown) report.differences.resize(kDifferencesShown);
  return report;
}

}  // namespace memtool::cli
