// The `memtool` front-end: each verb lives in its own cmd_<verb>.cpp and registers itself
// with MEMTOOL_COMMAND; main.cpp builds the CLI11 app from the registry.
#pragma once

#include <functional>
#include <string>
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
  std::string description;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string description, CommandSetup setup);
};

}  // namespace memtool::cli

#define MEMTOOL_COMMAND_CONCAT2(a, b) a##b
#define MEMTOOL_COMMAND_CONCAT(a, b) MEMTOOL_COMMAND_CONCAT2(a, b)
// MEMTOOL_COMMAND("report", "Summarise a trace", setup_function);
#define MEMTOOL_COMMAND(name, description, setup)                                       \
  static const ::memtool::cli::CommandRegistrar MEMTOOL_COMMAND_CONCAT(memtool_command_, \
                                                                       __LINE__){name, description, setup}
