// export_ranks (rank_export.hpp).
#include "detail/rank_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "detail/rank_files.hpp"
#include "detail/rank_report.hpp"
#include "detail/text_format.hpp"

namespace memtool::cli {
namespace {

namespace fs = std::filesystem;

struct LoadedRank {
  std::uint32_t rank = 0;
  LoadedModel loaded;
  bool cut = false;
};

std::vector<LoadedRank> load_ranks(const RankExportOptions& options) {
  std::vector<RankFile> files;
  for (std::size_t i = 0; i < options.inputs.size(); ++i) {
    if (has_rank_placeholder(options.inputs[i])) {
      const auto found = find_rank_files(options.inputs[i]);
      if (found.empty()) throw std::invalid_argument(fmt::format("{}: no file matches the pattern", options.inputs[i]));
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back({static_cast<std::uint32_t>(i), options.inputs[i]});
    }
  }
  std::vector<LoadedRank> ranks;
  for (const RankFile& file : files) {
    LoadModelOptions load_options;
    load_options.use_marks = options.use_marks;
    load_options.progress = false;
    LoadedRank rank{file.rank, load_model(file.path, load_options), false};
    for (const auto& [key, value] : rank.loaded.model.metadata()) {  // the rank the library recorded
      if (key == "rank" && !has_rank_placeholder(file.path)) rank.rank = static_cast<std::uint32_t>(std::stoul(value));
    }
    rank.cut = rank.loaded.summary.trace && !rank.loaded.summary.trace->clean_end;
    ranks.push_back(std::move(rank));
  }
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const LoadedRank& a, const LoadedRank& b) { return a.rank < b.rank; });
  return ranks;
}

// The iteration every rank aligns on: the first one steady in all of them (clamped to what each
// rank has: a rank cut short aligns on its last).
std::size_t common_iteration(const std::vector<LoadedRank>& ranks) {
  std::size_t k = 0;
  for (const LoadedRank& r : ranks) {
    const auto& spans = r.loaded.iterations.spans;
    const auto steady =
        std::find_if(spans.begin(), spans.end(), [](const trace::IterationSpan& s) { return !s.warm_up; });
    if (steady != spans.end()) k = std::max(k, static_cast<std::size_t>(steady - spans.begin()));
  }
  return k;
}

// nullopt for a rank with no iterations (its times are left as they are).
std::optional<std::size_t> iteration_of_rank(const LoadedRank& rank, std::size_t common) {
  const std::size_t count = rank.loaded.iterations.spans.size();
  if (count == 0) return std::nullopt;
  return std::min(common, count - 1);
}

// Host time of the aligned iteration's first event (0 without iterations or times).
std::uint64_t aligned_time(const LoadedRank& rank, std::size_t common) {
  const auto iteration = iteration_of_rank(rank, common);
  if (!iteration || rank.loaded.model.event_count() == 0) return 0;
  return rank.loaded.model.event(rank.loaded.iterations.spans[*iteration].first_event).time_ns;
}

}  // namespace

bool is_rank_export(const std::vector<std::string>& inputs) {
  return inputs.size() > 1 || (inputs.size() == 1 && has_rank_placeholder(inputs.front()));
}

void export_ranks(const RankExportOptions& options) {
  if (options.format != trace::ExportFormat::perfetto && options.format != trace::ExportFormat::html) {
    throw std::invalid_argument(
        fmt::format("--format {} holds one run: export a job's ranks as perfetto or html, or each "
                    "rank's trace on its own",
                    trace::to_string(options.format)));
  }
  const std::vector<LoadedRank> ranks = load_ranks(options);
  const std::size_t common = common_iteration(ranks);
  std::uint64_t latest = 0;
  for (const LoadedRank& r : ranks) latest = std::max(latest, aligned_time(r, common));
  // A rank with no iterations keeps its own times (shift 0 from its first event's time).
  const auto shift_of = [&](const LoadedRank& r) {
    return iteration_of_rank(r, common) ? latest - aligned_time(r, common) : 0;
  };

  const std::string partial = options.output + ".partial";
  try {
    trace::FileSink sink(partial);
    if (options.format == trace::ExportFormat::perfetto) {
      for (const LoadedRank& r : ranks) {
        trace::ExportSource source{r.loaded.model, r.loaded.iterations, r.loaded.path};
        trace::ExportOptions export_options;
        export_options.rank = trace::ExportOptions::RankPlacement{r.rank, shift_of(r), iteration_of_rank(r, common)};
        std::optional<trace::PoolPlanView> plan;
        if (options.plan) plan = options.plan(r.loaded);
        if (plan) export_options.plan = &*plan;
        (void)trace::export_perfetto(source, export_options, sink);
      }
    } else {
      RankReportOptions report_options;
      report_options.inputs = options.inputs;
      report_options.use_marks = options.use_marks;
      const std::string overview = render_rank_report_text(build_rank_report(report_options));
      std::vector<trace::RankHtmlInput> inputs;
      inputs.reserve(ranks.size());
      for (const LoadedRank& r : ranks) {
        inputs.push_back({r.rank, trace::ExportSource{r.loaded.model, r.loaded.iterations, r.loaded.path},
                          iteration_of_rank(r, common).value_or(0),
                          r.cut ? "its trace stops without an end record (the rank was killed or crashed)" : ""});
      }
      (void)trace::export_html_ranks(fmt::format("memtool: {} ranks", ranks.size()), overview, inputs, sink);
    }
    sink.close();
    fs::rename(partial, options.output);
  } catch (...) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw;
  }
  std::string list;
  for (const LoadedRank& r : ranks)
    list += fmt::format("{}{}{}", list.empty() ? "" : ", ", r.rank, r.cut ? " (cut short)" : "");
  std::error_code error;
  const auto bytes = fs::file_size(options.output, error);
  fmt::print(stderr, "memtool: wrote {} ({}): ranks {}, {} each, iteration {} aligned; {}\n", options.output,
             trace::to_string(options.format), list,
             options.format == trace::ExportFormat::perfetto ? "a process track" : "a chart", common,
             human_bytes(error ? 0 : bytes));
}

}  // namespace memtool::cli
