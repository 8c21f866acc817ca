// Reading a whole input file into memory, with InputError on failure: the importers parse
// documents (pickle, JSON, CSV) that need random access anyway.
#pragma once

#include <string>

namespace memtool::trace::detail {

// The file's bytes; InputError(path, 0, why) when it cannot be opened or read.
[[nodiscard]] std::string read_file_bytes(const std::string& path);

// Up to `count` bytes from the start of the file (for sniffing its kind).
[[nodiscard]] std::string read_file_head(const std::string& path, std::size_t count);

}  // namespace memtool::trace::detail
