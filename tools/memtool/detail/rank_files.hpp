// The files a job's ranks wrote: a path template with %r (and %p) matched against a folder,
// for `memtool record`/`run` in front of a launcher (torchrun, srun, mpirun) and for `memtool
// report`/`export` of a job. A template without %r names one file per rank the way
// libmemtool.so does under a launcher (rank_path_template: train.trace → train.rank%r.trace).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::cli {

struct RankFile {
  std::uint32_t rank = 0;
  std::string path;
};

// True when `path` has the %r placeholder (a pattern, not a file).
[[nodiscard]] bool has_rank_placeholder(std::string_view path);

// The files matching `path_template` (%r and %p: decimal numbers; %% a percent sign; only in the
// file name, not its folder), one per rank — the newest where several pids wrote one rank —
// ordered by rank. `since`: only files modified at or after it.
[[nodiscard]] std::vector<RankFile> find_rank_files(
    const std::string& path_template, std::optional<std::filesystem::file_time_type> since = std::nullopt);

// After `memtool record`/`run` ran a command with `path_template` (MEMTOOL_TRACE or
// MEMTOOL_SUMMARY) from `start`: the per-rank files its processes wrote, when this memtool
// stands in front of a launcher. Empty when memtool itself runs inside a rank (each rank's
// memtool speaks for its own file) or when no rank wrote one (a single-process program).
[[nodiscard]] std::vector<RankFile> launched_rank_files(const std::string& path_template,
                                                        std::filesystem::file_time_type start);

// The path a command run by this memtool writes for `path_template` (the library's expansion,
// rank file names included, with `pid` for %p).
[[nodiscard]] std::string path_for_child(const std::string& path_template, long pid);

}  // namespace memtool::cli
