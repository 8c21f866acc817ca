// The offline driver behind `memtool simulate --budget`: option values, and the report on the
// fixtures (a PyTorch snapshot, which has no launches, and a memtool trace of conv_train).
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "detail/load_model.hpp"
#include "detail/simulate_swap.hpp"
#include "iteration_builder.hpp"

namespace mc = memtool::cli;
namespace ms = memtool::swapper;

namespace {

std::string fixture(const std::string& name) { return std::string(MEMTOOL_FIXTURES_DIR) + "/traces/" + name; }

mc::SimulateSwapOptions quick(const std::string& budgets) {
  mc::SimulateSwapOptions options;
  options.budgets = mc::parse_budgets(budgets);
  options.max_simulations = 300;
  return options;
}

}  // namespace

TEST_CASE("budgets: bytes with units or a share of the plain peak", "[swapper][cli]") {
  CHECK(mc::parse_budget("80%").fraction == Approx(0.8));
  CHECK(mc::parse_budget("80%").bytes == 0);
  CHECK(mc::parse_budget("512M").bytes == 512ull << 20);
  CHECK(mc::parse_budget("1.5G").bytes == 3ull << 29);
  CHECK(mc::parse_budget("4GiB").bytes == 4ull << 30);
  CHECK(mc::parse_budget("123456").bytes == 123456);
  for (const char* bad : {"", "abc", "0%", "120%", "5X", "-1G", "0"}) {
    INFO(bad);
    CHECK_THROWS_AS(mc::parse_budget(bad), std::invalid_argument);
  }
  const auto list = mc::parse_budgets("90%, 80%,1G");
  REQUIRE(list.size() == 3);
  CHECK(list[1].text == "80%");
  CHECK(list[2].bytes == 1ull << 30);
  try {
    (void)mc::parse_budget("5X");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("'5X'") != std::string::npos);
  }
}

TEST_CASE("link rates, compute models and strategy lists", "[swapper][cli]") {
  CHECK(mc::parse_rate("55GB/s") == Approx(55.0));
  CHECK(mc::parse_rate("900MB/s") == Approx(0.9));
  CHECK(mc::parse_rate("1GiB/s") == Approx(1.073741824));
  CHECK(mc::parse_rate("12.5GB") == Approx(12.5));
  CHECK(mc::parse_rate("51G/s") == Approx(51 * 1.073741824));  // the one size grammar: G is 2^30
  for (const char* bad : {"fast", "0GB/s", "12.5 GB", "55 furlongs/s", "60%"}) {
    CHECK_THROWS_AS(mc::parse_rate(bad), std::invalid_argument);
  }
  CHECK(mc::parse_compute("bytes") == ms::ComputeModel::bytes);
  CHECK(mc::parse_compute("GPU") == ms::ComputeModel::gpu);
  CHECK_THROWS_AS(mc::parse_compute("guess"), std::invalid_argument);
  CHECK(mc::parse_strategies("ours,paper-doa") == std::vector<std::string>{"ours", "paper-doa"});
  CHECK_THROWS_AS(mc::parse_strategies("ours,smartswap"), std::invalid_argument);
}

TEST_CASE("a PyTorch snapshot: every strategy at every budget, with the bound and the curve", "[swapper][cli]") {
  const mc::LoadedModel loaded = mc::load_model(fixture("alexnet.snapshot.json"), {});
  const mc::SwapReport report = mc::simulate_swap(mc::swap_source(loaded, {}), quick("90%,70%"));
  CHECK(report.ops > 100);
  CHECK(report.compute == ms::ComputeModel::bytes);  // a snapshot has no times
  CHECK_FALSE(report.notes.empty());                 // the allocation/free assumption is said
  CHECK(report.budget_bytes.size() == 2);
  CHECK(report.budget_bytes[0] ==
        static_cast<std::uint64_t>(std::llround(0.9 * static_cast<double>(report.plain_peak_bytes))));
  CHECK(report.rows.size() == 2 * 11);  // 5 strategies x 2 modes + save-on-cpu, per budget
  CHECK(report.bound.peak_bytes <= report.plain_peak_bytes);
  for (const mc::SwapRow& row : report.rows) {
    INFO(row.strategy << " " << mc::to_string(row.mode));
    CHECK(row.peak_bytes <= report.plain_peak_bytes);
    CHECK(row.budget_met == (row.peak_bytes <= row.budget_bytes));
    if (row.strategy == "ours" && row.mode == ms::ScheduleMode::no_overhead) CHECK(row.stall_ns == 0);
    if (row.stall_ns == 0) CHECK(row.peak_bytes >= report.bound.peak_bytes);
  }

  const std::string text = mc::swap_report_text(report);
  for (const char* part : {"bound", "plain peak", "budget 90%", "budget 70%", "curve", "paper-vote", "save-on-cpu",
                           "stick-to-limit", "note:"}) {
    INFO(part);
    CHECK(text.find(part) != std::string::npos);
  }

  const nlohmann::json j = mc::swap_report_json(report);
  CHECK(j["plain_peak_bytes"] == report.plain_peak_bytes);
  CHECK(j["bound_peak_bytes"] == report.bound.peak_bytes);
  CHECK(j["compute_model"] == "bytes");
  REQUIRE(j["results"].size() == report.rows.size());
  const nlohmann::json& first = j["results"][0];
  for (const char* key : {"strategy", "mode", "budget_bytes", "peak_bytes", "budget_met", "bytes_out", "bytes_in",
                          "stall_ns", "slowdown", "swaps", "construction"}) {
    INFO(key);
    CHECK(first.contains(key));
  }
}

