// Pool mode on real training runs: the recorded PyTorch logs of tests/fixtures/traces (alexnet,
// mobilenet_v2, lstm) replayed through the driver API by tests/apps/replay (one launch per
// operator, kernels that check what they read and fill what they write), plain and under
// MEMTOOL_STRATEGY=pool, synchronous and stream-ordered allocation, one thread and several.
// What must hold (issue 9): the planned period is the training step exactly (its allocation
// count from the fixtures' README), not a layer inside it; from the first planned step on every
// allocation comes from the plan, with no re-plan; not a word is corrupted; the device peak of
// the whole run is never above the plain run's, and what memtool holds stays within 1% of what
// the program asks for.
#include <catch2/catch.hpp>

#if MEMTOOL_HAVE_FAKECUDA && defined(REPLAY_TRAIN)

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "json_files.hpp"
#include "process.hpp"

namespace {

using memtool::testing::Outcome;
using memtool::testing::read_json;
using memtool::testing::run;
using memtool::testing::u;
using Env = std::map<std::string, std::string>;

struct Model {
  const char* name;
  std::uint64_t allocations_per_step;  // tests/fixtures/traces/README.md
};

std::string fresh_dir(const std::string& name) { return memtool::testing::fresh_work_dir("replay", name); }

struct Replay {
  Outcome outcome;
  nlohmann::json stats;    // fakecuda's
  nlohmann::json summary;  // memtool's (pool and record runs)
};

Replay replay(const std::string& dir, const Model& m, const std::vector<std::string>& extra, const Env& memtool_env) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> argv{REPLAY_TRAIN, "--log", std::string(REPLAY_FIXTURES_DIR) + "/traces/" + m.name + ".log"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Env env = memtool_env;
  env["LD_LIBRARY_PATH"] = FAKECUDA_DIR;
  env["FAKECUDA_STATS"] = dir + "/fakecuda.json";
  if (!memtool_env.empty()) {
    env["LD_PRELOAD"] = MEMTOOL_PRELOAD;
    env["MEMTOOL_SUMMARY"] = dir + "/summary.json";
    env["MEMTOOL_LOG"] = "info";
  }
  Replay r;
  r.outcome = run(argv, env, dir);
  INFO(r.outcome.err);
  REQUIRE(r.outcome.status == 0);  // 3 would be corrupted words
  r.stats = read_json(dir + "/fakecuda.json");
  if (!memtool_env.empty()) r.summary = read_json(dir + "/summary.json");
  return r;
}

// Every step line says "corrupted 0".
void check_clean(const Outcome& o, std::size_t steps) {
  const std::regex line("step [0-9]+ allocs [0-9]+ launches [0-9]+ corrupted 0\n");
  std::size_t clean = 0;
  for (std::sregex_iterator it(o.out.begin(), o.out.end(), line), end; it != end; ++it) ++clean;
  CHECK(clean == steps);
}

void check_model(const Model& m, const std::vector<std::string>& extra, std::size_t steps) {
  const std::string dir = fresh_dir(std::string(m.name) + (extra.empty() ? "" : extra.front()));
  INFO(m.name << " " << (extra.empty() ? "" : extra.front()));
  const Replay plain = replay(dir + "/plain", m, extra, {});
  const Replay pool =
      replay(dir + "/pool", m, extra, {{"MEMTOOL_STRATEGY", "pool"}, {"MEMTOOL_POOL_SYNC_PLANNING", "1"}});
  check_clean(plain.outcome, steps);
  check_clean(pool.outcome, steps);
  CHECK(pool.outcome.out == plain.outcome.out);
  const nlohmann::json& s = pool.summary;
  INFO(s.dump());
  // The step, not a layer of it.
  CHECK(u(s, "period_allocations") == m.allocations_per_step);
  CHECK(u(s, "plans_made") == 1);
  CHECK(u(s, "replans") == 0);
  CHECK(u(s, "periods_rejected") == 0);
  CHECK(u(s, "misses") == 0);
  // From the first planned step on, each one is served from the plan (>= 99% asked; all, here).
  REQUIRE(u(s, "iterations_planned") >= 3);
  CHECK(static_cast<double>(u(s, "allocs_from_pool")) >=
        0.99 * static_cast<double>(u(s, "iterations_planned") * m.allocations_per_step));
  // Never above the plain run's device peak; what memtool holds within 1% of what is asked.
  // (With cuMemFreeAsync fakecuda charges a freed buffer until its stream reaches the free, so
  // its peak there depends on how far the host ran ahead: only memtool's own count compares.)
  const bool async = std::find(extra.begin(), extra.end(), "--async") != extra.end();
  if (!async) CHECK(u(pool.stats, "peak_bytes_in_use") <= u(plain.stats, "peak_bytes_in_use"));
  CHECK(static_cast<double>(u(s, "peak_device_bytes_with_pool")) <=
        1.01 * static_cast<double>(u(s, "peak_device_bytes_without_pool")));
  CHECK(u(s, "pool_bytes") == u(s, "lower_bound_bytes"));
  CHECK(u(pool.stats, "bytes_in_use") == 0);
  WARN(m.name << (extra.empty() ? "" : " " + extra.front()) << ": step of " << u(s, "period_allocations")
              << " allocations, " << u(s, "iterations_planned") << " steps planned, " << u(s, "allocs_from_pool")
              << " from the pool; device peak " << u(pool.stats, "peak_bytes_in_use") << " B (plain "
              << u(plain.stats, "peak_bytes_in_use") << " B), pool " << u(s, "pool_bytes") << " B = LB");
}

}  // namespace

