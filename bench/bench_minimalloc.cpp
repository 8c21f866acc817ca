// MiniMalloc's "challenging" set (google/minimalloc benchmarks/challenging, in
// tests/fixtures/planner/minimalloc-challenging-*.csv) side by side with MiniMalloc's published
// times: the decision search alone at MiniMalloc's capacity, 1 MiB (what MiniMalloc solves),
// then `best` with its default budget and no capacity, and with --capacity 1 MiB. Seconds are
// this thread's CPU time (the development machine is shared: wall time says more about the
// neighbours than about the planner); pools do not depend on the machine.
// `--time-limit=S`: best's budget (default 1); `--filter=LETTERS` (e.g. DJ); `--decide=BYTES`:
// the decision search alone at that capacity instead of 1 MiB (`--decide-limit=S`, default 60).
// Other arguments (bench/run.sh passes Google Benchmark's) are ignored.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "branch_and_bound.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "prepared.hpp"

namespace {

namespace mp = memtool::planner;
namespace md = memtool::planner::detail;

constexpr std::uint64_t kCapacity = 1048576;

// MiniMalloc's times at capacity 1 MiB, ms, from its ASPLOS 2023 slides (google/minimalloc
// img/minimalloc.slides.pdf, "Empirical Results: Challenging Suite"; TelaMalloc and a mixed ILP
// solved none within an hour).
struct Published {
  char name;
  int milliseconds;
};
constexpr Published kPublished[] = {{'A', 4910}, {'B', 3661}, {'C', 637},  {'D', 2674}, {'E', 3717}, {'F', 5358},
                                    {'G', 1181}, {'H', 1808}, {'I', 3908}, {'J', 883},  {'K', 628}};

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  double time_limit = 1.0;
  double decide_limit = 60.0;
  std::uint64_t capacity = kCapacity;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--time-limit=", 13) == 0) time_limit = std::stod(argv[i] + 13);
    if (std::strncmp(argv[i], "--filter=", 9) == 0) filter = argv[i] + 9;
    if (std::strncmp(argv[i], "--decide=", 9) == 0) capacity = std::stoull(argv[i] + 9);
    if (std::strncmp(argv[i], "--decide-limit=", 15) == 0) decide_limit = std::stod(argv[i] + 15);
  }
  fmt::print(
      "MiniMalloc's challenging set, capacity {} B (decided at {} B); best with --time-limit {} s; CPU seconds\n",
      kCapacity, capacity, time_limit);
  fmt::print("{:<3} {:>7} {:>9} {:>10} | {:>9} {:>9} | {:>10} {:>6} {:>7} | {:>10} {:>7}\n", "set", "buffers", "LB",
             "MiniMalloc", "decide", "pool", "best pool", "vs LB", "s", "best --cap", "s");
  for (const Published& row : kPublished) {
    if (!filter.empty() && filter.find(row.name) == std::string::npos) continue;
    const auto problem = memtool::trace::read_problem_csv(
        fmt::format("{}/planner/minimalloc-challenging-{}.csv", MEMTOOL_FIXTURES_DIR, row.name));
    const std::uint64_t lb = mp::lower_bound(problem);
    // The decision search on its own, as MiniMalloc runs (60 s at most).
    double start = thread_seconds();
    md::SearchBudget budget(decide_limit);
    const auto decided = md::branch_and_bound(md::prepare(problem), capacity, budget);
    const double decide_seconds = thread_seconds() - start;
    // best, not told the capacity.
    mp::PlanOptions options;
    options.time_limit_seconds = time_limit;
    start = thread_seconds();
    const auto best = mp::find_algorithm("best")->plan(problem, options);
    const double best_seconds = thread_seconds() - start;
    const bool best_valid = mp::validate(problem, best).valid;
    // best, told the capacity.
    options.capacity_bytes = kCapacity;
    start = thread_seconds();
    const auto told = mp::find_algorithm("best")->plan(problem, options);
    const double told_seconds = thread_seconds() - start;
    const bool told_valid = mp::validate(problem, told).valid;
    fmt::print("{:<3} {:>7} {:>9} {:>8.3f} s | {:>7.3f} s {:>9} | {:>10}{} {:>6.4f} {:>5.2f} s | {:>10}{} {:>5.2f} s\n",
               row.name, problem.buffers.size(), lb, row.milliseconds / 1000.0, decide_seconds,
               decided.improved ? std::to_string(decided.pool) : "none", best.pool_size, best_valid ? ' ' : '!',
               static_cast<double>(best.pool_size) / static_cast<double>(lb), best_seconds, told.pool_size,
               told_valid ? ' ' : '!', told_seconds);
    std::fflush(stdout);
  }
  return 0;
}
