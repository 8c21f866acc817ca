// MEMTOOL_* parsing and validation from the one option table.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "memtool/interpose/options.hpp"

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

TEST_CASE("defaults come from the table and parse", "[interpose][options]") {
  const Env env;
  const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
  CHECK(parsed.errors.empty());
  CHECK(parsed.warnings.empty());
  CHECK_FALSE(parsed.options.disable);
  CHECK(parsed.options.strategy == "record");
  CHECK(parsed.options.trace.empty());
  CHECK_FALSE(parsed.options.stacks);
  CHECK(parsed.options.stack_depth == 32);
  CHECK(parsed.options.log == LogLevel::warn);
  CHECK(parsed.options.iteration_kernel.empty());
  CHECK(parsed.options.trace_limit == (std::uint64_t{1} << 30));
  for (const OptionInfo& option : kOptionTable) {
    CHECK(option.name.rfind("MEMTOOL_", 0) == 0);
    CHECK_FALSE(option.description.empty());
  }
}

TEST_CASE("good values are taken", "[interpose][options]") {
  Env env;
  env.values = {{"MEMTOOL_TRACE", "/tmp/t.%p"},
                {"MEMTOOL_STACKS", "1"},
                {"MEMTOOL_LOG", "DEBUG"},
                {"MEMTOOL_STRATEGY", "off"},
                {"MEMTOOL_STACK_DEPTH", "8"},
                {"MEMTOOL_DISABLE", "yes"},
                {"MEMTOOL_ITERATION_KERNEL", "^adam_.*"},
                {"MEMTOOL_LOG_FILE", "/tmp/log"}};
  const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
  CHECK(parsed.errors.empty());
  CHECK(parsed.options.trace == "/tmp/t.%p");
  CHECK(parsed.options.stacks);
  CHECK(parsed.options.log == LogLevel::debug);
  CHECK(parsed.options.strategy == "off");
  CHECK(parsed.options.stack_depth == 8);
  CHECK(parsed.options.disable);
  CHECK(parsed.options.iteration_kernel == "^adam_.*");
  CHECK(parsed.options.log_file == "/tmp/log");
}

TEST_CASE("bad values are errors naming the variable", "[interpose][options]") {
  auto errors_for = [](const std::string& name, const std::string& value) {
    Env env;
    env.values[name] = value;
    return parse_options(env.lookup(), nullptr).errors;
  };
  auto one_error_mentioning = [&](const std::string& name, const std::string& value, const std::string& expected) {
    const auto errors = errors_for(name, value);
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0], Catch::Contains(name) && Catch::Contains(expected));
  };
  one_error_mentioning("MEMTOOL_LOG", "loud", "off|error|warn|info|debug");
  one_error_mentioning("MEMTOOL_STACKS", "maybe", "0 or 1");
  one_error_mentioning("MEMTOOL_STACK_DEPTH", "0", "1 to 256");
  one_error_mentioning("MEMTOOL_STACK_DEPTH", "12x", "1 to 256");
  one_error_mentioning("MEMTOOL_STACK_DEPTH", "99999999999", "1 to 256");
  one_error_mentioning("MEMTOOL_STRATEGY", "fast", "record|pool|swap|off");
  one_error_mentioning("MEMTOOL_ITERATION_KERNEL", "adam_(", "regular expression");
  // Planned strategies are refused clearly, not silently ignored.
  one_error_mentioning("MEMTOOL_STRATEGY", "spill", "record|pool|swap|off");
  one_error_mentioning("MEMTOOL_BUDGET", "-5%", "percentage");
  one_error_mentioning("MEMTOOL_BUDGET", "lots", "expected a size");
  one_error_mentioning("MEMTOOL_BUDGET", "0%", "above 0");
  one_error_mentioning("MEMTOOL_TRACE_LIMIT", "60%", "needs a total");
  one_error_mentioning("MEMTOOL_CUPTI_BUFFER_BYTES", "0", "at least one byte");
  one_error_mentioning("MEMTOOL_SWAP_MIN_BYTES", "1M/s", "unknown unit");
  one_error_mentioning("MEMTOOL_SWAP_MODE", "fast", "explicit|uvm");
}

TEST_CASE("pool is a strategy; its variables parse", "[interpose][options]") {
  Env env;
  env.values["MEMTOOL_STRATEGY"] = "POOL";
  env.values["MEMTOOL_SUMMARY"] = "run.%p.json";
  env.values["MEMTOOL_POOL_SYNC_PLANNING"] = "1";
  const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
  CHECK(parsed.errors.empty());
  CHECK(parsed.options.strategy == "pool");
  CHECK(parsed.options.summary == "run.%p.json");
  CHECK(parsed.options.pool_sync_planning);
  CHECK_FALSE(default_options().pool_sync_planning);
}

TEST_CASE("MEMTOOL_POOL_PLAN_WAIT: whole seconds from 0 (never wait) to 256, 4 by default", "[interpose][options]") {
  CHECK(default_options().pool_plan_wait == 4);
  auto parsed_with = [](const std::string& value) {
    Env env;
    env.values["MEMTOOL_POOL_PLAN_WAIT"] = value;
    return parse_options(env.lookup(), nullptr);
  };
  for (const auto& [text, seconds] : {std::pair<std::string, std::uint32_t>{"0", 0}, {"1", 1}, {"256", 256}}) {
    const ParsedOptions parsed = parsed_with(text);
    INFO("MEMTOOL_POOL_PLAN_WAIT=" << text);
    CHECK(parsed.errors.empty());
    CHECK(parsed.options.pool_plan_wait == seconds);
  }
  for (const std::string text : {"-1", "257", "0.5", "", "never"}) {
    const ParsedOptions parsed = parsed_with(text);
    INFO("MEMTOOL_POOL_PLAN_WAIT=" << text);
    REQUIRE(parsed.errors.size() == 1);
    CHECK_THAT(parsed.errors[0], Catch::Contains("MEMTOOL_POOL_PLAN_WAIT") && Catch::Contains("0 to 256"));
    CHECK(parsed.options.pool_plan_wait == 4);  // the default stays
  }
  // A count still starts at 1: the zero is this option's alone.
  CHECK_THAT(parse_options(
                 [](const char* name) -> const char* {
                   return std::string_view(name) == "MEMTOOL_PLAN_SECONDS" ? "0" : nullptr;
                 },
                 nullptr)
                 .errors.at(0),
             Catch::Contains("1 to 256"));
}