TEST_CASE("replay: alexnet served from a plan of its training step", "[integration][replay][alexnet]") {
  check_model({"alexnet", 180}, {}, 8);
  // Steps alternating between two threads (as a backward pass on its own thread would).
  check_model({"alexnet", 180}, {"--threads", "2"}, 8);
}

TEST_CASE("replay: mobilenet_v2 served from a plan of its training step", "[integration][replay][mobilenet]") {
  check_model({"mobilenet_v2", 2043}, {}, 8);
}

TEST_CASE("replay: lstm served from a plan of its training step", "[integration][replay][lstm]") {
  check_model({"lstm", 1903}, {}, 7);
  // Stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync), as PyTorch's cudaMallocAsync.
  check_model({"lstm", 1903}, {"--async"}, 7);
}

TEST_CASE("replay: record mode finds the training step and records every operator", "[integration][replay]") {
  const Model m{"alexnet", 180};
  const std::string dir = fresh_dir("alexnet_record");
  const Replay r = replay(dir, m, {}, {{"MEMTOOL_STRATEGY", "record"}, {"MEMTOOL_TRACE", dir + "/replay.trace"}});
  check_clean(r.outcome, 8);
  CHECK(u(r.summary, "period_allocations") == 180);
  CHECK(u(r.summary, "period_events") == 180 + 180 + 196);  // allocations, frees, launches
  CHECK_THAT(r.outcome.err, Catch::Contains("iteration found: 556 events (180 allocations"));
  CHECK(std::filesystem::file_size(dir + "/replay.trace") > 0);
}

TEST_CASE("replay: the kernels catch a corrupted word", "[integration][replay]") {
  const std::string dir = fresh_dir("alexnet_corrupt");
  std::vector<std::string> argv{REPLAY_TRAIN, "--log", std::string(REPLAY_FIXTURES_DIR) + "/traces/alexnet.log",
                                "--steps",    "2",     "--self-test-corrupt"};
  const Outcome o = run(argv, {{"LD_LIBRARY_PATH", FAKECUDA_DIR}}, dir);
  CHECK(o.status == 3);
  CHECK_THAT(o.err, Catch::Contains("CORRUPTED step 1"));
}

