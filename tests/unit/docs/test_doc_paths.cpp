// Docs that are true: every repository path that docs/*.md and each README.md name exists
// (the rules: doc_paths.hpp). A moved or deleted file fails here with the document and line
// that still name it.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <fstream>

#include "doc_paths.hpp"

namespace fs = std::filesystem;
using memtool::docs::DocPathChecker;

TEST_CASE("every path the docs and READMEs name exists", "[docs]") {
  const DocPathChecker checker(MEMTOOL_SOURCE_DIR);
  const auto docs = checker.documents();
  CHECK(docs.size() >= 10);
  std::size_t missing = 0;
  for (const fs::path& doc : docs) {
    for (const auto& m : checker.check(doc)) {
      const std::string name = doc.lexically_relative(MEMTOOL_SOURCE_DIR).string();
      UNSCOPED_INFO(fmt::format("{}:{}: `{}` does not exist", name, m.line, m.path));
      ++missing;
    }
  }
  CHECK(missing == 0);
}

// The checker itself, on a small tree: what it must report and what it must leave alone.
TEST_CASE("the doc path checker tells repository paths from prose", "[docs]") {
  const fs::path root = fs::temp_directory_path() / fmt::format("memtool-doc-paths-{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root / "docs");
  fs::create_directories(root / "lib/src");
  fs::create_directories(root / "lib/include/memtool/lib");
  fs::create_directories(root / "results/2024");
  std::ofstream(root / "lib/src/a.cpp") << "";
  std::ofstream(root / "lib/src/a.hpp") << "";
  std::ofstream(root / "lib/include/memtool/lib/api.hpp") << "";
  std::ofstream(root / ".gitignore") << "/results/\n";
  std::ofstream(root / "docs/guide.md")
      << "Present: `lib/src/a.cpp`, `lib/src/a.{hpp,cpp}`, `lib/src/*.cpp`, `lib/src/<name>.hpp`, `lib/`,\n"
         "`memtool/lib/api.hpp`, `../lib/src/a.cpp`, `results/<date>/`.\n"
         "Prose: `K/M/G/T`, `55GB/s`, `pool/peak`, `other/project/dir`, `MEMTOOL_X=a/b`, `/usr/include`.\n"
         "```\n"
         "lib/src/fenced.cpp `lib/src/fenced.cpp`\n"
         "```\n"
         "Missing: `lib/src/gone.cpp`, `lib/src/a.{hpp,cu}`, `lib/old/`, `memtool/lib/gone.hpp`,\n"
         "`elsewhere/moved.cpp`, `lib/src/*.py`.\n";
  std::ofstream(root / "lib/README.md") << "Relative to its folder: `src/a.cpp`; missing: `src/b.cpp`.\n";

  const DocPathChecker checker(root);
  const auto docs = checker.documents();
  REQUIRE(docs.size() == 2);
  std::vector<std::string> reported;
  for (const auto& m : checker.check(root / "docs/guide.md")) reported.push_back(fmt::format("{}:{}", m.line, m.path));
  CHECK(reported == std::vector<std::string>{"7:lib/src/gone.cpp", "7:lib/src/a.{hpp,cu}", "7:lib/old/",
                                             "7:memtool/lib/gone.hpp", "8:elsewhere/moved.cpp", "8:lib/src/*.py"});
  const auto in_lib = checker.check(root / "lib/README.md");
  REQUIRE(in_lib.size() == 1);
  CHECK(in_lib[0].path == "src/b.cpp");
  fs::remove_all(root);
}
