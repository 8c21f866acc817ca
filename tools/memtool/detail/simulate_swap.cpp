// The offline swap what-if (simulate_swap.hpp).
#include "detail/simulate_swap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <sstream>
#include <optional>
#include <stdexcept>

#include "detail/size_arg.hpp"
#include "detail/text_format.hpp"
#include "memtool/swapper/problem.hpp"
#include "memtool/swapper/simulate.hpp"
#include "memtool/swapper/swap_pool.hpp"
#include "memtool/trace/name_table.hpp"

namespace memtool::cli {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t comma = text.find(',');
    parts.push_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) return parts;
    text.remove_prefix(comma + 1);
  }
}

std::string percent(double value) { return fmt::format("{:.1f}%", 100.0 * value); }

std::string ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }

SwapRow make_row(const std::string& name, swapper::ScheduleMode mode, std::uint64_t budget,
                 const swapper::PlanResult& result) {
  const swapper::Simulation& sim = result.simulation;
  SwapRow row;
  row.strategy = name;
  row.mode = mode;
  row.budget_bytes = budget;
  row.peak_bytes = sim.peak_bytes;
  row.budget_met = sim.peak_bytes <= budget;
  row.bytes_out = sim.bytes_out;
  row.bytes_in = sim.bytes_in;
  row.stall_ns = sim.stall_ns;
  row.slowdown = sim.slowdown;
  row.d2h_busy_ns = sim.d2h_busy_ns;
  row.h2d_busy_ns = sim.h2d_busy_ns;
  row.swaps = result.schedule.swaps.size();
  row.construction = result.construction;
  row.rule_swaps = sim.rule_swaps;
  row.rule_bytes_out = sim.rule_bytes_out;
  row.time_ns = sim.time_ns;
  row.copies = sim.copies_issued;
  row.leaves_called_off = sim.leaves_called_off;
  return row;
}

std::string ratio(std::uint64_t bytes, std::uint64_t of) {
  return of > 0 ? fmt::format("{:.4f}", static_cast<double>(bytes) / static_cast<double>(of)) : "-";
}

}  // namespace

std::string_view to_string(swapper::ScheduleMode mode) {
  return mode == swapper::ScheduleMode::no_overhead ? "no-overhead" : "stick-to-limit";
}

BudgetSpec parse_budget(std::string_view text) {
  text = trim(text);
  const trace::ByteSize size =
      parse_size_arg("budget", text, {.share_of = "the iteration's plain peak", .zero = false, .rate = false});
  BudgetSpec spec;
  spec.text = std::string(text);
  spec.bytes = size.bytes;
  spec.fraction = size.percent / 100.0;
  return spec;
}

std::vector<BudgetSpec> parse_budgets(std::string_view text) {
  std::vector<BudgetSpec> budgets;
  for (const std::string_view part : split(text)) budgets.push_back(parse_budget(part));
  return budgets;
}

double parse_rate(std::string_view text) {
  const trace::ByteSize size = parse_size_arg("rate", trim(text), {.share_of = {}, .zero = false, .rate = true});
  return static_cast<double>(size.bytes) / 1e9;
}

swapper::ComputeModel parse_compute(std::string_view text) {
  const std::string value = lower(trim(text));
  if (value == "auto") return swapper::ComputeModel::automatic;
  if (value == "gpu") return swapper::ComputeModel::gpu;
  if (value == "host") return swapper::ComputeModel::host;
  if (value == "bytes") return swapper::ComputeModel::bytes;
  throw std::invalid_argument(fmt::format("compute model '{}': expected auto, gpu, host or bytes", text));
}

std::vector<std::string> parse_strategies(std::string_view text) {
  std::vector<std::string> names;
  for (const std::string_view part : split(text)) {
    if (swapper::find_strategy(part) == nullptr && part != kRuleAlone) {
      throw std::invalid_argument(fmt::format("swap strategy '{}': expected one of {}, {}", part,
                                              trace::names_of(swapper::strategies()), kRuleAlone));
    }
    names.emplace_back(part);
  }
  return names;
}

SwapSource swap_source(const LoadedModel& loaded, const swapper::TraceInputOptions& options) {
  swapper::TraceInput input = swapper::to_swap_input(loaded.model, loaded.iterations, options);
  SwapSource source;
  source.path = loaded.path;
  source.input_kind = describe_input(loaded.summary);
  source.iteration_index = input.iteration_index;
  source.compute = input.compute;
  source.notes = std::move(input.notes);
  source.iteration = std::move(input.iteration);
  return source;
}

