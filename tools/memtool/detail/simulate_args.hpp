// The arguments of `memtool simulate` that CLI11 cannot check alone: a byte size with an
// optional binary suffix, and a list of resource names. Errors are std::invalid_argument with
// the one line the user sees (the verb exits 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::cli {

// "8G", "512MiB", "1000000": digits, then optionally K, M, G or T (powers of 1024, with or
// without "B" / "iB"). At least one byte, at most 2^62.
[[nodiscard]] std::uint64_t parse_capacity(std::string_view text);

// Names as given (comma-separated lists already split); empty: every resource. Unknown names
// are refused with the list of valid ones; repeated ones are kept once.
[[nodiscard]] std::vector<std::string> resolve_resources(const std::vector<std::string>& names);

}  // namespace memtool::cli