namespace {

// Swap mode (issue 10): the device holds a fraction of what the plain run needs. Without memtool
// the replay fails for lack of memory; under MEMTOOL_STRATEGY=swap with that budget it finishes
// with every word right, swapping idle buffers out and most of them back ahead of use.
//  - explicit (VMM copies): every budget down to 60% is met in fakecuda's own count; below what
//    one operator's buffers need at once memtool says so, and buffers it cannot bring back are
//    read from the host copy mapped at their address: slower, still exact.
//  - uvm: the same budgets, met by prefetches (a swap-in ahead that is needed later than what
//    needs the room is sent back).
struct SwapCase {
  unsigned percent = 80;
  Model model{"alexnet", 180};
  std::string mode = "explicit";
  bool attainable = true;
  bool async = false;
  std::string policy = {};  // MEMTOOL_SWAP_POLICY; set: the run is long enough for its schedule to apply
  unsigned steps = 6;
  double link_gbps = 0;  // FAKECUDA_LINK_GBPS (0: unlimited)
  // Set: no MEMTOOL_BUDGET, MEMTOOL_SWAP_RESERVE this: the budget is the device (fakecuda's
  // capacity, `percent` of the plain peak) less it.
  std::uint64_t reserve = 0;
};

// Steps enough for ours' choice even timed in turn: about six to learn and plan, two of the rule
// alone, then three for its schedule and for each of up to four runners-up.
constexpr unsigned kTrialSteps = 26;

// Ours' choice, from its log (swap/selector.hpp): the model chooses once the rule alone's
// baseline calibrates it, and its choice is checked against its prediction (refuted: chosen
// again; refuted twice: the rest timed in turn). What applies at the end is the last one chosen
// and confirmed, kept by the model as timed, said to be the fastest (in turn, or taken back), or
// the rule (chosen, none was faster, or the one kept did not stay as fast: its watch).
// `complete`: the run was long enough for the choice to be made (else it may stop part way).
void check_trial(const std::string& err, const nlohmann::json& s, bool complete) {
  const std::size_t plan = err.find("memtool swap: ours schedule: ");
  REQUIRE(plan != std::string::npos);
  const std::string planned = err.substr(plan, err.find('\n', plan) - plan);
  unsigned runners_up = 0;
  while (planned.find("runner-up " + std::to_string(runners_up + 1) + " (") != std::string::npos) ++runners_up;
  const bool own_timed = err.find("memtool swap: ours schedule has no swaps: the rule alone") == std::string::npos;
  CHECK(own_timed == (planned.find("ours schedule: 0 swaps") == std::string::npos));
  // Every candidate's step and the rule alone's predicted as the executor runs them.
  CHECK(planned.find("; as the executor runs them: schedule ") != std::string::npos);
  CHECK(planned.find(", the rule alone ") != std::string::npos);
  const unsigned candidates = runners_up + (own_timed ? 1 : 0);
  INFO(err);
  std::string fastest = "rule";
  unsigned verdicts = 0;
  unsigned choices = 0;
  unsigned refuted = 0;
  bool rule_from_leads = false;  // the rule alone applies, from the leads of its fastest iteration
  const std::string said = "memtool swap: ";
  const auto label_of = [&](const std::string& line, std::size_t end) {
    const std::size_t label = line.find(said) + said.size();
    return line.substr(label, end - label);
  };
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" ms): the rule alone from now on") != std::string::npos) fastest = "rule";  // the watch's
    // The rule alone from its leads: from now on, or for a window beside a schedule put back
    // (the schedule's recheck), which is what applies if the program ends in it.
    if (line.find("memtool swap: the rule alone from now on, from its leads") != std::string::npos ||
        line.find("memtool swap: the rule alone for a window, from its leads") != std::string::npos) {
      fastest = "rule";
      rule_from_leads = true;
    }
    const std::size_t back = line.find(" is the fastest: it applies from now on");
    if (back != std::string::npos) fastest = label_of(line, back);
    // The recheck's end: the schedule taken back after the rule's window.
    const std::size_t taken = line.find(" is taken back as it was in its fastest iteration");
    if (taken != std::string::npos) {
      const std::size_t who = line.rfind("%): ", taken) + 4;
      fastest = line.substr(who, taken - who);
    }
    if (fastest != "rule") rule_from_leads = false;
    const std::size_t by_model = line.find("memtool swap: chosen by prediction: ");
    if (by_model != std::string::npos) {
      ++choices;
      const std::size_t who = by_model + std::string("memtool swap: chosen by prediction: ").size();
      const std::string chosen = line.substr(who, line.find(", ", who) - who);
      // Kept as timed (its own figure): it applies now; checked: once its check confirms it.
      if (chosen == "the rule alone") fastest = "rule";
      if (chosen != "the rule alone" && line.find(", as timed (") != std::string::npos) fastest = chosen;
      continue;
    }
    const std::size_t confirmed = line.find(" ms an iteration, as its calibrated prediction ");
    const std::size_t refuting = line.find(" ms an iteration, refuting its calibrated prediction ");
    const std::size_t kept = line.find(" ms an iteration, the fastest so far (");
    if (confirmed == std::string::npos && refuting == std::string::npos && kept == std::string::npos &&
        line.find(" ms an iteration, not faster than (") == std::string::npos) {
      continue;
    }
    ++verdicts;
    if (refuting != std::string::npos) ++refuted;
    if (kept != std::string::npos) fastest = label_of(line, line.rfind(": ", kept));
    if (confirmed != std::string::npos) fastest = label_of(line, line.rfind(": ", confirmed));
  }
  CHECK(u(s, "swap_candidates_timed") == verdicts);
  CHECK(verdicts <= candidates);
  CHECK(choices <= 2);  // the model chooses once, and again once refuted
  CHECK(refuted <= 2);  // then it is timing in turn
  const bool chosen = err.find("memtool swap: chosen after ") != std::string::npos;
  CHECK(chosen == (u(s, "swap_iterations_selecting") > 0));
  if (complete) CHECK(chosen);
  if (chosen) {
    CHECK(s.at("swap_schedule") == fastest);
    // Left to the rule, it starts from the leads of its fastest timed iteration, watched.
    CHECK(rule_from_leads == (fastest == "rule"));
  }
}

