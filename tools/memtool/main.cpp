// memtool: the command-line front-end. Verbs register themselves (command.hpp); errors in
// input files are one line on stderr and exit code 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>

#include "command.hpp"
#include "memtool/trace/input_error.hpp"

namespace memtool::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

CommandRegistrar::CommandRegistrar(std::string name, std::string description, CommandSetup setup) {
  command_registry().push_back({std::move(name), std::move(description), std::move(setup)});
}

}  // namespace memtool::cli

int main(int argc, char** argv) {
  using memtool::cli::command_registry;
  CLI::App app{"memtool: record, analyse and shrink the GPU memory of repetitive CUDA programs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memtool " MEMTOOL_VERSION);

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& command : registry) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    runners.emplace_back(sub, command.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners) {
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
