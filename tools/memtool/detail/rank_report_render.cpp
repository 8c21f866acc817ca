// render_rank_report_text and render_rank_report_json (rank_report.hpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "detail/rank_report.hpp"
#include "detail/text_format.hpp"

namespace memtool::cli {
namespace {

const RankRow* find_row(const RankReport& report, std::optional<std::uint32_t> rank) {
  if (!rank) return nullptr;
  const auto it =
      std::find_if(report.rows.begin(), report.rows.end(), [&](const RankRow& r) { return r.rank == *rank; });
  return it == report.rows.end() ? nullptr : &*it;
}

std::string optional_bytes(const std::optional<std::uint64_t>& bytes) { return bytes ? human_bytes(*bytes) : "-"; }

std::string status_text(const RankRow& row) {
  if (row.status == "cut") return "cut short";
  if (row.status == "missing") return "missing";
  if (row.status == "unreadable") return "unreadable";
  return "whole";
}

// "2 × 4.00 MiB" per rank: "rank 3: 1; ranks 0, 1, 2: 0".
std::string counts_text(const RankDifference& d) {
  std::map<std::uint64_t, std::vector<std::uint32_t>> ranks_by_count;
  for (const auto& [rank, count] : d.counts) ranks_by_count[count].push_back(rank);
  std::string text;
  for (auto it = ranks_by_count.rbegin(); it != ranks_by_count.rend(); ++it) {
    std::string ranks;
    for (std::uint32_t r : it->second) ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", r);
    text +=
        fmt::format("{}rank{} {}: {}", text.empty() ? "" : "; ", it->second.size() > 1 ? "s" : "", ranks, it->first);
  }
  return text;
}

nlohmann::json optional_json(const std::optional<std::uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string render_rank_report_text(const RankReport& report) {
  std::string out = fmt::format("memtool report: {} ranks ({})\n\n", report.rows.size(), report.pattern);
  TextTable table({"rank", "status", "step (allocs)", "steady peak", "peak", "device peak", "persistent",
                   "largest at peak", "pool / lower bound", "swapped out / in", "file"},
                  {false, true, false, false, false, false, false, true, false, false, true});
  for (const RankRow& row : report.rows) {
    if (!row.has_figures()) {
      table.add_row({std::to_string(row.rank), status_text(row), "-", "-", "-", "-", "-",
                     row.problem.empty() ? "-" : row.problem, "-", "-", row.trace.empty() ? row.summary : row.trace});
      continue;
    }
    std::string largest;
    for (const RankBuffer& b : row.largest_at_peak) largest += (largest.empty() ? "" : ", ") + human_bytes(b.size);
    table.add_row(
        {std::to_string(row.rank), status_text(row),
         row.step_allocations != 0 ? std::to_string(row.step_allocations) : "none", human_bytes(row.steady_peak_bytes),
         human_bytes(row.peak_bytes), optional_bytes(row.device_peak_bytes),
         row.trace.empty() ? "-" : human_bytes(row.persistent_bytes), largest.empty() ? "-" : largest,
         row.pool_bytes ? fmt::format("{} / {}", human_bytes(*row.pool_bytes), optional_bytes(row.lower_bound_bytes))
                        : "-",
         row.swapped_out_bytes
             ? fmt::format("{} / {}", human_bytes(*row.swapped_out_bytes), optional_bytes(row.swapped_in_bytes))
             : "-",
         row.trace.empty() ? row.summary : row.trace});
  }
  out += table.render();
  for (const RankRow& row : report.rows) {
    if (row.status == "cut") {
      out += fmt::format(
          "\n  rank {}: its trace stops without an end record after {} events (the rank was killed or "
          "crashed): its figures cover the run up to there, and it is left out of the comparison",
          row.rank, row.events);
    } else if (row.status == "missing") {
      out += fmt::format(
          "\n  rank {}: no trace or summary (the rank never started, wrote nothing, or was killed before "
          "its first allocation)",
          row.rank);
    }
  }
  out += "\n\n";
  const RankRow* high = find_row(report, report.highest_peak_rank);
  const RankRow* low = find_row(report, report.lowest_peak_rank);
  if (high != nullptr && low != nullptr) {
    const std::uint64_t spread = high->steady_peak_bytes - low->steady_peak_bytes;
    out += fmt::format("Spread of the steady peak over {} ranks: {} (rank {}) to {} (rank {}): {}{}\n",
                       report.compared.size(), human_bytes(low->steady_peak_bytes), low->rank,
                       human_bytes(high->steady_peak_bytes), high->rank, human_bytes(spread),
                       low->steady_peak_bytes != 0
                           ? fmt::format(" ({:.1f}% above the lowest)", 100.0 * static_cast<double>(spread) /
                                                                            static_cast<double>(low->steady_peak_bytes))
                           : std::string());
  }
  const bool traced = std::any_of(report.compared.begin(), report.compared.end(),
                                  [&](std::uint32_t rank) { return !find_row(report, rank)->trace.empty(); });
  if (!traced) {
    out += "Allocations: not compared (the ranks have summaries, no traces)\n";
  } else if (report.differences.empty()) {
    out += "Allocations: every compared rank makes the same allocations (by size) per step and before the loop\n";
  } else {
    out += "Allocations that differ between ranks (count by size):\n";
    for (const RankDifference& d : report.differences) {
      out += fmt::format("  {:>10} {}: {}\n", human_bytes(d.size), d.persistent ? "persistent" : "per step  ",
                         counts_text(d));
    }
  }
  if (const RankRow* nearest = find_row(report, report.nearest_limit_rank)) {
    if (report.capacity_bytes != 0) {
      const std::uint64_t peak = nearest->limit_peak();
      out += fmt::format("Nearest its device's limit: rank {}: peak {} of {} ({})\n", nearest->rank, human_bytes(peak),
                         human_bytes(report.capacity_bytes),
                         peak <= report.capacity_bytes
                             ? fmt::format("{} to spare", human_bytes(report.capacity_bytes - peak))
                             : fmt::format("{} over", human_bytes(peak - report.capacity_bytes)));
    } else {
      out += fmt::format("Nearest its device's limit: rank {} (the highest peak, {}; --capacity gives the headroom)\n",
                         nearest->rank, human_bytes(nearest->limit_peak()));
    }
  }
  return out;
}

std::string render_rank_report_json(const RankReport& report) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankRow& row : report.rows) {
    nlohmann::json r{{"rank", row.rank}, {"status", row.status}};
    r["trace"] = row.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.trace);
    r["summary"] = row.summary.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.summary);
    if (!row.problem.empty()) r["problem"] = row.problem;
    if (row.has_figures()) {
      r["events"] = row.events;
      r["iteration_period"] = row.step_events;
      r["iteration_period_allocs"] = row.step_allocations;
      r["steady_state_peak_live_bytes"] = row.steady_peak_bytes;
      r["peak_live_bytes"] = row.peak_bytes;
      r["persistent_bytes"] = row.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.persistent_bytes);
      nlohmann::json largest = nlohmann::json::array();
      for (const RankBuffer& b : row.largest_at_peak) {
        nlohmann::json j{{"size", b.size}};
        if (!b.site.empty()) j["site"] = b.site;
        largest.push_back(std::move(j));
      }
      r["largest_at_peak"] = std::move(largest);
      r["pool_bytes"] = optional_json(row.pool_bytes);
      r["lower_bound_bytes"] = optional_json(row.lower_bound_bytes);
      r["strategy"] = row.strategy.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.strategy);
      r["device_peak_bytes"] = optional_json(row.device_peak_bytes);
      r["bytes_swapped_out"] = optional_json(row.swapped_out_bytes);
      r["bytes_swapped_in"] = optional_json(row.swapped_in_bytes);
    }
    ranks.push_back(std::move(r));
  }
  nlohmann::json j;
  j["ranks"] = std::move(ranks);
  j["compared_ranks"] = report.compared;
  const RankRow* high = find_row(report, report.highest_peak_rank);
  const RankRow* low = find_row(report, report.lowest_peak_rank);
  if (high != nullptr && low != nullptr) {
    j["spread"] = {{"highest_peak_rank", high->rank},
                   {"highest_steady_peak_bytes", high->steady_peak_bytes},
                   {"lowest_peak_rank", low->rank},
                   {"lowest_steady_peak_bytes", low->steady_peak_bytes},
                   {"difference_bytes", high->steady_peak_bytes - low->steady_peak_bytes}};
  } else {
    j["spread"] = nullptr;
  }
  nlohmann::json differences = nlohmann::json::array();
  for (const RankDifference& d : report.differences) {
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& [rank, count] : d.counts) counts[std::to_string(rank)] = count;
    differences.push_back({{"size", d.size}, {"where", d.persistent ? "persistent" : "per_step"}, {"counts", counts}});
  }
  j["differences"] = std::move(differences);
  if (const RankRow* nearest = find_row(report, report.nearest_limit_rank)) {
    j["nearest_limit"] = {{"rank", nearest->rank}, {"peak_bytes", nearest->limit_peak()}};
    if (report.capacity_bytes != 0) {
      j["nearest_limit"]["capacity_bytes"] = report.capacity_bytes;
      j["nearest_limit"]["headroom_bytes"] =
          static_cast<std::int64_t>(report.capacity_bytes) - static_cast<std::int64_t>(nearest->limit_peak());
    }
  } else {
    j["nearest_limit"] = nullptr;
  }
  return j.dump(2) + "\n";
}

}  // namespace memtool::cli