// MEMTOOL_SWAP_DUMP: the problem the process planned from is in `dir`, said in its log, and
// `memtool simulate` reads it; ours' plan made again from it offline is the one the process made
// (the same code, the same input): the same swaps, construction and planner's predicted peak
// (the row's own peak is the executor's, simulated with the rule's leads learnt).
void check_problem(const std::string& dir, const std::string& err, const std::string& policy) {
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("problem.", 0) == 0) path = entry.path().string();
  }
  REQUIRE(!path.empty());
  CHECK_THAT(err, Catch::Contains("the problem is in " + path));
  const Outcome o = run({MEMTOOL_TOOL, "simulate", path, "--swap", policy, "--format", "json"}, {}, dir);
  INFO(o.err);
  REQUIRE(o.status == 0);
  const nlohmann::json report = nlohmann::json::parse(o.out);
  CHECK(report.at("as_executor") == true);
  if (policy != "ours") return;
  const std::regex planned("memtool swap: ours schedule: ([0-9]+) swaps \\(([^)]*)\\), predicted peak ([0-9]+) B");
  std::smatch m;
  REQUIRE(std::regex_search(err, m, planned));
  bool found = false;
  for (const nlohmann::json& row : report.at("results")) {
    if (row.at("strategy") != "ours" || row.at("mode") != "stick-to-limit") continue;
    found = true;
    CHECK(row.at("swaps").get<std::uint64_t>() == std::stoull(m[1].str()));
    CHECK(row.at("construction") == m[2].str());
    CHECK(row.at("planned_peak_bytes").get<std::uint64_t>() == std::stoull(m[3].str()));
  }
  CHECK(found);
}

