// InputError: a file we were asked to read is truncated, corrupt or hostile.
// Every reader throws it with the file name and the byte offset where reading stopped,
// so the command line prints one clear line and exits with code 2. The message is kept to one
// printable line of bounded length, whatever bytes of the file it quotes.
//
// EventRejected: a visitor (TraceModel) refusing an event it cannot account for; the reader
// that delivered the event turns it into an InputError at the event's place in the file.
// Problems found after reading (a planning problem too large) say the event instead of a byte.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace memtool::trace {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::uint64_t offset, const std::string& message);
  // "FILE: at event N: message", for problems found in the events once they were read.
  struct Event {
    std::uint64_t index;
  };
  InputError(std::string file, Event event, const std::string& message);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] std::uint64_t offset() const { return offset_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::uint64_t offset_;
  std::string message_;
};

class EventRejected : public std::runtime_error {
 public:
  static constexpr std::uint64_t kUnknownEvent = ~std::uint64_t{0};
  // `event`: the event's index, when the one who rejects it knows it (after reading).
  explicit EventRejected(const std::string& message, std::uint64_t event = kUnknownEvent)
      : std::runtime_error(message), event_(event) {}
  [[nodiscard]] std::uint64_t event() const { return event_; }

 private:
  std::uint64_t event_;
};

}  // namespace memtool::trace