TEST_CASE("unknown MEMTOOL_ variables are warned about", "[interpose][options]") {
  const Env env;
  const char* environment[] = {"PATH=/bin", "MEMTOOL_TRACE=x", "MEMTOOL_TRCAE=y", "MEMTOOL_=z", nullptr};
  const ParsedOptions parsed = parse_options(env.lookup(), environment);
  CHECK(parsed.errors.empty());
  REQUIRE(parsed.warnings.size() == 2);
  CHECK_THAT(parsed.warnings[0], Catch::Contains("MEMTOOL_TRCAE"));
}

TEST_CASE("trace path placeholders", "[interpose][options]") {
  Env env;
  CHECK(expand_path_template("run.%p.trace", 42, env.lookup()) == "run.42.trace");
  CHECK(expand_path_template("rank%r", 42, env.lookup()) == "rank0");
  env.values["LOCAL_RANK"] = "3";
  CHECK(expand_path_template("rank%r", 42, env.lookup()) == "rank3");
  env.values["RANK"] = "7";
  CHECK(expand_path_template("%r-%p-%%-%x-%", 5, env.lookup()) == "7-5-%-%x-%");
}

// The grammar itself is tested in tests/unit/trace_core/test_bytes.cpp; here, that the options
// read sizes with it.
TEST_CASE("sizes: the one grammar (K/M/G/T powers of 1024, KB/MB/GB/TB of 1000, decimals), 0", "[interpose][options]") {
  const std::map<std::string, std::uint64_t> good{{"0", 0},
                                                  {"65536", 65536},
                                                  {"512K", 512ULL << 10},
                                                  {"512m", 512ULL << 20},
                                                  {"4G", 4ULL << 30},
                                                  {"2TiB", 2ULL << 40},
                                                  {"3MB", 3'000'000},
                                                  {"100b", 100},
                                                  {"1gib", 1ULL << 30},
                                                  {"1.5G", 3ULL << 29}};
  for (const auto& [text, bytes] : good) {
    INFO(text);
    Env env;
    env.values["MEMTOOL_TRACE_LIMIT"] = text;
    const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
    CHECK(parsed.errors.empty());
    CHECK(parsed.options.trace_limit == bytes);
  }
  for (const char* bad : {"", "12X", "-5", "60%", "G", "1 G", "99999999999999999999", "20000000T"}) {
    INFO(bad);
    Env env;
    env.values["MEMTOOL_TRACE_LIMIT"] = bad;
    const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
    REQUIRE(parsed.errors.size() == 1);
    CHECK(parsed.errors[0].rfind("MEMTOOL_TRACE_LIMIT=", 0) == 0);
    CHECK(parsed.options.trace_limit == (std::uint64_t{1} << 30));  // the default stays
  }
}

TEST_CASE("rates and buffer sizes: MEMTOOL_SWAP_LINK may end in /s, a buffer is at least a byte",
          "[interpose][options]") {
  Env env;
  env.values["MEMTOOL_SWAP_LINK"] = "55GB/s";
  env.values["MEMTOOL_CUPTI_BUFFER_BYTES"] = "0.5M";
  const ParsedOptions parsed = parse_options(env.lookup(), nullptr);
  CHECK(parsed.errors.empty());
  CHECK(parsed.options.swap_link == 55'000'000'000ULL);
  CHECK(parsed.options.cupti_buffer_bytes == 512ULL << 10);
  CHECK(default_options().swap_link == 0);  // 0: measured
}

TEST_CASE("MEMTOOL_BUDGET takes bytes or a percentage of the device", "[interpose][options]") {
  auto budget_of = [](const std::string& value) {
    Env env;
    env.values["MEMTOOL_BUDGET"] = value;
    const auto parsed = parse_options(env.lookup(), nullptr);
    REQUIRE(parsed.errors.empty());
    return parsed.options.budget;
  };
  CHECK(budget_of("512M").bytes == 512ull << 20);
  CHECK(budget_of("512M").percent == 0);
  CHECK(budget_of("60%").bytes == 0);
  CHECK(budget_of("60%").percent == Approx(60.0));
  CHECK(budget_of("100%").percent == Approx(100.0));
  CHECK(budget_of("1.5G").bytes == 3ull << 29);  // decimals, as every size
  CHECK(budget_of("12.5%").percent == Approx(12.5));
  CHECK(default_options().budget.bytes == 0);
  CHECK(default_options().budget.percent == 0);
  // The default that cannot corrupt (issue 33): any access, seen or not, reads the right bytes.
  CHECK(default_options().swap_mode == SwapMode::uvm);
  CHECK(default_options().swap_verify == false);
  CHECK(default_options().swap_table_bytes == 4 * 1024);
  Env env;
  env.values["MEMTOOL_SWAP_MODE"] = "explicit";
  env.values["MEMTOOL_SWAP_VERIFY"] = "1";
  const auto parsed = parse_options(env.lookup(), nullptr);
  REQUIRE(parsed.errors.empty());
  CHECK(parsed.options.swap_mode == SwapMode::explicit_copies);
  CHECK(parsed.options.swap_verify);
}
