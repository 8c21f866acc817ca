// Log sink: "memtool[pid]: level: message\n" in one write(2).
#include "memtool/interpose/log.hpp"

#include <unistd.h>

#include <cerrno>

namespace memtool::interpose {

std::atomic<LogLevel> Log::level_{LogLevel::warn};
std::atomic<int> Log::fd_{-1};

void Log::emit(LogLevel level, std::string_view message) noexcept {
  char line[1200];
  const auto result = fmt::format_to_n(line, sizeof(line) - 1, "memtool[{}]: {}: {}", static_cast<long>(getpid()),
                                       to_string(level), message);
  std::size_t size = result.size < sizeof(line) - 1 ? result.size : sizeof(line) - 1;
  line[size++] = '\n';
  int fd = fd_.load(std::memory_order_relaxed);
  if (fd < 0) fd = STDERR_FILENO;
  const int saved_errno = errno;  // a hook must not change the program's errno
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, line + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  errno = saved_errno;
}

}  // namespace memtool::interpose
