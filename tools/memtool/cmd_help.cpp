// `memtool help env`: every MEMTOOL_* variable libmemtool.so reads, printed from the very
// option table (interpose/include/memtool/interpose/options.def) it parses them with.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>

#include "command.hpp"
#include "memtool/interpose/options_table.hpp"

namespace {

void print_environment_help() {
  using memtool::interpose::kOptionTable;
  fmt::print(
      "Environment variables of libmemtool.so (a bad value is reported on stderr and memtool then\n"
      "stays out of the way: every call passes straight to the driver).\n\n");
  for (const auto& option : kOptionTable) {
    const std::string syntax = fmt::format("{}={}", option.name, memtool::interpose::value_syntax(option.type));
    const std::string default_text =
        option.default_value.empty() ? std::string("unset") : fmt::format("default {}", option.default_value);
    fmt::print("  {}  ({})\n      {}\n", syntax, default_text, option.description);
  }
  fmt::print(
      "\nSIZE: a number, whole or decimal, then at once an optional unit: K, M, G, T (or KiB, MiB, GiB,\n"
      "TiB) are powers of 1024, KB, MB, GB, TB powers of 1000, B bytes; any case (1.5G, 512MiB, 55GB).\n");
}

std::function<int()> setup_help(CLI::App& sub) {
  auto topic = std::make_shared<std::string>();
  sub.add_option("topic", *topic, "What to explain: env (the MEMTOOL_* environment variables)")->required();
  return [topic] {
    if (*topic == "env") {
      print_environment_help();
      return 0;
    }
    fmt::print(stderr, "memtool: error: no help on '{}' (topics: env)\n", *topic);
    return 2;
  };
}

MEMTOOL_COMMAND("help", "Explain a topic: `memtool help env` lists the MEMTOOL_* variables", setup_help);

}  // namespace