void check_swap(const SwapCase& c) {
  const Model& m = c.model;
  // Named by everything that varies: test cases running side by side (ctest -j) never share one.
  const std::string dir =
      fresh_dir(std::string(m.name) + "_swap_" + c.mode + std::to_string(c.percent) + (c.async ? "async" : "") +
                (c.policy.empty() ? "" : "_" + c.policy) + (c.reserve != 0 ? "_device_budget" : ""));
  INFO("budget " << c.percent << "% " << c.mode << (c.async ? " --async" : "") << " " << c.policy);
  std::vector<std::string> steps{"--steps", std::to_string(c.steps)};
  if (c.async) steps.push_back("--async");
  const Replay plain = replay(dir + "/plain", m, steps, {});
  const std::uint64_t peak = u(plain.stats, "peak_bytes_in_use");
  const std::uint64_t device_bytes = peak * c.percent / 100;
  const std::string capacity = std::to_string(device_bytes);
  REQUIRE(device_bytes > c.reserve);
  const std::uint64_t budget = device_bytes - c.reserve;

  std::vector<std::string> argv{REPLAY_TRAIN, "--log", std::string(REPLAY_FIXTURES_DIR) + "/traces/" + m.name + ".log"};
  argv.insert(argv.end(), steps.begin(), steps.end());
  const Outcome starved = run(argv, {{"LD_LIBRARY_PATH", FAKECUDA_DIR}, {"FAKECUDA_MEMORY_BYTES", capacity}}, dir);
  CHECK(starved.status != 0);  // the plain run does not fit

  Env env{{"MEMTOOL_STRATEGY", "swap"},
          {"MEMTOOL_SWAP_MODE", c.mode},
          {"MEMTOOL_POOL_SYNC_PLANNING", "1"},
          {"FAKECUDA_MEMORY_BYTES", capacity}};
  if (c.reserve == 0) {
    env["MEMTOOL_BUDGET"] = capacity;
  } else {
    env["MEMTOOL_SWAP_RESERVE"] = std::to_string(c.reserve);  // and no MEMTOOL_BUDGET: the device's
  }
  if (!c.policy.empty()) env["MEMTOOL_SWAP_POLICY"] = c.policy;
  if (c.policy == "ours") env["MEMTOOL_LOG"] = "info";  // the trial's verdicts
  if (c.link_gbps > 0) env["FAKECUDA_LINK_GBPS"] = std::to_string(c.link_gbps);
  if (!c.policy.empty()) env["MEMTOOL_SWAP_DUMP"] = dir + "/swap/problem.%p";
  const Replay swapped = replay(dir + "/swap", m, steps, env);
  check_clean(swapped.outcome, c.steps);
  CHECK(swapped.outcome.out == plain.outcome.out);
  const nlohmann::json& s = swapped.summary;
  INFO(s.dump());
  CHECK(s.at("strategy") == "swap");
  CHECK(s.at("swap_mode") == c.mode);
  CHECK(u(s, "budget_bytes") == budget);  // with no MEMTOOL_BUDGET: fakecuda's free memory at start, less the reserve
  if (c.reserve != 0)
    CHECK_THAT(swapped.outcome.err, Catch::Contains("without MEMTOOL_BUDGET the budget is the device"));
  CHECK(u(swapped.stats, "peak_bytes_in_use") <= budget);
  CHECK(u(s, "bytes_swapped_out") > 0);
  CHECK(u(s, "swap_ins_ahead") + u(s, "swap_ins_scheduled") > 0);
  if (!c.policy.empty()) {
    // Planned from one observed iteration and applied: its copies out and in were issued.
    // (Ours' plan may be the rule alone, with no runner-up, or the model may predict no
    // candidate faster than the rule alone: then nothing applies.)
    const bool rule_alone =
        swapped.outcome.err.find("has no swaps: the rule alone\n") != std::string::npos ||
        (swapped.outcome.err.find("memtool swap: chosen by prediction: the rule alone") != std::string::npos &&
         u(s, "swap_candidates_timed") == 0);
    CHECK(s.at("swap_policy") == c.policy);
    CHECK(u(s, "swap_schedules") == (rule_alone ? 0 : 1));
    CHECK(u(s, "swap_schedule_drops") == 0);
    CHECK((u(s, "swap_outs_scheduled") > 0) != rule_alone);
    CHECK((u(s, "swap_ins_scheduled") > 0) != rule_alone);
    // Planned with the link its own copies were timed at, not a guess.
    CHECK(s.at("swap_link_source") == "measured");
    check_problem(dir + "/swap", swapped.outcome.err, c.policy);
    if (c.policy == "ours") {
      check_trial(swapped.outcome.err, s, c.steps >= kTrialSteps);
    } else {
      CHECK(s.at("swap_schedule") == c.policy + " schedule");  // as published: no trial
      CHECK(u(s, "swap_candidates_timed") == 0);
    }
    if (c.link_gbps > 0) {
      for (const char* direction : {"swap_link_to_host_bytes_per_s", "swap_link_to_device_bytes_per_s"}) {
        INFO(direction);
        const double gbps = static_cast<double>(u(s, direction)) / 1e9;
        // fakecuda's engines never copy faster than their link (a fitted latency can steepen the
        // slope a little); and its own memmoves, slower than this link on a busy CI machine too,
        // never halve it.
        CHECK(gbps <= c.link_gbps * 1.25);
        CHECK(gbps >= c.link_gbps * 0.5);
      }
    }
  }
  if (c.policy.empty()) CHECK(s.at("swap_schedule") == "rule");
  CHECK(u(swapped.stats, "bytes_in_use") == 0);
  const bool said_unattainable = swapped.outcome.err.find("cannot be met") != std::string::npos;
  CHECK(said_unattainable == !c.attainable);
  if (c.attainable) CHECK(u(s, "peak_device_bytes") <= budget);
  WARN(m.name << " swap (" << c.mode << ") at " << c.percent << "%" << (c.async ? " --async" : "") << ": plain peak "
              << peak << " B, budget " << budget << " B, fakecuda peak " << u(swapped.stats, "peak_bytes_in_use")
              << " B, memtool's " << u(s, "peak_device_bytes") << " B; swapped out " << u(s, "bytes_swapped_out")
              << " B, in " << u(s, "bytes_swapped_in") << " B (" << u(s, "swap_ins_ahead") << " ahead, "
              << u(s, "swap_ins_late") << " late, " << u(s, "swap_ins_on_demand") << " on demand, "
              << u(s, "swap_ins_failed") << " read from the host); waited " << u(s, "stall_ns") / 1000000 << " ms");
}

}  // namespace

