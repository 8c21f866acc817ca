// Text as the exports write it: well-formed UTF-8, JSON string literals, sizes for people.
// Private to trace/export.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtool::trace::detail {

// `text` if it is well-formed UTF-8, else a copy with every byte of a malformed sequence
// replaced by '?': both unpicklers reject malformed UTF-8, JSON and HTML want it well-formed.
[[nodiscard]] std::string utf8_clean(std::string_view text);

// "1.50 MiB" (binary units, three significant digits).
[[nodiscard]] std::string size_text(std::uint64_t bytes);

// `text` as a JSON string literal (quotes included), malformed UTF-8 replaced as by utf8_clean.
[[nodiscard]] std::string json_string(std::string_view text);

}  // namespace memtool::trace::detail
