// The man pages of memtool — memtool(1) and memtool-VERB(1) for every verb — rendered as roff
// from the very CLI11 definitions `--help` prints (options, their types, defaults and
// descriptions), the verb table (verbs.def) and the MEMTOOL_* option table (options.def).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace memtool::cli {

struct ManPage {
  std::string file_name;  // memtool.1, memtool-report.1, ...
  std::string text;       // roff (man macros)
};

// One page for the program and one per subcommand of `app` (built with build_app).
[[nodiscard]] std::vector<ManPage> render_man_pages(const CLI::App& app, std::string_view version);

// `text` broken into lines of at most `width` characters at spaces (a word longer than the
// width keeps its own line), each line after the first starting with `indent`.
[[nodiscard]] std::string wrap_paragraph(std::string_view text, std::size_t width, std::string_view indent = "");

}  // namespace memtool::cli
