// Which rank of a distributed job this process is, read from the variables the launchers set
// (torchrun, Slurm's srun, Open MPI's and MPICH's mpirun), and the per-rank file names that
// follow from it: every rank of a job writes its own trace and summary, never one another's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "memtool/interpose/options.hpp"

namespace memtool::interpose {

struct RankInfo {
  std::uint32_t rank = 0;
  std::string source;                       // the variable the rank came from, e.g. "RANK"
  std::optional<std::uint32_t> world_size;  // ranks in the job, where that launcher says
  std::optional<std::uint32_t> local_rank;  // rank on this node, where known
};

// The launchers' variables, in the order they are believed: a global rank first (torchrun's
// RANK, Open MPI's OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, PMIx's PMIX_RANK, then Slurm's
// SLURM_PROCID — last because a torchrun or mpirun started inside a Slurm step inherits the
// step's SLURM_PROCID, which numbers nodes, not workers), then a node-local rank (LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID). A value that is not a decimal number is skipped.
// nullopt when none is set: a process of no job, or a launcher's own process (torchrun's
// agent has no RANK).
[[nodiscard]] std::optional<RankInfo> rank_from_environment(const EnvLookup& lookup);

// True when the environment names a job of more than one rank (its launcher's world size).
[[nodiscard]] bool one_of_several_ranks(const EnvLookup& lookup);

// One file per rank from a path template: the template itself when it has %r; else ".rank%r"
// inserted before the file name's extension (train.trace → train.rank%r.trace, x → x.rank%r,
// a/b.c/x → a/b.c/x.rank%r).
[[nodiscard]] std::string rank_path_template(std::string_view path_template);

// The template a process writes by: rank_path_template(t) when it is one of several ranks (so
// `MEMTOOL_TRACE=train.trace` under torchrun gives train.rank0.trace, train.rank1.trace, ...),
// else `t` as it is.
[[nodiscard]] std::string path_template_for_process(std::string_view path_template, const EnvLookup& lookup);

}  // namespace memtool::interpose
