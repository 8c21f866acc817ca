// `memtool help env`: every MEMTOOL_* variable libmemtool.so reads, printed from the very
// option table (interpose/include/memtool/interpose/options.def) it parses them with.
// `memtool help man DIR`: the man pages (detail/man_page.cpp), from the same CLI definitions as
// --help; the build runs it and `cmake --install` installs them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "command.hpp"
#include "detail/man_page.hpp"
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

// The pages of a freshly built command line (the one main() parses with is already parsed).
int write_man_pages(const std::string& directory) {
  CLI::App app;
  memtool::cli::BuiltApp built;
  memtool::cli::build_app(app, built);
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    fmt::print(stderr, "memtool: error: cannot create {}: {}\n", directory, error.message());
    return 1;
  }
  for (const auto& page : memtool::cli::render_man_pages(app, MEMTOOL_VERSION)) {
    const std::string path = (std::filesystem::path(directory) / page.file_name).string();
    std::ofstream out(path, std::ios::binary);
    out << page.text;
    if (!out.flush()) {
      fmt::print(stderr, "memtool: error: cannot write {}\n", path);
      return 1;
    }
  }
  return 0;
}

std::function<int()> setup_help(CLI::App& sub) {
  auto topic = std::make_shared<std::string>();
  auto directory = std::make_shared<std::string>();
  sub.add_option("topic", *topic,
                 "What to explain: env (the MEMTOOL_* environment variables), man (write the man pages)")
      ->required();
  sub.add_option("directory", *directory, "man: the folder to write memtool.1 and memtool-VERB.1 into");
  return [topic, directory] {
    if (*topic == "env") {
      print_environment_help();
      return 0;
    }
    if (*topic == "man") {
      if (directory->empty()) {
        fmt::print(stderr, "memtool: error: memtool help man DIR: the folder to write the pages into\n");
        return 2;
      }
      return write_man_pages(*directory);
    }
    fmt::print(stderr, "memtool: error: no help on '{}' (topics: env, man)\n", *topic);
    return 2;
  };
}

MEMTOOL_COMMAND("help", setup_help);

}  // namespace
