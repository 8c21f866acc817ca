// The `memtool` front-end: each verb lives in its own cmd_<verb>.cpp and registers its options
// and what it runs with MEMTOOL_COMMAND; its summary, description and example are its row of
// verbs.def. main.cpp builds the CLI11 app from the two (build_app).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace memtool::cli {

// Adds the verb's options to `sub` and returns what runs when the verb is chosen
// (its exit code: 0 success, 1 failure, 2 bad input).
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct CommandInfo {
  std::string name;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, CommandSetup setup);
};

// The whole command line of `memtool`: every registered verb, its summary and footer from
// verbs.def; `runners` gets what runs for each verb. Throws std::logic_error when a registered
// verb has no row in verbs.def (caught by every test that runs memtool).
struct BuiltApp {
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
};
void build_app(CLI::App& app, BuiltApp& built);

}  // namespace memtool::cli

#define MEMTOOL_COMMAND_CONCAT2(a, b) a##b
#define MEMTOOL_COMMAND_CONCAT(a, b) MEMTOOL_COMMAND_CONCAT2(a, b)
// MEMTOOL_COMMAND("report", setup_function);  (its texts: the "report" row of verbs.def)
#define MEMTOOL_COMMAND(name, setup) \
  static const ::memtool::cli::CommandRegistrar MEMTOOL_COMMAND_CONCAT(memtool_command_, __LINE__) { name, setup }