SwapSource swap_problem_source(std::string_view text, const std::string& path) {
  std::istringstream in{std::string(text)};
  swapper::Problem problem = swapper::read_problem(in);
  SwapSource source;
  source.path = path;
  source.input_kind = "swap problem from a process (MEMTOOL_SWAP_DUMP)";
  source.compute = swapper::ComputeModel::gpu;
  source.notes.push_back(
      "op durations, link and budget as the process planned with them (GPU timing events, or host gaps where it had "
      "none); the stick-to-limit rows are simulated as its executor runs them");
  source.iteration = std::move(problem.iteration);
  source.link = problem.link;
  source.budget_bytes = problem.budget_bytes;
  source.host = problem.host;
  return source;
}

namespace {

// Progress lines for one plan (or the bound) of a long iteration (SimulateSwapOptions::progress).
class PlanProgress {
 public:
  static constexpr auto kInterval = std::chrono::seconds(1);

  // `doing`, `done`: the verbs of the first and last lines ("planning", "planned").
  PlanProgress(std::FILE* out, std::string label, std::string_view doing = "planning",
               std::string_view done = "planned")
      : out_(out), label_(std::move(label)), done_(done) {
    if (out_ != nullptr) fmt::print(out_, "memtool: {} {}\n", doing, label_);
    started_ = last_ = std::chrono::steady_clock::now();
  }
  PlanProgress(const PlanProgress&) = delete;
  PlanProgress& operator=(const PlanProgress&) = delete;
  ~PlanProgress() {
    if (out_ == nullptr) return;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started_;
    fmt::print(out_, "memtool: {} {} in {:.1f} s\n", done_, label_, took.count());
  }
  void simulations(std::uint32_t done, std::uint32_t limit) {
    const auto now = std::chrono::steady_clock::now();
    if (out_ == nullptr || now - last_ < kInterval) return;
    last_ = now;
    fmt::print(out_, "memtool: planning {}: {} of at most {} simulations\n", label_, done, limit);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  std::string label_;
  std::string_view done_;
  std::chrono::steady_clock::time_point started_, last_;
};

}  // namespace

SwapReport simulate_swap(const SwapSource& source, const SimulateSwapOptions& options) {
  if (options.budgets.empty()) throw std::invalid_argument("no budget given");
  const swapper::Iteration& iteration = source.iteration;
  SwapReport report;
  report.path = source.path;
  report.input_kind = source.input_kind;
  report.iteration_index = source.iteration_index;
  report.ops = iteration.ops.size();
  report.buffers = iteration.buffers.size();
  for (const swapper::Buffer& b : iteration.buffers) report.persistent_bytes += b.persistent ? b.size : 0;
  report.base_time_ns = static_cast<double>(swapper::base_time_ns(iteration, options.host.whole_sync_ns()));
  report.plain_peak_bytes = swapper::plain_peak_bytes(iteration);
  {
    // The bound is O(ops x open windows): on a long iteration, the first thing that takes time.
    std::optional<PlanProgress> progress;
    if (options.progress != nullptr && iteration.ops.size() >= options.progress_min_ops) {
      progress.emplace(
          options.progress,
          fmt::format("the zero-stall bound: {} ops, {} buffers", iteration.ops.size(), iteration.buffers.size()),
          "computing", "computed");
    }
    report.bound = swapper::bound(iteration, options.link);
  }
  report.compute = source.compute;
  report.link = options.link;
  report.notes = source.notes;
  report.budgets = options.budgets;
  report.pool = options.pool;
  report.as_executor = options.as_executor;
  report.host = options.host;
  swapper::SwapPoolOptions pool_options;
  pool_options.time_limit_seconds = options.pool_time_limit_seconds;

  std::vector<std::string> names = options.strategies;
  if (names.empty()) {
    for (const swapper::StrategyInfo& s : swapper::strategies()) names.emplace_back(s.name);
    if (options.as_executor) names.emplace_back(kRuleAlone);
  }
  std::optional<swapper::PlanResult> save_on_cpu;  // the same at every budget and mode
  std::optional<swapper::SwapPool> save_on_cpu_pool;
  for (const BudgetSpec& spec : options.budgets) {
    const std::uint64_t budget =
        spec.bytes != 0
            ? spec.bytes
            : static_cast<std::uint64_t>(std::llround(spec.fraction * static_cast<double>(report.plain_peak_bytes)));
    report.budget_bytes.push_back(budget);
    // The executor's model (its leads learnt, its host ahead); the planners keep theirs.
    const swapper::SimulateOptions held = swapper::SimulateOptions::as_executor(budget, options.host);
    for (const std::string& name : names) {
      for (const swapper::ScheduleMode mode :
           {swapper::ScheduleMode::no_overhead, swapper::ScheduleMode::stick_to_limit}) {
        // One row each: save-on-cpu has no budget to meet, the rule always holds one.
        if (name == "save-on-cpu" && mode == swapper::ScheduleMode::stick_to_limit) continue;
        if (name == kRuleAlone && mode == swapper::ScheduleMode::no_overhead) continue;
        swapper::PlanOptions plan_options;
        plan_options.mode = mode;
        plan_options.max_slowdown = options.max_slowdown;
        plan_options.max_simulations = options.max_simulations;
        swapper::PlanResult result;
        std::optional<std::uint64_t> planned_peak;  // the planner's, before an executor's simulation
        if (name == kRuleAlone) {
          result.simulation = swapper::simulate(iteration, {}, options.link, held);
          result.construction = "the executor's rule alone";
        } else if (name == "save-on-cpu" && save_on_cpu) {
          result = *save_on_cpu;
        } else {
          std::optional<PlanProgress> progress;
          if (options.progress != nullptr && iteration.ops.size() >= options.progress_min_ops) {
            progress.emplace(options.progress, fmt::format("{} ({}) at {} B: {} ops, {} buffers", name, to_string(mode),
                                                           budget, iteration.ops.size(), iteration.buffers.size()));
            plan_options.progress = [&progress](std::uint32_t done, std::uint32_t limit) {
              progress->simulations(done, limit);
            };
          }
          result = swapper::plan(iteration, options.link, budget, name, plan_options);
          if (name == "save-on-cpu") save_on_cpu = result;
          planned_peak = result.simulation.peak_bytes;
          // As the process runs it: the executor holds the budget (ours, judged so already where it
          // holds one, simulates the same again).
          if (options.as_executor && mode == swapper::ScheduleMode::stick_to_limit && name != "save-on-cpu") {
            result.simulation = swapper::simulate(iteration, result.schedule, options.link, held);
          }
        }
        SwapRow row = make_row(name, mode, budget, result);
        row.planned_peak_bytes = planned_peak.value_or(row.peak_bytes);
        if (options.as_executor) {
          for (const swapper::PlanResult::Alternative& alt : result.alternatives) {
            row.runners_up.push_back({alt.construction, alt.schedule.swaps.size(), alt.simulation.peak_bytes,
                                      alt.simulation.stall_ns, alt.simulation.slowdown, alt.simulation.rule_bytes_out,
                                      alt.simulation.rule_swaps});
          }
        }
        if (options.pool) {
          const bool cached = name == "save-on-cpu" && save_on_cpu_pool;
          const swapper::SwapPool pool =
              cached ? *save_on_cpu_pool
                     : swapper::plan_swap_pool(iteration, result.schedule, result.simulation, pool_options);
          if (name == "save-on-cpu") save_on_cpu_pool = pool;
          row.pool_bytes = pool.pool_bytes;
          row.pool_bytes_same_address = pool.pool_bytes_same_address;
          row.pool_lower_bound_bytes = pool.lower_bound_bytes;
        }
        report.rows.push_back(std::move(row));
      }
    }
  }
  return report;
}

std::string swap_report_text(const SwapReport& r) {
  std::string out;
  const double plain = static_cast<double>(r.plain_peak_bytes);
  const auto of_plain = [&](std::uint64_t bytes) {
    return plain > 0 ? percent(static_cast<double>(bytes) / plain) : "-";
  };
  out += fmt::format("memtool simulate: {} ({})\n", r.path, r.input_kind);
  out += fmt::format("  iteration {}: {} ops, {} buffers ({} persistent), {} without swapping (compute model: {})\n",
                     r.iteration_index, r.ops, r.buffers, human_bytes(r.persistent_bytes), ms(r.base_time_ns),
                     swapper::to_string(r.compute));
  out += fmt::format("  link: {:.3g} GB/s out, {:.3g} GB/s in, {} us latency, duplex factor {:.2f}\n",
                     r.link.d2h_bytes_per_ns, r.link.h2d_bytes_per_ns, static_cast<double>(r.link.d2h_latency_ns) / 1e3,
                     r.link.duplex_factor);
  if (r.as_executor) {
    out +=
        "  stick-to-limit rows as memtool's executor runs them: planned waits not run, the budget held with its rule "
        "(belady: the rule alone; runners-up: what ours' trial in the process times after its schedule)\n";
    if (!r.host.none()) {
      out += fmt::format(
          "  the executor's host costs in them: {:.3f} us an op, {:.3f} us a copy, {:.3f} us back from a wait\n",
          r.host.per_op_ns / 1e3, r.host.per_copy_ns / 1e3, r.host.per_sync_ns / 1e3);
    }
  }
  out += fmt::format("  plain peak: {}\n", human_bytes_exact(r.plain_peak_bytes));
  out += fmt::format("  bound (no schedule without stall goes lower): {} ({} of the plain peak)\n",
                     human_bytes_exact(r.bound.peak_bytes), of_plain(r.bound.peak_bytes));
  for (const std::string& note : r.notes) out += fmt::format("  note: {}\n", note);
  for (std::size_t b = 0; b < r.budgets.size(); ++b) {
    const std::uint64_t budget = r.budget_bytes[b];
    out += fmt::format("\nbudget {} ({}, {} of the plain peak)\n", r.budgets[b].text, human_bytes(budget),
                       of_plain(budget));
    std::vector<std::string> header{"strategy",  "mode",  "peak",     "of plain", "within",
                                    "moved out", "stall", "slowdown", "swaps"};
    if (r.as_executor) {
      header.emplace_back("rule out");
      header.emplace_back("rule swaps");
    }
    if (r.pool) {
      for (const char* column : {"pool", "pool/peak", "same address", "same/peak", "pool within"})
        header.emplace_back(column);
    }
    TextTable table(header, {true, true});
    for (const SwapRow& row : r.rows) {
      if (row.budget_bytes != budget) continue;
      std::vector<std::string> cells{row.strategy,
                                     std::string(to_string(row.mode)),
                                     human_bytes(row.peak_bytes),
                                     of_plain(row.peak_bytes),
                                     row.budget_met ? "yes" : "no",
                                     human_bytes(row.bytes_out),
                                     ms(row.stall_ns),
                                     percent(row.slowdown),
                                     std::to_string(row.swaps)};
      if (r.as_executor) {
        cells.push_back(human_bytes(row.rule_bytes_out));
        cells.push_back(std::to_string(row.rule_swaps));
      }
      if (r.pool) {
        cells.push_back(human_bytes(row.pool_bytes));
        cells.push_back(ratio(row.pool_bytes, row.peak_bytes));
        cells.push_back(human_bytes(row.pool_bytes_same_address));
        cells.push_back(ratio(row.pool_bytes_same_address, row.peak_bytes));
        // Whether the budget holds in pool bytes: under both rules, or only when a swapped-in
        // buffer may come back elsewhere.
        cells.push_back(row.pool_bytes_same_address <= budget ? "yes" : row.pool_bytes <= budget ? "free only" : "no");
      }
      table.add_row(cells);
      for (std::size_t k = 0; k < row.runners_up.size(); ++k) {
        const RunnerUp& up = row.runners_up[k];
        std::vector<std::string> line{fmt::format("  runner-up {}", k + 1),
                                      up.construction,
                                      human_bytes(up.peak_bytes),
                                      of_plain(up.peak_bytes),
                                      up.peak_bytes <= budget ? "yes" : "no",
                                      "",
                                      ms(up.stall_ns),
                                      percent(up.slowdown),
                                      std::to_string(up.swaps)};
        if (r.as_executor) {
          line.push_back(human_bytes(up.rule_bytes_out));
          line.push_back(std::to_string(up.rule_swaps));
        }
        line.resize(cells.size());
        table.add_row(line);
      }
    }
    out += table.render();
  }
  if (r.budgets.size() > 1) {
    out += "\ncurve: peak (of the plain peak) @ slowdown, per budget\n";
    std::vector<std::string> header{"strategy", "mode"};
    for (const BudgetSpec& spec : r.budgets) header.push_back(spec.text);
    TextTable table(header, {true, true});
    std::vector<std::pair<std::string, swapper::ScheduleMode>> keys;
    for (const SwapRow& row : r.rows) {
      const auto key = std::pair(row.strategy, row.mode);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
    for (const auto& [name, mode] : keys) {
      std::vector<std::string> cells{name, std::string(to_string(mode))};
      for (const std::uint64_t budget : r.budget_bytes) {
        std::string cell = "-";
        for (const SwapRow& row : r.rows) {
          if (row.strategy == name && row.mode == mode && row.budget_bytes == budget) {
            cell = of_plain(row.peak_bytes) + " @ " + percent(row.slowdown);
          }
        }
        cells.push_back(cell);
      }
      table.add_row(cells);
    }
    std::vector<std::string> bound_row{"bound", "zero stall"};
    for (std::size_t b = 0; b < r.budgets.size(); ++b) bound_row.push_back(of_plain(r.bound.peak_bytes) + " @ 0.0%");
    table.add_row(bound_row);
    out += table.render();
  }
  return out;
}

nlohmann::json swap_report_json(const SwapReport& r) {
  nlohmann::json j;
  j["input"] = r.path;
  j["input_kind"] = r.input_kind;
  j["iteration"] = r.iteration_index;
  j["ops"] = r.ops;
  j["buffers"] = r.buffers;
  j["persistent_bytes"] = r.persistent_bytes;
  j["base_time_ns"] = r.base_time_ns;
  j["compute_model"] = std::string(swapper::to_string(r.compute));
  j["plain_peak_bytes"] = r.plain_peak_bytes;
  j["bound_peak_bytes"] = r.bound.peak_bytes;
  j["link"] = {{"d2h_bytes_per_ns", r.link.d2h_bytes_per_ns},
               {"h2d_bytes_per_ns", r.link.h2d_bytes_per_ns},
               {"d2h_latency_ns", r.link.d2h_latency_ns},
               {"h2d_latency_ns", r.link.h2d_latency_ns},
               {"duplex_factor", r.link.duplex_factor}};
  j["notes"] = r.notes;
  j["as_executor"] = r.as_executor;
  if (r.as_executor)
    j["host"] = {
        {"per_op_ns", r.host.per_op_ns}, {"per_copy_ns", r.host.per_copy_ns}, {"per_sync_ns", r.host.per_sync_ns}};
  nlohmann::json results = nlohmann::json::array();
  for (const SwapRow& row : r.rows) {
    results.push_back({{"strategy", row.strategy},
                       {"mode", std::string(to_string(row.mode))},
                       {"budget_bytes", row.budget_bytes},
                       {"peak_bytes", row.peak_bytes},
                       {"budget_met", row.budget_met},
                       {"bytes_out", row.bytes_out},
                       {"bytes_in", row.bytes_in},
                       {"stall_ns", row.stall_ns},
                       {"slowdown", row.slowdown},
                       {"d2h_busy_ns", row.d2h_busy_ns},
                       {"h2d_busy_ns", row.h2d_busy_ns},
                       {"swaps", row.swaps},
                       {"construction", row.construction}});
    if (r.as_executor) {
      nlohmann::json& last = results.back();
      last["rule_swaps"] = row.rule_swaps;
      last["rule_bytes_out"] = row.rule_bytes_out;
      last["time_ns"] = row.time_ns;
      last["copies"] = row.copies;
      last["leaves_called_off"] = row.leaves_called_off;
      last["planned_peak_bytes"] = row.planned_peak_bytes;
      nlohmann::json ups = nlohmann::json::array();
      for (const RunnerUp& up : row.runners_up) {
        ups.push_back({{"construction", up.construction},
                       {"swaps", up.swaps},
                       {"peak_bytes", up.peak_bytes},
                       {"stall_ns", up.stall_ns},
                       {"slowdown", up.slowdown},
                       {"rule_bytes_out", up.rule_bytes_out},
                       {"rule_swaps", up.rule_swaps}});
      }
      last["runners_up"] = std::move(ups);
    }
    if (r.pool) {
      nlohmann::json& last = results.back();
      last["pool_bytes"] = row.pool_bytes;
      last["pool_bytes_same_address"] = row.pool_bytes_same_address;
      last["pool_lower_bound_bytes"] = row.pool_lower_bound_bytes;
      const double peak = static_cast<double>(row.peak_bytes);
      last["pool_over_peak"] = peak > 0 ? static_cast<double>(row.pool_bytes) / peak : 0.0;
      last["pool_same_address_over_peak"] = peak > 0 ? static_cast<double>(row.pool_bytes_same_address) / peak : 0.0;
      last["pool_within_budget"] = row.pool_bytes <= row.budget_bytes;
      last["pool_same_address_within_budget"] = row.pool_bytes_same_address <= row.budget_bytes;
    }
  }
  j["results"] = std::move(results);
  return j;
}

}  // namespace memtool::cli
