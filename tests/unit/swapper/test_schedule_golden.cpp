// The schedules every strategy makes on the shared small problems stay what they were: the real
// iterations of tests/fixtures/traces (alexnet, mobilenet_v2, lstm, gpt_tiny, bert_tiny) at 80%,
// 60% and 50% of their plain peak over a fast and a slow link, and the problem the lstm process
// planned from (tests/fixtures/swap/lstm60.problem), each strategy in both modes (ours also with
// a 10% stall allowance). One line per plan, compared with tests/fixtures/swap/schedules.golden:
// the swap count, what built it, the predicted peak and stall, and a digest of every swap of the
// schedule and of its runners-up. Work on the planner's speed must leave every line as it is;
// a deliberate change of the schedules rewrites the file (MEMTOOL_GOLDEN_WRITE=1) and says why.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memtool/swapper/plan.hpp"
#include "memtool/swapper/problem.hpp"
#include "real_iterations.hpp"

namespace ms = memtool::swapper;

namespace {

std::string golden_path() { return std::string(MEMTOOL_FIXTURES_DIR) + "/swap/schedules.golden"; }

// FNV-1a over 64-bit words: a digest that is the same on every platform.
class Digest {
 public:
  void add(std::uint64_t word) {
    for (int k = 0; k < 8; ++k) {
      hash_ ^= (word >> (8 * k)) & 0xffU;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void add(const ms::Schedule& schedule) {
    add(schedule.swaps.size());
    for (const ms::Swap& s : schedule.swaps) {
      add(s.gap.buffer);
      add(s.gap.after_access);
      add(s.gap.from_op);
      add(s.gap.to_op);
      add(s.out_after_op);
      add(s.in_at_op);
      add(s.out_wait_op);
    }
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string line_of(const std::string& label, const ms::PlanResult& r) {
  Digest digest;
  digest.add(r.schedule);
  for (const ms::PlanResult::Alternative& alt : r.alternatives) digest.add(alt.schedule);
  return fmt::format("{}: swaps={} construction={} peak={} stall_ns={} alternatives={} digest={:016x}", label,
                     r.schedule.swaps.size(), r.construction, r.simulation.peak_bytes,
                     std::llround(r.simulation.stall_ns), r.alternatives.size(), digest.value());
}

void plan_all(const std::string& name, const ms::Iteration& it, const ms::Link& link, std::uint64_t budget,
              std::vector<std::string>& lines) {
  struct Variant {
    ms::ScheduleMode mode;
    double max_slowdown;
    const char* label;
  };
  constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  const Variant variants[] = {{ms::ScheduleMode::no_overhead, kUnlimited, "no-overhead"},
                              {ms::ScheduleMode::stick_to_limit, kUnlimited, "stick-to-limit"},
                              {ms::ScheduleMode::stick_to_limit, 0.1, "stick-to-limit/10%"}};
  for (const ms::StrategyInfo& strategy : ms::strategies()) {
    for (const Variant& v : variants) {
      if (v.max_slowdown != kUnlimited && strategy.name != "ours") continue;  // only ours reads it
      ms::PlanOptions options;
      options.mode = v.mode;
      options.max_slowdown = v.max_slowdown;
      const ms::PlanResult r = ms::plan(it, link, budget, strategy.name, options);
      lines.push_back(line_of(fmt::format("{} budget={} {} {}", name, budget, strategy.name, v.label), r));
    }
  }
}

std::vector<std::string> all_lines() {
  std::vector<std::string> lines;
  ms::Link fast;  // 55 GB/s each way, the default
  ms::Link slow;
  slow.d2h_bytes_per_ns = slow.h2d_bytes_per_ns = 0.55;  // lstm60's link, about
  slow.d2h_latency_ns = slow.h2d_latency_ns = 90'000;
  for (const char* model : {"alexnet", "mobilenet_v2", "lstm", "gpt_tiny", "bert_tiny"}) {
    const ms::Iteration& it = memtool::test::real_iteration(model).iteration;
    const std::uint64_t plain = ms::plain_peak_bytes(it);
    for (const double share : {0.8, 0.6, 0.5}) {
      const auto budget = static_cast<std::uint64_t>(std::llround(share * static_cast<double>(plain)));
      plan_all(fmt::format("{} fast", model), it, fast, budget, lines);
      plan_all(fmt::format("{} slow", model), it, slow, budget, lines);
    }
  }
  std::ifstream in(std::string(MEMTOOL_FIXTURES_DIR) + "/swap/lstm60.problem");
  REQUIRE(in);
  const ms::Problem problem = ms::read_problem(in);
  plan_all("lstm60.problem", problem.iteration, problem.link, problem.budget_bytes, lines);
  return lines;
}

}  // namespace

TEST_CASE("every strategy's schedules on the shared problems are those of the golden file", "[swapper][golden]") {
  const std::vector<std::string> lines = all_lines();
  if (const char* write = std::getenv("MEMTOOL_GOLDEN_WRITE"); write != nullptr && std::string(write) == "1") {
    std::ofstream out(golden_path(), std::ios::trunc);
    out << "# memtool swap schedules on the shared problems (tests/unit/swapper/test_schedule_golden.cpp)\n";
    for (const std::string& line : lines) out << line << '\n';
    REQUIRE(out.good());
    WARN("rewrote " << golden_path());
    return;
  }
  std::ifstream in(golden_path());
  REQUIRE(in);
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') expected.push_back(line);
  }
  REQUIRE(lines.size() == expected.size());
  for (std::size_t k = 0; k < lines.size(); ++k) {
    INFO("plan " << k);
    CHECK(lines[k] == expected[k]);
  }
}
