// Planner benchmarks. Timing (Google Benchmark): every algorithm on pseudo-random DL-like
// problems of 1 k, 5 k and 100 k buffers (goals: heuristics ≤ 50 ms at 5 k, ≤ 1 s at 100 k;
// `best` runs its default 1 s budget unless it reaches LB first). Quality (printed after the
// timings; `--quality-only` skips the timings, `--no-quality` the table): pool / LB of every
// algorithm and the baselines on tests/fixtures/planner/*.csv and tests/fixtures/traces/*.iter3.csv,
// to set beside the greedy and MiniMalloc figures of tests/fixtures/planner/README.md.
// `--time-limit=S` (best's budget), `--filter=TEXT` (file names), `--algo=NAME` (one column).
// Reports run on their own, instead of the above:
//  - `--scaling[=N]`: every algorithm against n, DL-like problems of 10 k to N (default 1 M)
//    buffers, a thousand and more live at once at the larger sizes (goals: heuristics ≤ 1 s at
//    100 k, ≤ 15 s at 1 M, memory linear): CPU seconds, pool / LB, the plan checked valid, and
//    the process's peak resident memory after each size; `--algo=NAME` runs one algorithm and
//    prints a hash of its offsets (to check a faster placer places as the old one did),
//    `--size=N` one size;
//  - `--limits`: `best`'s CPU (and wall) time over its --time-limit (0.1, 1, 5 s), the least
//    of `--repeat=N` runs, from 10 k to 1 M buffers and on the larger fixtures (goal: at most
//    1.1 everywhere above the floor, the least time best takes: prepare, the orders, the sweep);
//  - `--calibrate`: each greedy start's charged work against its CPU time (the work model
//    behind the limit, planner/src/greedy_costs.hpp), the least of `--repeat=N` runs.
// Seconds in the tables are this thread's CPU time: the development machine is shared.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "greedy.hpp"
#include "heuristics.hpp"
#include "memtool/engine/baselines.hpp"
#include "memtool/planner/algorithm.hpp"
#include "memtool/trace/problem.hpp"
#include "memtool/trace/problem_csv.hpp"
#include "prepared.hpp"
#include "search_budget.hpp"
#include "sweep_fill.hpp"

namespace {

namespace mp = memtool::planner;
using memtool::trace::Problem;

// A training-iteration-like problem as `memtool plan` builds it (persistent weights stay out of
// the pool): mostly temporaries living a few dozen events, one in ten a saved activation living
// up to a twentieth of the iteration, sizes from 512 B to 64 MiB (one in eight over 1 MiB),
// 256-byte alignment — a few hundred buffers live at once, as in the real traces.
Problem dl_like_problem(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  Problem p;
  p.name = fmt::format("random-{}", n);
  const std::uint64_t horizon = 2 * n;
  for (std::size_t i = 0; i < n; ++i) {
    memtool::trace::BufferRequest b;
    b.id = i;
    b.alignment = 256;
    b.size = uniform(1, 8) == 1 ? uniform(1, 64) << 20 : uniform(512, 1 << 20);
    const std::uint64_t start = uniform(0, horizon - 1);
    std::uint64_t length = 0;
    if (uniform(0, 9) == 0) {
      length = uniform(1, horizon / 20);  // saved activation
    } else {
      length = uniform(1, 64);  // temporary
    }
    b.intervals.push_back({start, std::min(horizon, start + length)});
    p.buffers.push_back(std::move(b));
  }
  p.time_horizon = horizon;
  return p;
}

const Problem& cached_problem(std::size_t n) {
  static std::vector<std::pair<std::size_t, Problem>> cache;
  for (const auto& [size, p] : cache)
    if (size == n) return p;
  cache.emplace_back(n, dl_like_problem(n, 1234 + n));
  return cache.back().second;
}

void bench_algorithm(benchmark::State& state, const mp::Algorithm* algo) {
  const Problem& p = cached_problem(static_cast<std::size_t>(state.range(0)));
  const double lb = static_cast<double>(mp::lower_bound(p));
  std::uint64_t pool = 0;
  for (auto _ : state) {
    auto placement = algo->plan(p, {});
    pool = placement.pool_size;
    benchmark::DoNotOptimize(placement.offsets.data());
  }
  state.counters["pool/LB"] = static_cast<double>(pool) / lb;
}

void bench_baselines(benchmark::State& state) {
  const Problem& p = cached_problem(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(memtool::engine::simulate_baselines(p));
}

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double peak_resident_megabytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

// FNV-1a over the offsets: equal hashes, the same placements.
std::uint64_t offsets_hash(const std::vector<std::uint64_t>& offsets) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const std::uint64_t o : offsets) h = (h ^ o) * 1099511628211ULL;
  return h;
}

