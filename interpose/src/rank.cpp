// rank_from_environment and the per-rank path templates (rank.hpp).
#include "memtool/interpose/rank.hpp"

#include <array>
#include <charconv>

namespace memtool::interpose {
namespace {

// A launcher's rank variable and the world size it sets beside it ("" where it sets none).
struct RankVariable {
  const char* rank;
  const char* world_size;
  const char* local_rank;
};

// Global ranks first, SLURM_PROCID last of them (see rank.hpp), then node-local ranks.
constexpr std::array<RankVariable, 8> kRankVariables{{
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},                                            // torchrun, torch.distributed
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},  // Open MPI
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},        // MPICH, Intel MPI, srun --mpi=pmi2
    {"PMIX_RANK", "", ""},                              // PMIx (Open MPI 5, srun --mpi=pmix)
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},  // srun
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE", "LOCAL_RANK"},   // node-local only
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_LOCALID"},
}};

std::optional<std::uint32_t> number(const EnvLookup& lookup, const char* name) {
  if (*name == '\0') return std::nullopt;
  const char* text = lookup(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string_view view{text};
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc{} || end != view.data() + view.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<RankInfo> rank_from_environment(const EnvLookup& lookup) {
  for (const RankVariable& variable : kRankVariables) {
    const auto rank = number(lookup, variable.rank);
    if (!rank) continue;
    RankInfo info;
    info.rank = *rank;
    info.source = variable.rank;
    info.world_size = number(lookup, variable.world_size);
    info.local_rank = number(lookup, variable.local_rank);
    return info;
  }
  return std::nullopt;
}

bool one_of_several_ranks(const EnvLookup& lookup) {
  const auto info = rank_from_environment(lookup);
  return info && info->world_size && *info->world_size > 1;
}

std::string rank_path_template(std::string_view path_template) {
  for (std::size_t i = 0; i + 1 < path_template.size(); ++i) {
    if (path_template[i] != '%') continue;
    if (path_template[i + 1] == 'r') return std::string(path_template);
    ++i;  // %% and %p: skip the pair
  }
  const std::size_t name =
      path_template.find_last_of('/') == std::string_view::npos ? 0 : path_template.find_last_of('/') + 1;
  const std::size_t dot = path_template.find_last_of('.');
  // An extension: a dot inside the file name, not its first character (".hidden" has none).
  const std::size_t at = dot != std::string_view::npos && dot > name ? dot : path_template.size();
  std::string out(path_template.substr(0, at));
  out += ".rank%r";
  out += path_template.substr(at);
  return out;
}

std::string path_template_for_process(std::string_view path_template, const EnvLookup& lookup) {
  if (path_template.empty() || !one_of_several_ranks(lookup)) return std::string(path_template);
  return rank_path_template(path_template);
}

}  // namespace memtool::interpose