TEST_CASE("a memtool trace: its launches are the ops, host gaps their durations", "[swapper][cli]") {
  const mc::LoadedModel loaded = mc::load_model(fixture("conv_train.mtrace"), {});
  mc::SimulateSwapOptions options = quick("80%");
  options.strategies = {"ours", "paper-doa"};
  options.link.d2h_bytes_per_ns = options.link.h2d_bytes_per_ns = mc::parse_rate("12GB/s");
  const mc::SwapReport report = mc::simulate_swap(mc::swap_source(loaded, options.input), options);
  CHECK(report.ops > 0);
  CHECK(report.compute == ms::ComputeModel::host);
  CHECK(report.rows.size() == 4);
  CHECK(report.link.d2h_bytes_per_ns == Approx(12.0));
  CHECK(mc::swap_report_text(report).find("curve") == std::string::npos);  // one budget: no curve

  mc::SimulateSwapOptions bytes = quick("80%");
  bytes.input.compute = ms::ComputeModel::bytes;
  CHECK(mc::simulate_swap(mc::swap_source(loaded, bytes.input), bytes).compute == ms::ComputeModel::bytes);
}

TEST_CASE("--pool: every row gets the pool re-planned for its schedule, free and at the same address",
          "[swapper][cli]") {
  const mc::LoadedModel loaded = mc::load_model(fixture("lstm.snapshot.json"), {});
  mc::SimulateSwapOptions options = quick("80%");
  options.strategies = {"ours", "paper-vote"};
  options.pool = true;
  options.pool_time_limit_seconds = 0.1;
  const mc::SwapReport report = mc::simulate_swap(mc::swap_source(loaded, options.input), options);
  REQUIRE(report.rows.size() == 4);
  bool swapped = false;
  for (const mc::SwapRow& row : report.rows) {
    INFO(row.strategy << " " << mc::to_string(row.mode) << ": peak " << row.peak_bytes << ", lower bound "
                      << row.pool_lower_bound_bytes << ", pool " << row.pool_bytes << ", same address "
                      << row.pool_bytes_same_address);
    swapped = swapped || row.swaps > 0;
    // The residencies at the simulator's times: at least the peak, at most its 512-byte padding more.
    CHECK(row.pool_lower_bound_bytes >= row.peak_bytes);
    CHECK(static_cast<double>(row.pool_lower_bound_bytes) <= 1.01 * static_cast<double>(row.peak_bytes));
    CHECK(row.pool_bytes >= row.pool_lower_bound_bytes);
    CHECK(row.pool_bytes_same_address >= row.pool_lower_bound_bytes);
  }
  CHECK(swapped);
  const std::string text = mc::swap_report_text(report);
  CHECK(text.find("same address") != std::string::npos);
  CHECK(text.find("pool/peak") != std::string::npos);
  const nlohmann::json j = mc::swap_report_json(report);
  for (const char* key : {"pool_bytes", "pool_bytes_same_address", "pool_lower_bound_bytes", "pool_over_peak",
                          "pool_same_address_over_peak", "pool_within_budget", "pool_same_address_within_budget"}) {
    INFO(key);
    CHECK(j["results"][0].contains(key));
  }
  CHECK(j["results"][0]["pool_bytes"] == report.rows[0].pool_bytes);

  // Without --pool the report says nothing of pools.
  const mc::SwapReport plain = mc::simulate_swap(mc::swap_source(loaded, {}), quick("80%"));
  CHECK(mc::swap_report_text(plain).find("same address") == std::string::npos);
  CHECK_FALSE(mc::swap_report_json(plain)["results"][0].contains("pool_bytes"));
}