void scaling_table(std::size_t largest, std::size_t only_size, const std::string& only) {
  fmt::print("\nScaling: DL-like problems (dl_like_problem), CPU s and pool / LB; ! = invalid plan\n");
  fmt::print("{:>8} {:>7}", "buffers", "live");
  for (const auto* algo : mp::algorithms()) {
    if (only.empty() || algo->name() == only) fmt::print(" {:>20}", algo->name());
  }
  fmt::print(" {:>9}\n", "peak MB");
  for (const std::size_t n : {10000UL, 30000UL, 100000UL, 300000UL, 1000000UL}) {
    if (n > largest) break;
    if (only_size != 0 && n != only_size) continue;
    const Problem p = dl_like_problem(n, 1234 + n);
    // Buffers live at once, at the busiest moment (the greedy's cost grows with it).
    std::vector<std::pair<std::uint64_t, int>> ends;
    for (const auto& b : p.buffers) {
      ends.emplace_back(b.intervals[0].begin, 1);
      ends.emplace_back(b.intervals[0].end, -1);
    }
    std::sort(ends.begin(), ends.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first < y.first : x.second < y.second;
    });
    int live = 0, most = 0;
    for (const auto& [t, d] : ends) most = std::max(most, live += d);
    fmt::print("{:>8} {:>7}", n, most);
    const double lb = static_cast<double>(mp::lower_bound(p));
    for (const auto* algo : mp::algorithms()) {
      if (!only.empty() && algo->name() != only) continue;
      const double start = thread_seconds();
      const auto placement = algo->plan(p, {});
      const double seconds = thread_seconds() - start;
      const bool valid = mp::validate(p, placement).valid;
      fmt::print(" {:>7.3f}{} ({:7.2f} s)", static_cast<double>(placement.pool_size) / lb, valid ? ' ' : '!', seconds);
      if (!only.empty()) fmt::print(" offsets {:016x}", offsets_hash(placement.offsets));
      std::fflush(stdout);
    }
    fmt::print(" {:>9.0f}\n", peak_resident_megabytes());
  }
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The least of `repeat` runs of best at each limit (the machine is shared: the least is the
// closest to an idle one), CPU and wall seconds over the limit.
void limits_table(int repeat) {
  namespace fs = std::filesystem;
  fmt::print(
      "\nTime limit: best's CPU seconds / --time-limit, least of {} runs (wall / limit; pool / LB); "
      "\"floor\": a limit of 1 ns, the least best can take (prepare, orders, the sweep)\n",
      repeat);
  std::vector<std::pair<std::string, Problem>> problems;
  for (const std::size_t n : {10000UL, 30000UL, 100000UL, 300000UL, 1000000UL})
    problems.emplace_back(fmt::format("dl-like {}", n), dl_like_problem(n, 1234 + n));
  for (const char* name : {"planner/iopddl-S_1.csv", "planner/iopddl-Y_1.csv", "planner/somas-pangu_2.6B.csv",
                           "planner/minimalloc-challenging-D.csv", "traces/mobilenet_v2.iter3.csv"}) {
    problems.emplace_back(fs::path(name).filename().string(),
                          memtool::trace::read_problem_csv(fs::path(MEMTOOL_FIXTURES_DIR) / name));
  }
  constexpr double kLimits[] = {1e-9, 0.1, 1.0, 5.0};
  fmt::print("{:<30}", "problem");
  for (const double limit : kLimits)
    fmt::print(" {:>27}", limit < 1e-6 ? std::string("floor (s)") : fmt::format("{} s", limit));
  fmt::print("\n");
  for (const auto& [name, p] : problems) {
    fmt::print("{:<30}", name);
    const double lb = static_cast<double>(mp::lower_bound(p));
    for (const double limit : kLimits) {
      mp::PlanOptions options;
      options.time_limit_seconds = limit;
      std::vector<double> cpu, wall;
      std::uint64_t pool = 0;
      for (int r = 0; r < repeat; ++r) {
        const double start = thread_seconds();
        const double wall_start = wall_seconds();
        pool = mp::find_algorithm("best")->plan(p, options).pool_size;
        cpu.push_back(thread_seconds() - start);
        wall.push_back(wall_seconds() - wall_start);
      }
      std::sort(cpu.begin(), cpu.end());
      std::sort(wall.begin(), wall.end());
      const double scale = limit < 1e-6 ? 1.0 : limit;  // the floor in seconds
      fmt::print(" {:>6.2f} ({:5.2f}; {:8.5f})", cpu.front() / scale, wall.front() / scale,
                 static_cast<double>(pool) / lb);
      std::fflush(stdout);
    }
    fmt::print("\n");
  }
}

// Each greedy start's CPU time against the work it is charged (greedy_costs.hpp), the least of
// `repeat` runs, and the sweep's: the check of the work model behind --time-limit.
void calibration_table(int repeat) {
  namespace fs = std::filesystem;
  namespace md = memtool::planner::detail;
  fmt::print("\nWork model: charged seconds (work / {:.0f} units per s) over CPU seconds, least of {} runs\n",
             md::kWorkUnitsPerSecond, repeat);
  std::vector<std::pair<std::string, Problem>> problems;
  for (const std::size_t n : {10000UL, 30000UL, 100000UL, 300000UL})
    problems.emplace_back(fmt::format("dl-like {}", n), dl_like_problem(n, 1234 + n));
  for (const char* name : {"planner/iopddl-S_1.csv", "planner/iopddl-Y_1.csv", "planner/somas-pangu_2.6B.csv",
                           "planner/somas-resnet50.csv", "traces/mobilenet_v2.iter3.csv", "traces/lstm.iter3.csv"}) {
    problems.emplace_back(fs::path(name).filename().string(),
                          memtool::trace::read_problem_csv(fs::path(MEMTOOL_FIXTURES_DIR) / name));
  }
  const std::pair<md::Order, md::Fit> starts[] = {
      {md::Order::size_by_start, md::Fit::first}, {md::Order::breadth, md::Fit::best},
      {md::Order::size_by_start, md::Fit::best},  {md::Order::conflicts, md::Fit::best},
      {md::Order::size, md::Fit::first},          {md::Order::area, md::Fit::best},
      {md::Order::lifetime, md::Fit::best}};
  fmt::print("{:<24} {:>8}", "problem", "prepare");
  for (const char* name : {"sbs-ff", "breadth", "sbs-bf", "confl", "size-ff", "area", "life", "sweep"})
    fmt::print(" {:>7}", name);
  fmt::print("\n");
  auto least = [&](auto&& run) {
    double best = 1e300;
    for (int r = 0; r < repeat; ++r) {
      const double start = thread_seconds();
      run();
      best = std::min(best, thread_seconds() - start);
    }
    return best;
  };
  auto ratio = [](std::uint64_t work, double seconds) {
    return static_cast<double>(work) / md::kWorkUnitsPerSecond / seconds;
  };
  for (const auto& [name, problem] : problems) {
    md::Prepared p;
    const double prepare_s = least([&] { p = md::prepare(problem); });
    std::unique_ptr<md::GreedyPlacer> placer;
    placer = std::make_unique<md::GreedyPlacer>(p);
    fmt::print("{:<24} {:>8.2f}", name, ratio(md::prepare_work(p), prepare_s));
    std::vector<std::uint32_t> order;
    for (const auto& [kind, fit] : starts) {
      std::uint64_t work = 0;
      const double seconds = least([&] {
        order = md::heuristic_order(p, kind);
        work = md::heuristic_order_work(p, kind) + placer->place(order, fit).work;
      });
      fmt::print(" {:>7.2f}", ratio(work, seconds));
      std::fflush(stdout);
    }
    std::vector<std::uint64_t> offsets(p.items.size(), 0);
    const double sweep_s = least([&] { md::sweep_fill(p, order, 0, offsets); });
    fmt::print(" {:>7.2f}\n", ratio(md::sweep_fill_work(order.size()), sweep_s));
  }
}

void quality_table(double time_limit, const std::string& filter, const std::string& only) {
  namespace fs = std::filesystem;
  const fs::path fixtures = MEMTOOL_FIXTURES_DIR;
  std::vector<fs::path> files;
  for (const char* dir : {"planner", "traces"}) {
    for (const auto& entry : fs::directory_iterator(fixtures / dir)) {
      const std::string name = entry.path().filename().string();
      if (name.find(filter) == std::string::npos) continue;
      if (name.ends_with(".csv") && (std::string(dir) == "planner" || name.ends_with(".iter3.csv"))) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  fmt::print("\nQuality: pool / LB (CPU s), best with --time-limit {} s\n", time_limit);
  fmt::print("{:<32} {:>7} {:>16}", "problem", "buffers", "LB");
  std::vector<const mp::Algorithm*> chosen;
  for (const auto* algo : mp::algorithms()) {
    if (only.empty() || algo->name() == only) chosen.push_back(algo);
  }
  for (const auto* algo : chosen) fmt::print(" {:>17}", algo->name());
  fmt::print(" {:>9} {:>9} {:>9}\n", "cudaMalloc", "cnmem", "pytorch");
  for (const auto& file : files) {
    const Problem p = memtool::trace::read_problem_csv(file.string());
    const std::uint64_t lb = mp::lower_bound(p);
    fmt::print("{:<32} {:>7} {:>16}", file.filename().string(), p.buffers.size(), lb);
    std::fflush(stdout);
    mp::PlanOptions options;
    options.time_limit_seconds = time_limit;
    for (const auto* algo : chosen) {
      const double start = thread_seconds();
      const auto placement = algo->plan(p, options);
      const double seconds = thread_seconds() - start;
      const bool valid = mp::validate(p, placement).valid;
      fmt::print(" {:>8.5f}{} ({:5.2f})", static_cast<double>(placement.pool_size) / static_cast<double>(lb),
                 valid ? ' ' : '!', seconds);
      std::fflush(stdout);
    }
    for (const auto& baseline : memtool::engine::simulate_baselines(p)) {
      fmt::print(" {:>9.4f}", static_cast<double>(baseline.peak_reserved_bytes) / static_cast<double>(lb));
    }
    fmt::print("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool timings = true;
  bool quality = true;
  std::size_t scaling = 0;
  std::size_t only_size = 0;
  bool limits = false;
  bool calibrate = false;
  int repeat = 1;
  double time_limit = 1.0;
  std::string filter, only;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quality-only") == 0) {
      timings = false;
    } else if (std::strcmp(argv[i], "--no-quality") == 0) {
      quality = false;
    } else if (std::strncmp(argv[i], "--filter=", 9) == 0) {
      filter = argv[i] + 9;
    } else if (std::strncmp(argv[i], "--algo=", 7) == 0) {
      only = argv[i] + 7;
    } else if (std::strcmp(argv[i], "--scaling") == 0) {
      scaling = 1000000;
    } else if (std::strncmp(argv[i], "--scaling=", 10) == 0) {
      scaling = std::stoul(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--size=", 7) == 0) {
      only_size = std::stoul(argv[i] + 7);
    } else if (std::strcmp(argv[i], "--limits") == 0) {
      limits = true;
    } else if (std::strcmp(argv[i], "--calibrate") == 0) {
      calibrate = true;
    } else if (std::strncmp(argv[i], "--repeat=", 9) == 0) {
      repeat = std::max(1, std::stoi(argv[i] + 9));
    } else if (std::strncmp(argv[i], "--time-limit=", 13) == 0) {
      time_limit = std::stod(argv[i] + 13);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (scaling != 0 || limits || calibrate) {
    if (scaling != 0) scaling_table(scaling, only_size, only);
    if (limits) limits_table(repeat);
    if (calibrate) calibration_table(repeat);
    return 0;
  }
  if (timings) {
    for (const auto* algo : mp::algorithms()) {
      auto* b = benchmark::RegisterBenchmark(fmt::format("plan/{}", algo->name()).c_str(), bench_algorithm, algo);
      b->Arg(1000)->Arg(5000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    benchmark::RegisterBenchmark("baselines", bench_baselines)
        ->Arg(1000)
        ->Arg(5000)
        ->Arg(100000)
        ->Unit(benchmark::kMillisecond);
    int count = static_cast<int>(rest.size());
    benchmark::Initialize(&count, rest.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  if (quality) quality_table(time_limit, filter, only);
  return 0;
}
