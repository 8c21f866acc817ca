// memtool: the command-line front-end. Verbs register themselves (command.hpp), their texts are
// verbs.def; errors in input files are one line on stderr and exit code 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>

#include "command.hpp"
#include "detail/man_page.hpp"
#include "memtool/trace/input_error.hpp"
#include "verbs.hpp"

namespace memtool::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

CommandRegistrar::CommandRegistrar(std::string name, CommandSetup setup) {
  command_registry().push_back({std::move(name), std::move(setup)});
}

namespace {
constexpr std::size_t kHelpWidth = 100;  // columns of a verb's description in --help
}  // namespace

void build_app(CLI::App& app, BuiltApp& built) {
  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& command : registry) {
    const VerbInfo* verb = find_verb(command.name);
    if (verb == nullptr) throw std::logic_error("verb '" + command.name + "' has no row in tools/memtool/verbs.def");
    CLI::App* sub = app.add_subcommand(command.name, std::string(verb->summary));
    sub->footer(fmt::format("{}\n\nExample: {}", wrap_paragraph(verb->description, kHelpWidth), verb->example));
    built.runners.emplace_back(sub, command.setup(*sub));
  }
}

}  // namespace memtool::cli

namespace {
constexpr int kUsageErrorStatus = 2;

int run_memtool(int argc, char** argv);
}  // namespace

namespace {

int run_memtool(int argc, char** argv) {
  CLI::App app{std::string(memtool::cli::kProgramSummary)};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memtool " MEMTOOL_VERSION);

  memtool::cli::BuiltApp built;
  memtool::cli::build_app(app, built);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as bad input does (CLI11's own
    // codes, 105 to 114, say nothing a script can rely on).
    return app.exit(e) == 0 ? 0 : kUsageErrorStatus;
  }
  try {
    for (auto& [sub, run] : built.runners) {
      if (sub->parsed()) return run();
    }
  } catch (const memtool::trace::InputError& e) {
    fmt::print(stderr, "memtool: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "memtool: error: {}\n", e.what());
    return 1;
  }
  return 1;
}

}  // namespace

// Nothing escapes: a failure while the command line is built is reported like any other.
int main(int argc, char** argv) {
  try {
    return run_memtool(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memtool: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "memtool: error: an unknown failure\n");
  }
  return 1;
}
