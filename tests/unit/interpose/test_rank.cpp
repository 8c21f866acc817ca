// Which rank a process is (rank.hpp): the launchers' variables in their order of trust, and the
// per-rank file names that keep a job's ranks from writing one another's trace or summary.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "memtool/interpose/rank.hpp"

using namespace memtool::interpose;

namespace {
struct Env {
  std::map<std::string, std::string> values;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = values.find(name);
      return it == values.end() ? nullptr : it->second.c_str();
    };
  }
};
}  // namespace

TEST_CASE("rank: none outside a job", "[interpose][rank]") {
  const Env env;
  CHECK_FALSE(rank_from_environment(env.lookup()).has_value());
  CHECK_FALSE(one_of_several_ranks(env.lookup()));
  CHECK(expand_path_template("t.%r", 1, env.lookup()) == "t.0");
}

TEST_CASE("rank: each launcher's variables", "[interpose][rank]") {
  const std::map<std::string, std::map<std::string, std::string>> launchers{
      {"RANK", {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}},
      {"OMPI_COMM_WORLD_RANK",
       {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}},
      {"PMI_RANK", {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"}}},
      {"SLURM_PROCID", {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}}},
  };
  for (const auto& [source, values] : launchers) {
    Env env;
    env.values = values;
    INFO(source);
    const auto rank = rank_from_environment(env.lookup());
    REQUIRE(rank.has_value());
    CHECK(rank->rank == 5);
    CHECK(rank->source == source);
    CHECK(rank->world_size == 8u);
    CHECK(rank->local_rank == 1u);
    CHECK(one_of_several_ranks(env.lookup()));
    CHECK(expand_path_template("t.%r", 1, env.lookup()) == "t.5");
  }
}

TEST_CASE("rank: a worker's RANK beats the Slurm step it inherited; junk is skipped", "[interpose][rank]") {
  Env env;
  env.values = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"RANK", "6"}, {"WORLD_SIZE", "8"}};
  CHECK(rank_from_environment(env.lookup())->rank == 6);
  env.values = {{"RANK", "six"}, {"OMPI_COMM_WORLD_RANK", "3"}};
  CHECK(rank_from_environment(env.lookup())->source == "OMPI_COMM_WORLD_RANK");
  env.values = {{"RANK", ""}, {"LOCAL_RANK", "2"}};
  const auto local = rank_from_environment(env.lookup());
  REQUIRE(local.has_value());
  CHECK(local->rank == 2);
  CHECK_FALSE(local->world_size.has_value());
  CHECK_FALSE(one_of_several_ranks(env.lookup()));  // no world size: not known to be a job
  env.values = {{"RANK", "0"}, {"WORLD_SIZE", "1"}};
  CHECK_FALSE(one_of_several_ranks(env.lookup()));
  env.values = {{"RANK", "-1"}, {"PMIX_RANK", "4"}};
  CHECK(rank_from_environment(env.lookup())->rank == 4);
}

TEST_CASE("rank: per-rank path templates", "[interpose][rank]") {
  CHECK(rank_path_template("train.trace") == "train.rank%r.trace");
  CHECK(rank_path_template("out/x") == "out/x.rank%r");
  CHECK(rank_path_template("a.d/x") == "a.d/x.rank%r");
  CHECK(rank_path_template(".hidden") == ".hidden.rank%r");
  CHECK(rank_path_template("memtool.%p.trace") == "memtool.%p.rank%r.trace");
  CHECK(rank_path_template("t.%r.trace") == "t.%r.trace");
  CHECK(rank_path_template("100%%r.trace") == "100%%r.rank%r.trace");  // %%r is a percent sign and an r

  Env env;
  CHECK(path_template_for_process("train.trace", env.lookup()) == "train.trace");
  env.values = {{"RANK", "3"}, {"WORLD_SIZE", "4"}};
  CHECK(path_template_for_process("train.trace", env.lookup()) == "train.rank%r.trace");
  CHECK(expand_path_template(path_template_for_process("train.trace", env.lookup()), 9, env.lookup()) ==
        "train.rank3.trace");
  CHECK(path_template_for_process("", env.lookup()).empty());
}
