// DocPathChecker (see doc_paths.hpp): code spans → candidate paths → which bases they resolve in.
#include "doc_paths.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <string_view>

namespace memtool::docs {
namespace fs = std::filesystem;
namespace {

constexpr std::array<std::string_view, 10> kSourceExtensions{".cpp",   ".hpp", ".h",  ".cu", ".def",
                                                             ".cmake", ".sh",  ".py", ".md", ".in"};

bool path_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("_-./*{},<>+").find(c) != std::string_view::npos;
}

// A code span that could be a path: path characters only, a '/', relative.
bool looks_like_path(std::string_view span) {
  if (span.find('/') == std::string_view::npos || span == "/") return false;
  if (span.front() == '/' || span.find("//") != std::string_view::npos) return false;
  if (span.find("...") != std::string_view::npos) return false;
  return std::all_of(span.begin(), span.end(), path_character);
}

// "a.{hpp,cpp}" → "a.hpp", "a.cpp" (one brace group at a time, so nested ones work too).
std::vector<std::string> expand_braces(const std::string& path) {
  const std::size_t open = path.find('{');
  const std::size_t close = open == std::string::npos ? std::string::npos : path.find('}', open);
  if (close == std::string::npos) return {path};
  std::vector<std::string> out;
  const std::string head = path.substr(0, open);
  const std::string tail = path.substr(close + 1);
  std::string_view options(path.data() + open + 1, close - open - 1);
  while (true) {
    const std::size_t comma = options.find(',');
    for (std::string& expanded : expand_braces(head + std::string(options.substr(0, comma)) + tail)) {
      out.push_back(std::move(expanded));
    }
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return out;
}

// `*` and <placeholder> match any run of characters within one component.
bool component_matches(std::string_view pattern, std::string_view name) {
  std::string glob;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '<') {
      const std::size_t end = pattern.find('>', i);
      if (end != std::string_view::npos) {
        glob.push_back('*');
        i = end;
        continue;
      }
    }
    glob.push_back(pattern[i]);
  }
  // Greedy-with-backtracking match of `glob` against `name`.
  std::size_t g = 0;
  std::size_t n = 0;
  std::size_t star = std::string::npos;
  std::size_t resume = 0;
  while (n < name.size()) {
    if (g < glob.size() && glob[g] == '*') {
      star = g++;
      resume = n;
    } else if (g < glob.size() && glob[g] == name[n]) {
      ++g;
      ++n;
    } else if (star != std::string::npos) {
      g = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

bool is_pattern(std::string_view component) { return component.find_first_of("*<") != std::string_view::npos; }

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// Whether base/parts[from..] names something (patterns matched against the folder's entries).
bool resolves(const fs::path& base, const std::vector<std::string>& parts, std::size_t from) {
  std::error_code error;
  if (from == parts.size()) return fs::exists(base, error);
  if (!is_pattern(parts[from])) return resolves(base / parts[from], parts, from + 1);
  if (!fs::is_directory(base, error)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(base, error)) {
    if (component_matches(parts[from], entry.path().filename().string()) && resolves(entry.path(), parts, from + 1)) {
      return true;
    }
  }
  return false;
}

bool has_entry_matching(const fs::path& dir, const std::string& component) {
  if (component == "..") return true;  // resolved against the folder above
  std::error_code error;
  if (!is_pattern(component)) return fs::exists(dir / component, error);
  if (!fs::is_directory(dir, error)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (component_matches(component, entry.path().filename().string())) return true;
  }
  return false;
}

}  // namespace

DocPathChecker::DocPathChecker(fs::path root) : root_(std::move(root)) {
  // The .gitignore files first (they decide which folders the walk below skips), then the
  // include folders.
  std::vector<fs::path> pending{root_};
  std::vector<fs::path> folders;
  while (!pending.empty()) {
    const fs::path dir = pending.back();
    pending.pop_back();
    if (skipped_folder(dir)) continue;
    folders.push_back(dir);
    std::ifstream ignore(dir / ".gitignore");
    for (std::string line; std::getline(ignore, line);) {
      if (line.empty() || line.front() == '#' || line.front() == '!') continue;
      IgnoreRule rule{dir, line, false};
      if (!rule.pattern.empty() && rule.pattern.back() == '/') rule.pattern.pop_back();
      if (!rule.pattern.empty() && rule.pattern.front() == '/') {
        rule.pattern.erase(0, 1);
        rule.anchored = true;
      }
      if (!rule.pattern.empty()) ignore_rules_.push_back(rule);
    }
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      if (entry.is_directory(error)) pending.push_back(entry.path());
    }
  }
  for (const fs::path& dir : folders) {
    if (dir.filename() == "include" && !skipped_folder(dir)) include_dirs_.push_back(dir);
  }
}

bool DocPathChecker::ignored(const fs::path& relative) const {
  const fs::path absolute = root_ / relative;
  for (const IgnoreRule& rule : ignore_rules_) {
    const fs::path below = absolute.lexically_relative(rule.base);
    if (below.empty() || *below.begin() == "..") continue;
    std::size_t depth = 0;
    for (const fs::path& part : below) {
      if ((!rule.anchored || depth == 0) && component_matches(rule.pattern, part.string())) return true;
      ++depth;
    }
  }
  return false;
}

bool DocPathChecker::skipped_folder(const fs::path& dir) const {
  const std::string name = dir.filename().string();
  if (dir != root_ && !name.empty() && name.front() == '.') return true;
  return dir != root_ && ignored(dir.lexically_relative(root_));
}

std::vector<fs::path> DocPathChecker::documents() const {
  std::vector<fs::path> docs;
  std::vector<fs::path> pending{root_};
  while (!pending.empty()) {
    const fs::path dir = pending.back();
    pending.pop_back();
    if (skipped_folder(dir)) continue;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      if (entry.is_directory(error)) {
        pending.push_back(entry.path());
      } else if (entry.path().filename() == "README.md" ||
                 (dir == root_ / "docs" && entry.path().extension() == ".md")) {
        docs.push_back(entry.path());
      }
    }
  }
  std::sort(docs.begin(), docs.end());
  return docs;
}

