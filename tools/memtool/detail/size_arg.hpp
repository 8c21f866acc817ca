// Size arguments of the memtool command (--capacity, --budget, --link, --alignment) in the one
// grammar every size of memtool is read with (memtool/trace/bytes.hpp).
#pragma once

#include <string_view>

#include "memtool/trace/bytes.hpp"

namespace memtool::cli {

// The size `text` says. Throws std::invalid_argument with the line the user sees,
// "<name> '<text>': <what was expected>" (the verbs print it and exit 2).
[[nodiscard]] trace::ByteSize parse_size_arg(std::string_view name, std::string_view text,
                                             const trace::ByteGrammar& grammar = {});

}  // namespace memtool::cli
