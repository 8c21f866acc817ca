// Finds the repository paths a Markdown document names and says which do not exist, so that the
// docs stay true as files move (tests/unit/docs/test_doc_paths.cpp runs it over docs/*.md and
// every README.md).
//
// What counts as a named path: an inline code span (`...`, outside fenced blocks) made only of
// path characters with a '/' in it (no spaces, '=', ':' or '$'; not absolute, not a URL). It is
// checked when it looks like a repository path: its first component is an entry of the
// document's folder, of the repository root or (for include paths such as
// memtool/trace/event.hpp) of an include folder, or its last component is a source or doc file
// (.cpp, .hpp, .h, .cu, .def, .cmake, .sh, .py, .md). Anything else (K/M/G/T, 55GB/s, the
// layout of a results folder, another project's paths) is prose. A checked path exists when it
// names a file or folder under one of those bases; `*` and <placeholder> match within one
// component and {a,b} expands (each alternative must exist). A path inside a folder a
// .gitignore names (build output, results folders) is where output goes, and passes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace memtool::docs {

struct MissingPath {
  std::size_t line = 0;  // 1-based
  std::string path;      // as the document spells it
};

class DocPathChecker {
 public:
  // `root`: the repository; its include folders and .gitignore files are found once.
  explicit DocPathChecker(std::filesystem::path root);

  // The paths `doc` names that do not exist.
  [[nodiscard]] std::vector<MissingPath> check(const std::filesystem::path& doc) const;

  // docs/*.md and every README.md below the root (build output and hidden folders skipped).
  [[nodiscard]] std::vector<std::filesystem::path> documents() const;

 private:
  [[nodiscard]] bool named_by_repository(const std::string& path, const std::filesystem::path& doc_dir) const;
  [[nodiscard]] bool exists(const std::string& path, const std::filesystem::path& doc_dir) const;
  [[nodiscard]] bool ignored(const std::filesystem::path& relative) const;
  [[nodiscard]] bool skipped_folder(const std::filesystem::path& dir) const;

  std::filesystem::path root_;
  std::vector<std::filesystem::path> include_dirs_;
  // Folder patterns of the .gitignore files: (folder of the .gitignore, pattern, anchored).
  struct IgnoreRule {
    std::filesystem::path base;
    std::string pattern;
    bool anchored = false;
  };
  std::vector<IgnoreRule> ignore_rules_;
};

}  // namespace memtool::docs
