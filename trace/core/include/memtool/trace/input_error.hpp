// InputError: a file we were asked to read is truncated, corrupt or hostile.
// Every reader throws it with the file name and the byte offset where reading stopped,
// so the command line prints one clear line and exits with code 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace memtool::trace {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::uint64_t offset, const std::string& message);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] std::uint64_t offset() const { return offset_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::uint64_t offset_;
  std::string message_;
};

}  // namespace memtool::trace
