// `memtool version`: what this build is.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command.hpp"

namespace {

std::function<int()> setup_version(CLI::App& /*sub*/) {
  return [] {
    fmt::print("memtool {}\n", MEMTOOL_VERSION);
    return 0;
  };
}

MEMTOOL_COMMAND("version", setup_version);

}  // namespace
