// Text as the exports write it: well-formed UTF-8, JSON string literals, and sizes for people
// (memtool/trace/bytes.hpp's human_bytes, included here for every export). Private to
// trace/export.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memtool/trace/bytes.hpp"

namespace memtool::trace::detail {

// `text` if it is well-formed UTF-8, else a copy with every byte of a malformed sequence
// replaced by '?': both unpicklers reject malformed UTF-8, JSON and HTML want it well-formed.
[[nodiscard]] std::string utf8_clean(std::string_view text);

// `text` as a JSON string literal (quotes included), malformed UTF-8 replaced as by utf8_clean.
[[nodiscard]] std::string json_string(std::string_view text);

}  // namespace memtool::trace::detail
