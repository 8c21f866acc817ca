// Strict UTF-8 validation for text taken from untrusted files (pickle strings, GLOBAL names):
// whatever we hand on must be printable and exportable to JSON later.
#pragma once

#include <string_view>

namespace memtool::trace::detail {

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view text);

}  // namespace memtool::trace::detail
