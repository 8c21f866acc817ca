// InputError's one-line message (see input_error.hpp).
#include "memtool/trace/input_error.hpp"

#include <fmt/format.h>

namespace memtool::trace {
namespace {

// Messages quote parts of hostile files: keep them to one printable line of bounded length
// (control bytes escaped, the rest cut with a note of how much there was).
std::string one_line(const std::string& message) {
  constexpr std::size_t kMaxBytes = 400;
  std::string out;
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (out.size() >= kMaxBytes) {
      out += fmt::format("... ({} more bytes)", message.size() - i);
      break;
    }
    const auto c = static_cast<unsigned char>(message[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

InputError::InputError(std::string file, std::uint64_t offset, const std::string& message)
    : std::runtime_error(fmt::format("{}: at byte {}: {}", one_line(file), offset, one_line(message))),
      file_(std::move(file)),
      offset_(offset),
      message_(one_line(message)) {}

InputError::InputError(std::string file, Event event, const std::string& message)
    : std::runtime_error(fmt::format("{}: at event {}: {}", one_line(file), event.index, one_line(message))),
      file_(std::move(file)),
      offset_(0),
      message_(one_line(message)) {}

}  // namespace memtool::trace
