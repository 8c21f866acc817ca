// parse_iteration_range (see iteration_range.hpp).
#include "detail/iteration_range.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace memtool::cli {

IterationRange parse_iteration_range(const std::string& text) {
  IterationRange range;
  if (text.empty()) return range;
  auto number = [&](const std::string& part) -> std::size_t {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || part.empty() || part[0] == '-')
      throw CLI::ValidationError(fmt::format("'{}' is not an iteration range (A:B, A:, :B or N)", text));
    return static_cast<std::size_t>(value);
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    range.first = range.last = number(text);
    return range;
  }
  const std::string a = text.substr(0, colon);
  const std::string b = text.substr(colon + 1);
  if (!a.empty()) range.first = number(a);
  if (!b.empty()) range.last = number(b);
  if (range.first && range.last && *range.last < *range.first)
    throw CLI::ValidationError(fmt::format("'{}': the range ends before it starts", text));
  return range;
}

std::string iteration_range_problem(const std::string& text) {
  try {
    (void)parse_iteration_range(text);
  } catch (const CLI::ValidationError& e) {
    return e.what();
  }
  return {};
}

}  // namespace memtool::cli
