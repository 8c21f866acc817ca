// find_rank_files and friends (rank_files.hpp).
#include "detail/rank_files.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>

#include "memtool/interpose/options.hpp"
#include "memtool/interpose/rank.hpp"

namespace memtool::cli {
namespace {

namespace fs = std::filesystem;

const char* environment(const char* name) { return std::getenv(name); }

// The file-name part of a template as a regular expression; the rank is its first group.
std::optional<std::regex> name_pattern(std::string_view name) {
  std::string pattern;
  bool has_rank = false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '%' && i + 1 < name.size()) {
      const char next = name[++i];
      if (next == 'r' && !has_rank) {
        pattern += "([0-9]+)";
        has_rank = true;
        continue;
      }
      if (next == 'r' || next == 'p') {
        pattern += "[0-9]+";  // a second %r is the same number; matched loosely, checked below
        continue;
      }
      if (next != '%') pattern += "%";
      pattern += next == '%' ? "%" : std::string(1, next);
      continue;
    }
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  if (!has_rank) return std::nullopt;
  return std::regex(pattern, std::regex::ECMAScript);
}

}  // namespace

bool has_rank_placeholder(std::string_view path) {
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    if (path[i] != '%') continue;
    if (path[i + 1] == 'r') return true;
    ++i;
  }
  return false;
}

std::vector<RankFile> find_rank_files(const std::string& path_template, std::optional<fs::file_time_type> since) {
  const fs::path full(path_template);
  const auto pattern = name_pattern(full.filename().string());
  if (!pattern) return {};
  const fs::path dir = full.has_parent_path() ? full.parent_path() : fs::path(".");
  std::map<std::uint32_t, std::pair<fs::file_time_type, std::string>> newest;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::error_code status_error;
    if (!it->is_regular_file(status_error)) continue;
    const std::string name = it->path().filename().string();
    std::smatch match;
    if (!std::regex_match(name, match, *pattern)) continue;
    unsigned long rank = 0;
    try {
      rank = std::stoul(match[1].str());
    } catch (const std::exception&) {
      continue;
    }
    const fs::file_time_type written = it->last_write_time(status_error);
    if (status_error || (since && written < *since)) continue;
    const std::string path = full.has_parent_path() ? (dir / name).string() : name;
    auto [slot, inserted] = newest.try_emplace(static_cast<std::uint32_t>(rank), written, path);
    if (!inserted && written > slot->second.first) slot->second = {written, path};
  }
  std::vector<RankFile> files;
  files.reserve(newest.size());
  for (const auto& [rank, entry] : newest) files.push_back({rank, entry.second});
  return files;
}

std::vector<RankFile> launched_rank_files(const std::string& path_template, fs::file_time_type start) {
  if (path_template.empty() || interpose::rank_from_environment(environment)) return {};
  return find_rank_files(interpose::rank_path_template(path_template), start);
}

std::string path_for_child(const std::string& path_template, long pid) {
  return interpose::expand_path_template(interpose::path_template_for_process(path_template, environment), pid,
                                         environment);
}

}  // namespace memtool::cli
