// The arguments of `memtool simulate` that CLI11 cannot check alone: the device's capacity and
// a list of resource names. Errors are std::invalid_argument with
// the one line the user sees (the verb exits 2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtool::cli {

// --capacity: a size ("8G", "512MiB", "1.5T"; memtool/trace/bytes.hpp); 0 is unlimited, as
// without the flag (nullopt).
[[nodiscard]] std::optional<std::uint64_t> parse_capacity(std::string_view text);

// Names as given (comma-separated lists already split); empty: every resource. Unknown names
// are refused with the list of valid ones; repeated ones are kept once.
[[nodiscard]] std::vector<std::string> resolve_resources(const std::vector<std::string>& names);

}  // namespace memtool::cli
