// memtool's own messages: one line per message, written with a single write(2) so lines of
// concurrent threads never interleave, formatted into a stack buffer (no allocation, usable
// inside hooks). Goes to stderr or MEMTOOL_LOG_FILE, filtered by MEMTOOL_LOG.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <string_view>

#include "memtool/interpose/options.hpp"

namespace memtool::interpose {

class Log {
 public:
  // The longest message (a line is this plus its "memtool[pid]: level: " prefix); a longer one
  // is cut and ends in kCutMark. Long enough for a refused value and the reason after it.
  static constexpr std::size_t kMessageBytes = 4096;
  static constexpr std::string_view kCutMark = " [cut]";

  static void set_level(LogLevel level) { level_.store(level, std::memory_order_relaxed); }
  static LogLevel level() { return level_.load(std::memory_order_relaxed); }
  // Sends messages to `fd` (not owned; -1 means stderr).
  static void set_fd(int fd) { fd_.store(fd, std::memory_order_relaxed); }
  // Opens MEMTOOL_LOG_FILE for appending without ever blocking the program (a FIFO nobody reads
  // would): only a regular file is accepted. -1, with *error saying why, otherwise.
  static int open_file(const std::string& path, std::string* error) noexcept;
  static bool enabled(LogLevel level) { return level != LogLevel::off && level <= Log::level(); }

  template <class... Args>
  static void write(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!enabled(level)) return;
    char line[kMessageBytes];
    std::size_t size = 0;
    try {  // formatting into a fixed buffer does not allocate; a hook still must never throw
      size = fmt::format_to_n(line, sizeof(line), format, std::forward<Args>(args)...).size;
    } catch (...) {
      emit(level, "a log message could not be formatted");
      return;
    }
    if (size <= sizeof(line)) {
      emit(level, std::string_view(line, size));
    } else {  // cut, and said to be
      kCutMark.copy(line + sizeof(line) - kCutMark.size(), kCutMark.size());
      emit(level, std::string_view(line, sizeof(line)));
    }
  }

 private:
  static void emit(LogLevel level, std::string_view message) noexcept;
  static std::atomic<LogLevel> level_;
  static std::atomic<int> fd_;
};

}  // namespace memtool::interpose

// MEMTOOL_LOG_ONCE(level, ...): at most one message from this line per process, for failures
// that would otherwise repeat on every call.
#define MEMTOOL_LOG_ONCE(level, ...)                                       \
  do {                                                                     \
    static std::atomic<bool> memtool_logged_once_{false};                  \
    if (!memtool_logged_once_.exchange(true, std::memory_order_relaxed)) { \
      ::memtool::interpose::Log::write(level, __VA_ARGS__);                \
    }                                                                      \
  } while (false)
