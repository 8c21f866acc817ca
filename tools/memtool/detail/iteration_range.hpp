// "--iterations A:B" as `memtool report` and `memtool export` take it: A:B (inclusive), A:, :B
// or N, indices into the iterations found.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace memtool::cli {

struct IterationRange {
  std::optional<std::size_t> first;
  std::optional<std::size_t> last;  // inclusive
};

// Throws CLI::ValidationError naming the text when it is not a range. "" is the whole run.
[[nodiscard]] IterationRange parse_iteration_range(const std::string& text);
// For CLI11's ->check(): "" when `text` parses, else the reason.
[[nodiscard]] std::string iteration_range_problem(const std::string& text);

}  // namespace memtool::cli
