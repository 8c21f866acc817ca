// `memtool export --format perfetto|html` of a job's ranks (several traces, or a %r pattern):
// one file. Perfetto: a process track per rank (each rank's own export, with its own track ids
// and packet sequence, concatenated), times shifted so that one iteration — the first that is
// steady in every rank — starts at the same moment in all of them. HTML: the rank table of
// `memtool report` and each rank's live bytes, the same iteration's start aligned.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "detail/load_model.hpp"
#include "memtool/trace/export.hpp"

namespace memtool::cli {

struct RankExportOptions {
  std::vector<std::string> inputs;  // files, or one pattern with %r
  trace::ExportFormat format = trace::ExportFormat::perfetto;
  std::string output;
  bool use_marks = true;
  // The pool plan drawn in a rank's Perfetto tracks (nullopt: none).
  std::function<std::optional<trace::PoolPlanView>(const LoadedModel&)> plan;
};

// True when `inputs` name a job: several files, or a pattern with %r.
[[nodiscard]] bool is_rank_export(const std::vector<std::string>& inputs);

// Writes the file (under OUTPUT.partial, renamed when complete); says what it wrote on stderr.
// Throws std::invalid_argument for a format that holds one run (memory-viz, chrome-json) or
// inputs that name no readable rank.
void export_ranks(const RankExportOptions& options);

}  // namespace memtool::cli
