// Swap planning at the scale of large models (issue 34): plan() of every strategy on
// transformer-shaped steps (tests/unit/swapper/transformer_iteration.hpp) of 12,500 to 100,000
// ops, in stick-to-limit mode with no stall limit (what the process asks for), at a budget of 60%
// of the plain peak over a 55 GB/s link; one row per size, planning seconds per strategy side by
// side, after the zero-stall bound's (bound.hpp; `memtool simulate` computes it before it plans):
// wall clock, and in brackets the CPU time (the machine may be shared). Options: --sizes=12500,25000 (ops), --strategies=ours,paper-doa (empty: the bound
// alone), --budget=0.6,
// --max-simulations=N (ours' work limit; default plan()'s), --max-drop-ops=N (the work limit of
// ours' drop of needless swaps, PlanOptions::max_drop_simulated_ops), --write=PATH (also write each size's
// problem to PATH.<ops>.problem, for `memtool simulate`). Figures in bench/RESULTS.md.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "../tests/unit/swapper/transformer_iteration.hpp"
#include "memtool/swapper/bound.hpp"
#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/problem.hpp"

namespace {

namespace ms = memtool::swapper;

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sizes{"12500", "25000", "50000", "100000"};
  std::vector<std::string> names;
  for (const ms::StrategyInfo& s : ms::strategies()) names.emplace_back(s.name);
  double share = 0.6;
  std::string write_prefix;
  ms::PlanOptions options;
  options.mode = ms::ScheduleMode::stick_to_limit;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view flag) -> const char* {
      return arg.starts_with(flag) ? argv[i] + flag.size() : nullptr;
    };
    if (const char* sizes_arg = value("--sizes=")) {
      sizes = split(sizes_arg);
    } else if (const char* names_arg = value("--strategies=")) {
      names = split(names_arg);
    } else if (const char* share_arg = value("--budget=")) {
      share = std::strtod(share_arg, nullptr);
    } else if (const char* write_arg = value("--write=")) {
      write_prefix = write_arg;
    } else if (const char* limit_arg = value("--max-simulations=")) {
      options.max_simulations = static_cast<std::uint32_t>(std::strtoul(limit_arg, nullptr, 10));
    } else if (const char* drop_arg = value("--max-drop-ops=")) {
      options.max_drop_simulated_ops = std::strtoull(drop_arg, nullptr, 10);
    } else {
      fmt::print(stderr,
                 "usage: {} [--sizes=N,...] [--strategies=S,...] [--budget=F] [--max-simulations=N] [--max-drop-ops=N] "
                 "[--write=PATH]\n",
                 argv[0]);
      return 2;
    }
  }
  fmt::print("swap planning time (s), stick-to-limit, budget {:.0f}% of the plain peak, 55 GB/s link\n", 100 * share);
  std::string header = fmt::format("{:>8} {:>8} {:>15}", "ops", "buffers", "bound");
  for (const std::string& name : names) header += fmt::format(" {:>15}", name);
  fmt::print("{}\n", header);
  std::fflush(stdout);
  const ms::Link link;
  for (const std::string& size : sizes) {
    const ms::Iteration it = memtool::test::transformer_iteration(static_cast<std::uint32_t>(std::stoul(size)));
    const auto budget = static_cast<std::uint64_t>(share * static_cast<double>(ms::plain_peak_bytes(it)));
    if (!write_prefix.empty()) {
      std::ofstream out(fmt::format("{}.{}.problem", write_prefix, it.ops.size()));
      ms::write_problem(out, {it, link, budget});
    }
    std::string row = fmt::format("{:>8} {:>8}", it.ops.size(), it.buffers.size());
    std::string detail;
    {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      const ms::Bound b = ms::bound(it, link);
      const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      row += fmt::format(" {:>15}", fmt::format("{:.2f} ({:.2f})", seconds, cpu));
      detail += fmt::format("  bound: {} bytes, {:.1f}% of the plain peak (op {})\n", b.peak_bytes,
                            100.0 * static_cast<double>(b.peak_bytes) / static_cast<double>(b.plain_peak_bytes), b.op);
    }
    for (const std::string& name : names) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      const ms::PlanResult r = ms::plan(it, link, budget, name, options);
      const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      row += fmt::format(" {:>15}", fmt::format("{:.2f} ({:.2f})", seconds, cpu));
      detail += fmt::format("  {}: {} swaps ({}), peak {:.1f}% of the budget, {:.2f}% slowdown, {} simulations\n", name,
                            r.schedule.swaps.size(), r.construction,
                            100.0 * static_cast<double>(r.simulation.peak_bytes) / static_cast<double>(budget),
                            100.0 * r.simulation.slowdown, r.simulations);
    }
    fmt::print("{}\n{}", row, detail);
    std::fflush(stdout);
  }
  return 0;
}
