#include "memtool/trace/input_error.hpp"

#include <fmt/format.h>

namespace memtool::trace {

InputError::InputError(std::string file, std::uint64_t offset, const std::string& message)
    : std::runtime_error(fmt::format("{}: at byte {}: {}", file, offset, message)),
      file_(std::move(file)),
      offset_(offset),
      message_(message) {}

}  // namespace memtool::trace