const Model kAlexnet{"alexnet", 180};

TEST_CASE("replay: explicit swapping trains alexnet in 80%, 60% and 50% of its plain peak",
          "[integration][replay][swap]") {
  check_swap({80, kAlexnet, "explicit", true, false});
  check_swap({60, kAlexnet, "explicit", true, false});
  // Stream-ordered allocation: frees of swapped buffers wait for their stream, never the host.
  check_swap({80, kAlexnet, "explicit", true, true});
  check_swap({50, kAlexnet, "explicit", false, false});
}

// mobilenet_v2: 2,043 allocations a step, many of 1–2 MiB (VMM rounds them to 2 MiB) and
// thousands of small ones that stay device memory beside the swapped ones; lstm: Adam's state.
TEST_CASE("replay: explicit swapping trains mobilenet_v2 and lstm in 80% of their plain peak",
          "[integration][replay][swap_models]") {
  check_swap({80, Model{"mobilenet_v2", 2043}, "explicit", true, false});
  check_swap({80, Model{"lstm", 1903}, "explicit", true, false});
}

// The host limit reached: buffers that would pass it stay on the device, memtool says so once,
// and when neither the device nor the host has room the program gets CUDA_ERROR_OUT_OF_MEMORY,
// as from the driver — a clean error, never a crash or a wrong byte before it.
TEST_CASE("replay: explicit swapping past the host limit fails like the driver", "[integration][replay][swap]") {
  const std::string dir = fresh_dir("alexnet_swap_host_limit");
  const Replay plain = replay(dir + "/plain", kAlexnet, {"--steps", "2"}, {});
  const std::string capacity = std::to_string(u(plain.stats, "peak_bytes_in_use") * 60 / 100);
  std::vector<std::string> argv{REPLAY_TRAIN, "--log", std::string(REPLAY_FIXTURES_DIR) + "/traces/alexnet.log",
                                "--steps", "2"};
  const Outcome o = run(argv,
                        {{"LD_LIBRARY_PATH", FAKECUDA_DIR},
                         {"LD_PRELOAD", MEMTOOL_PRELOAD},
                         {"MEMTOOL_STRATEGY", "swap"},
                         {"MEMTOOL_SWAP_MODE", "explicit"},
                         {"MEMTOOL_BUDGET", capacity},
                         {"MEMTOOL_HOST_LIMIT", "32M"},
                         {"FAKECUDA_MEMORY_BYTES", capacity}},
                        dir);
  INFO(o.err);
  CHECK(o.status == 1);  // the replay's own exit on a failed call
  CHECK_THAT(o.err, Catch::Contains("the host limit of 33554432 B is reached"));
  CHECK_THAT(o.err, Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(o.err.find("CORRUPTED") == std::string::npos);
}

// The swapper's schedule in the process (MEMTOOL_SWAP_POLICY): learned from the replay's own
// iterations (GPU times from timing events), applied from then on; the rule stays the safety net.
TEST_CASE("replay: the swapper's schedules train lstm and alexnet in 80% of their plain peak",
          "[integration][replay][swap_schedule]") {
  // Long enough for ours' trial to time its schedule and every runner-up (three iterations each).
  check_swap({80, Model{"lstm", 1903}, "explicit", true, false, "ours", kTrialSteps, 0.5});
  check_swap({80, kAlexnet, "explicit", true, false, "paper-vote", 10});
  check_swap({80, kAlexnet, "explicit", true, false, "save-on-cpu", 10});
  check_swap({80, kAlexnet, "uvm", true, false, "ours", 10});
}

// Issue 34: MEMTOOL_STRATEGY=swap with no MEMTOOL_BUDGET on a device smaller than the program's
// live bytes (the plain run fails there, check_swap's starved run): the budget is the device less
// MEMTOOL_SWAP_RESERVE, and the program runs to its end with every word right.
TEST_CASE("replay: with no MEMTOOL_BUDGET, swapping trains alexnet on a device of 70% of its plain peak",
          "[integration][replay][swap][device_budget]") {
  for (const char* mode : {"explicit", "uvm"}) {
    SwapCase c{70, kAlexnet, mode, true, false};
    c.reserve = 4 << 20;
    check_swap(c);
  }
}

// Issue 34: the budget is a limit, memtool's own device memory (the small-buffer cache, what the
// mover holds) counted: on a device twice the plain peak, where passing the budget shows as a
// peak instead of failing, in both modes: alexnet over 20 steps (ours' trial and its schedules
// applied); mobilenet_v2 and resnet18 (many small buffers, so the small cache carves new 2 MiB
// segments under swapping) over 8. Before room was made for the segment a small allocation
// carves (not for its own bytes), explicit mode ran 1.0-4.6% over on those two.
TEST_CASE("replay: the device never holds more than the budget, in both modes", "[integration][replay][swap][limit]") {
  const Model mobilenet_v2{"mobilenet_v2", 0};
  const Model resnet18{"resnet18", 0};
  for (const auto& [model, steps] : {std::pair{kAlexnet, 20}, std::pair{mobilenet_v2, 8}, std::pair{resnet18, 8}}) {
    for (const char* mode : {"explicit", "uvm"}) {
      INFO(model.name << " " << mode);
      const std::string dir = fresh_dir(std::string(model.name) + "_limit_" + mode);
      const std::vector<std::string> args{"--steps", std::to_string(steps)};
      const Replay plain = replay(dir + "/plain", model, args, {});
      const std::uint64_t peak = u(plain.stats, "peak_bytes_in_use");
      const std::uint64_t budget = peak * 65 / 100;
      const Replay swapped = replay(dir + "/swap", model, args,
                                    {{"MEMTOOL_STRATEGY", "swap"},
                                     {"MEMTOOL_SWAP_MODE", mode},
                                     {"MEMTOOL_BUDGET", std::to_string(budget)},
                                     {"FAKECUDA_MEMORY_BYTES", std::to_string(2 * peak)}});
      check_clean(swapped.outcome, static_cast<std::size_t>(steps));
      CHECK(swapped.outcome.out == plain.outcome.out);
      CHECK(u(swapped.summary, "bytes_swapped_out") > 0);
      CHECK(u(swapped.stats, "peak_bytes_in_use") <= budget);  // everything on the device, memtool's own too
      CHECK(u(swapped.summary, "peak_device_bytes") <= budget);
      WARN(model.name << " at 65% " << mode << ": fakecuda peak / budget "
                      << static_cast<double>(u(swapped.stats, "peak_bytes_in_use")) / static_cast<double>(budget)
                      << ", memtool's count / budget "
                      << static_cast<double>(u(swapped.summary, "peak_device_bytes")) / static_cast<double>(budget));
    }
  }
}

// memtool never fails a call that succeeds without it: accum_cnn's buffers are all small, so the
// swap strategy's cache serves them from 2 MiB segments, more than its plain peak (1.7 MB). Its
// first buffers are stream 0's and the rest its training stream's; with no room for a second
// segment the cache failed cuMemAlloc where the plain run fits. On a device of just the plain
// peak, and of twice it (replay_budget_limit.sh's), in both modes: the same output, no failure.
TEST_CASE("replay: swapping never fails where the plain run fits, small buffers on a small device",
          "[integration][replay][swap][limit]") {
  const Model accum_cnn{"accum_cnn", 0};
  const std::vector<std::string> args{"--steps", "8"};
  const std::string dir = fresh_dir("accum_cnn_fits");
  const Replay plain = replay(dir + "/plain", accum_cnn, args, {});
  REQUIRE(plain.outcome.status == 0);
  const std::uint64_t peak = u(plain.stats, "peak_bytes_in_use");
  for (const std::uint64_t device : {peak, 2 * peak}) {
    for (const char* mode : {"explicit", "uvm"}) {
      INFO(mode << " on a device of " << device << " B, plain peak " << peak << " B");
      const Replay swapped = replay(dir + "/" + mode + std::to_string(device), accum_cnn, args,
                                    {{"MEMTOOL_STRATEGY", "swap"},
                                     {"MEMTOOL_SWAP_MODE", mode},
                                     {"MEMTOOL_BUDGET", std::to_string(peak * 65 / 100)},
                                     {"FAKECUDA_MEMORY_BYTES", std::to_string(device)}});
      check_clean(swapped.outcome, 8);
      CHECK(swapped.outcome.out == plain.outcome.out);
      CHECK(u(swapped.stats, "peak_bytes_in_use") <= device);
    }
  }
}

TEST_CASE("replay: UVM swapping trains alexnet in 80% and 60% of its plain peak", "[integration][replay][uvm]") {
  check_swap({80, kAlexnet, "uvm", true, false});
  check_swap({60, kAlexnet, "uvm", true, false});
}

#endif

// Issue 33: the replay with every operator's buffers (or only those it writes) reaching its
// kernel only through a pointer table in device memory, uploaded before each launch, as grouped
// GEMMs do. Before memtool read the uploads, explicit swapping at 65% faulted (a kernel read a
// buffer through the table while its address was being remapped) or corrupted 38-102k words.
// Under the default mode and explicit copies: every word right, the device within the budget
// (fakecuda's capacity twice the plain peak, so a budget passed shows instead of failing).
TEST_CASE("replay: kernels that reach alexnet's buffers only through uploaded pointer tables read what was written",
          "[integration][replay][swap_tables]") {
  for (const char* mode : {"", "explicit"})
    for (const char* table : {"all", "written"}) {
      const std::string name = std::string("alexnet_tables_") + (*mode != 0 ? mode : "default") + "_" + table;
      INFO(name);
      const std::string dir = fresh_dir(name);
      const std::vector<std::string> extra{"--steps", "2", "--table", table};
      const Replay plain = replay(dir + "/plain", kAlexnet, extra, {});
      const std::uint64_t peak = u(plain.stats, "peak_bytes_in_use");
      const std::uint64_t budget = peak * 65 / 100;
      Env env{{"MEMTOOL_STRATEGY", "swap"},
              {"MEMTOOL_BUDGET", std::to_string(budget)},
              {"FAKECUDA_MEMORY_BYTES", std::to_string(2 * peak)},
              {"FAKECUDA_LINK_GBPS", "2"}};
      if (*mode != 0) env["MEMTOOL_SWAP_MODE"] = mode;
      const Replay swapped = replay(dir + "/swap", kAlexnet, extra, env);
      check_clean(swapped.outcome, 2);
      CHECK(swapped.outcome.out == plain.outcome.out);
      const nlohmann::json& s = swapped.summary;
      CHECK(s.at("swap_mode") == (*mode != 0 ? mode : "uvm"));
      CHECK(u(s, "bytes_swapped_out") > 0);
      CHECK(u(swapped.stats, "peak_bytes_in_use") <= budget);
      CHECK(u(swapped.stats, "bytes_in_use") == 0);
    }
}
