// What `memtool record` and `memtool run` say at exit when the command they ran was a launcher
// (torchrun, srun, mpirun) whose ranks each wrote their own trace or summary: one line per rank,
// the ranks that wrote none, and the pattern that reads them as one job.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "detail/rank_files.hpp"

namespace memtool::cli {

// record: each rank's trace summarised in a line (events, peak, step found, cut short), then
// the pattern for `memtool report`.
void say_rank_traces(const std::vector<RankFile>& traces, const std::string& path_template);

// run: "memtool: rank N (FILE):" then `print_outcomes(FILE)`, for each rank's summary.
void say_rank_summaries(const std::vector<RankFile>& summaries, const std::string& path_template, bool keep,
                        const std::function<bool(const std::string&)>& print_outcomes);

}  // namespace memtool::cli