// --as-executor: stick-to-limit schedules simulated holding the budget, the rule alone as a row of
// its own, ours' runners-up listed; a schedule with no swaps held is the rule alone.
TEST_CASE("--as-executor: schedules as the executor runs them, the rule alone, ours' runners-up", "[swapper][cli]") {
  const mc::LoadedModel loaded = mc::load_model(fixture("conv_train.mtrace"), {});
  mc::SimulateSwapOptions options = quick("90%");
  options.strategies = mc::parse_strategies("ours,paper-doa,belady");
  options.as_executor = true;
  const mc::SwapReport report = mc::simulate_swap(mc::swap_source(loaded, options.input), options);
  REQUIRE(report.rows.size() == 5);  // ours and paper-doa in both modes, the rule in one
  const auto row = [&](const std::string& name, ms::ScheduleMode mode) -> const mc::SwapRow& {
    for (const mc::SwapRow& r : report.rows) {
      if (r.strategy == name && r.mode == mode) return r;
    }
    FAIL("no row " << name);
    return report.rows.front();
  };
  const mc::SwapRow& rule = row("belady", ms::ScheduleMode::stick_to_limit);
  CHECK(rule.swaps == 0);
  CHECK(rule.rule_swaps > 0);
  CHECK(rule.budget_met);
  const mc::SwapRow& doa = row("paper-doa", ms::ScheduleMode::stick_to_limit);
  if (doa.swaps == 0) {
    CHECK(doa.peak_bytes == rule.peak_bytes);
    CHECK(doa.stall_ns == rule.stall_ns);
    CHECK(doa.rule_bytes_out == rule.rule_bytes_out);
  }
  const mc::SwapRow& ours = row("ours", ms::ScheduleMode::stick_to_limit);
  CHECK(ours.budget_met);
  REQUIRE(!ours.runners_up.empty());
  CHECK(!ours.runners_up.front().construction.empty());
  const nlohmann::json j = mc::swap_report_json(report);
  CHECK(j.at("as_executor") == true);
  for (const nlohmann::json& r : j.at("results")) {
    CHECK(r.contains("rule_swaps"));
    CHECK(r.contains("runners_up"));
    // A runner-up's rule's copies out: what the process's selector calibrates by.
    for (const nlohmann::json& up : r.at("runners_up")) CHECK(up.contains("rule_swaps"));
  }
  CHECK(mc::swap_report_text(report).find("runner-up 1") != std::string::npos);
  // Without it, no rule row unless asked, and the JSON says so.
  mc::SimulateSwapOptions plain = quick("90%");
  plain.strategies = {"ours"};
  CHECK(mc::swap_report_json(mc::simulate_swap(mc::swap_source(loaded, plain.input), plain)).at("as_executor") ==
        false);
}

// --as-executor: the host ahead of the GPU, as the executor's (SimulateOptions::host_ahead). 3 ops
// of 1 us, A (4000 B, ops 0-1), B (4000 B, op 2), budget 6000, 100 ns back from a wait: op 2 waits
// for A's free, op 0 for B's (test_host_ahead.cpp): 3200 ns, where the planners' model has 3000.
TEST_CASE("--as-executor: the host decides ahead of the GPU", "[swapper][cli]") {
  mc::SwapSource source;
  source.iteration = memtool::test::ops_of(3, 1000);
  memtool::test::add_buffer(source.iteration, 4000, 0, 1, {0, 1});
  memtool::test::add_buffer(source.iteration, 4000, 2, 2, {2});
  source.host.per_sync_ns = 100;
  mc::SimulateSwapOptions options;
  options.budgets.push_back(mc::BudgetSpec{6000, 0, "6000 B"});
  options.link = memtool::test::simple_link();
  options.host = source.host;
  options.strategies = {"belady"};
  options.as_executor = true;
  const mc::SwapReport report = mc::simulate_swap(source, options);
  REQUIRE(report.rows.size() == 1);
  CHECK(report.rows[0].time_ns == 3200);
}

TEST_CASE("planning a long iteration prints a line as the bound and each plan start and end",
          "[swapper][cli][progress]") {
  const mc::LoadedModel loaded = mc::load_model(fixture("conv_train.mtrace"), {});
  const mc::SwapSource source = mc::swap_source(loaded, {});
  mc::SimulateSwapOptions options = quick("80%");
  options.strategies = {"ours", "paper-doa"};
  std::FILE* lines = std::tmpfile();
  REQUIRE(lines != nullptr);
  options.progress = lines;
  options.progress_min_ops = source.iteration.ops.size() + 1;  // not long enough: nothing
  (void)mc::simulate_swap(source, options);
  CHECK(std::ftell(lines) == 0);
  options.progress_min_ops = source.iteration.ops.size();
  (void)mc::simulate_swap(source, options);
  std::rewind(lines);
  std::string text;
  for (int c = std::fgetc(lines); c != EOF; c = std::fgetc(lines)) text += static_cast<char>(c);
  std::fclose(lines);
  CHECK(text.find("memtool: computing the zero-stall bound: ") != std::string::npos);
  CHECK(text.find("memtool: computed the zero-stall bound: ") != std::string::npos);
  // Both strategies in both modes, each started and ended.
  for (const char* label :
       {"ours (no-overhead)", "ours (stick-to-limit)", "paper-doa (no-overhead)", "paper-doa (stick-to-limit)"}) {
    INFO(label << "\n" << text);
    CHECK(text.find(std::string("memtool: planning ") + label) != std::string::npos);
    CHECK(text.find(std::string("memtool: planned ") + label) != std::string::npos);
  }
}
