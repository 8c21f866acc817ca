// say_rank_traces and say_rank_summaries (rank_run.hpp).
#include "detail/rank_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "detail/load_model.hpp"
#include "detail/text_format.hpp"
#include "memtool/interpose/rank.hpp"
#include "memtool/trace/lifetimes.hpp"

namespace memtool::cli {
namespace {

// "ranks 1, 3" missing below the highest rank seen or the world size a trace gave.
std::string missing_ranks(const std::vector<RankFile>& files, std::uint32_t world_size) {
  std::string text;
  std::uint32_t expected = world_size;
  for (const RankFile& f : files) expected = std::max(expected, f.rank + 1);
  for (std::uint32_t r = 0; r < expected; ++r) {
    if (std::any_of(files.begin(), files.end(), [r](const RankFile& f) { return f.rank == r; })) continue;
    text += fmt::format("{}{}", text.empty() ? "" : ", ", r);
  }
  return text;
}

}  // namespace

void say_rank_traces(const std::vector<RankFile>& traces, const std::string& path_template) {
  std::uint32_t world_size = 0;
  for (const RankFile& file : traces) {
    try {
      LoadModelOptions options;
      options.progress = false;
      const LoadedModel loaded = load_model(file.path, options);
      for (const auto& [key, value] : loaded.model.metadata()) {
        if (key == "world_size")
          world_size = std::max<std::uint32_t>(world_size, static_cast<std::uint32_t>(std::stoul(value)));
      }
      const auto curve = trace::live_bytes_curve(loaded.model);
      const auto peak = trace::peak_live_bytes(curve, 0, curve.size());
      const bool cut = loaded.summary.trace && !loaded.summary.trace->clean_end;  // no end record
      fmt::print(stderr, "memtool: rank {}: {}: {} events, {} allocations, peak {} live; {}{}\n", file.rank, file.path,
                 loaded.model.event_count(), loaded.model.stats().allocs, human_bytes(peak.bytes),
                 loaded.iterations.found() ? fmt::format("a step of {} allocations", loaded.iterations.period_allocs)
                                           : std::string("no repeating step"),
                 cut ? "; the trace is cut short (the rank was killed)" : "");
    } catch (const std::exception& e) {
      fmt::print(stderr, "memtool: rank {}: the trace {} could not be read: {}\n", file.rank, file.path, e.what());
    }
  }
  const std::string missing = missing_ranks(traces, world_size);
  if (!missing.empty()) fmt::print(stderr, "memtool: no trace from rank {}\n", missing);
  const std::string pattern = interpose::rank_path_template(path_template);
  fmt::print(stderr,
             "memtool: {} ranks wrote their own trace, {} with %r the rank\nmemtool: next: memtool report '{}'\n",
             traces.size(), pattern, pattern);
}

void say_rank_summaries(const std::vector<RankFile>& summaries, const std::string& path_template, bool keep,
                        const std::function<bool(const std::string&)>& print_outcomes) {
  for (const RankFile& file : summaries) {
    fmt::print(stderr, "memtool: rank {}{}:\n", file.rank, keep ? fmt::format(" ({})", file.path) : std::string());
    if (!print_outcomes(file.path))
      fmt::print(stderr, "memtool: rank {}: the summary {} could not be read\n", file.rank, file.path);
  }
  const std::string missing = missing_ranks(summaries, 0);
  if (!missing.empty())
    fmt::print(stderr, "memtool: no summary from rank {} (killed, or no work on the GPU)\n", missing);
  if (keep) {
    const std::string pattern = interpose::rank_path_template(path_template);
    fmt::print(stderr, "memtool: {} ranks wrote their own summary, {} with %r the rank\n", summaries.size(), pattern);
  }
}

}  // namespace memtool::cli