bool DocPathChecker::named_by_repository(const std::string& path, const fs::path& doc_dir) const {
  const std::vector<std::string> parts = components(expand_braces(path).front());
  if (parts.empty()) return false;
  const std::string_view last = parts.back();
  for (const std::string_view extension : kSourceExtensions) {
    if (last.size() > extension.size() && last.ends_with(extension) && !is_pattern(last)) return true;
  }
  if (has_entry_matching(doc_dir, parts.front()) || has_entry_matching(root_, parts.front())) {
    return parts.front() != ".." || fs::weakly_canonical(doc_dir / path).string().starts_with(root_.string());
  }
  return std::any_of(include_dirs_.begin(), include_dirs_.end(),
                     [&](const fs::path& include) { return has_entry_matching(include, parts.front()); });
}

bool DocPathChecker::exists(const std::string& path, const fs::path& doc_dir) const {
  for (const std::string& alternative : expand_braces(path)) {
    const std::vector<std::string> parts = components(alternative);
    std::vector<fs::path> bases{doc_dir, root_};
    bases.insert(bases.end(), include_dirs_.begin(), include_dirs_.end());
    const bool found = std::any_of(bases.begin(), bases.end(), [&](const fs::path& base) {
      if (resolves(base, parts, 0)) return true;
      const fs::path relative = (base / alternative).lexically_normal().lexically_relative(root_);
      return !relative.empty() && *relative.begin() != ".." && ignored(relative);  // where output goes
    });
    if (!found) return false;
  }
  return true;
}

std::vector<MissingPath> DocPathChecker::check(const fs::path& doc) const {
  std::vector<MissingPath> missing;
  std::ifstream in(doc);
  const fs::path doc_dir = doc.parent_path();
  bool fenced = false;
  std::size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, 3, "```") == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    // Odd pieces between backticks are code spans.
    std::size_t open = line.find('`');
    while (open != std::string::npos) {
      const std::size_t close = line.find('`', open + 1);
      if (close == std::string::npos) break;
      std::string span = line.substr(open + 1, close - open - 1);
      open = line.find('`', close + 1);
      if (!looks_like_path(span)) continue;
      if (!named_by_repository(span, doc_dir)) continue;
      if (!exists(span, doc_dir)) missing.push_back({line_number, span});
    }
  }
  return missing;
}

}  // namespace memtool::docs
