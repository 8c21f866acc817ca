// Reading MiniMalloc-style planner problems: CSV with the header `id,lower,upper,size`
// (optionally a fifth column `alignment`), one buffer per row, live over [lower, upper).
//
// Every value is a decimal integer without sign; lower < upper; size > 0; alignment, when
// present, a power of two; ids are unique. CRLF line ends and blank lines at the end are
// accepted. Anything else throws InputError with the file, the byte offset of the offending
// field (or row) and the line number in the message.
#pragma once

#include <string>
#include <string_view>

#include "memtool/trace/problem.hpp"

namespace memtool::trace {

// `text` is the whole file; `name` names it in errors and becomes Problem::name.
[[nodiscard]] Problem parse_problem_csv(std::string_view text, const std::string& name);
[[nodiscard]] Problem read_problem_csv(const std::string& path);

}  // namespace memtool::trace
